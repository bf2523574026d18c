#include "model/weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "quant/quant.h"

namespace cohort::model {
namespace {

class Binder {
 public:
  Binder(const gguf::GgufFile& file, const HParams& hp) : file_(file), hp_(hp) {}

  const gguf::TensorInfo& find(const std::string& name, std::vector<int64_t> shape) const {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) fail("{}: tensor '{}' is missing", file_.name(), name);
    if (t->shape != shape) {
      fail("{}: tensor '{}' has shape [{}], expected [{}]", file_.name(), name,
           fmt::join(t->shape, ", "), fmt::join(shape, ", "));
    }
    if (!quant::is_supported(t->type)) {
      fail("{}: tensor '{}' has type {}, which cohort cannot compute on (supported: f32 f16 bf16 "
           "q8_0 q4_0 q4_1 q4_k q5_k q6_k)", file_.name(), name, gguf::type_name(t->type));
    }
    return *t;
  }

  WeightView matrix(const std::string& name, int64_t n_in, int64_t n_out) const {
    const gguf::TensorInfo& t = find(name, {n_in, n_out});
    return WeightView{t.type, file_.tensor_data(t).data(), n_in, n_out,
                      gguf::row_bytes(t.type, n_in)};
  }

  F32Vector vector(const std::string& name, int64_t n) const {
    const gguf::TensorInfo& t = find(name, {n});
    F32Vector v(static_cast<size_t>(n));
    quant::dequantize(t.type, file_.tensor_data(t).data(), v.data(), n);
    return v;
  }

  std::string layer(int64_t i, const char* what) const { return fmt::format("blk.{}.{}", i, what); }

  AttentionWeights attention(int64_t i) const {
    const int64_t q_dim = hp_.n_head * hp_.head_dim, kv_dim = hp_.n_head_kv * hp_.head_dim;
    return {vector(layer(i, "attn_norm.weight"), hp_.n_embd),
            matrix(layer(i, "attn_q.weight"), hp_.n_embd, q_dim),
            matrix(layer(i, "attn_k.weight"), hp_.n_embd, kv_dim),
            matrix(layer(i, "attn_v.weight"), hp_.n_embd, kv_dim),
            matrix(layer(i, "attn_output.weight"), q_dim, hp_.n_embd)};
  }

  FfnWeights ffn(int64_t i) const {
    return {vector(layer(i, "ffn_norm.weight"), hp_.n_embd),
            matrix(layer(i, "ffn_gate.weight"), hp_.n_embd, hp_.n_ff),
            matrix(layer(i, "ffn_up.weight"), hp_.n_embd, hp_.n_ff),
            matrix(layer(i, "ffn_down.weight"), hp_.n_ff, hp_.n_embd)};
  }

  HeadWeights head() const {
    HeadWeights h;
    h.embedding = matrix("token_embd.weight", hp_.n_embd, hp_.n_vocab);
    h.output_norm = vector("output_norm.weight", hp_.n_embd);
    h.output = hp_.tied_embeddings ? h.embedding : matrix("output.weight", hp_.n_embd, hp_.n_vocab);
    if (file_.find_tensor("rope_freqs.weight")) h.rope_freqs = vector("rope_freqs.weight", hp_.n_rot / 2);
    return h;
  }

  const HParams& hp() const { return hp_; }

 private:
  const gguf::GgufFile& file_;
  const HParams& hp_;
};

template <typename Layer, typename MakeLayer>
Weights<Layer> bind(const gguf::GgufFile& file, const HParams& hp, MakeLayer make_layer) {
  Binder b(file, hp);
  Weights<Layer> w;
  w.head = b.head();
  w.layers.reserve(static_cast<size_t>(hp.n_layer));
  for (int64_t i = 0; i < hp.n_layer; ++i) w.layers.push_back(make_layer(b, i));
  return w;
}

}  // namespace

Weights<LlamaLayer> bind_llama(const gguf::GgufFile& file, const HParams& hp) {
  return bind<LlamaLayer>(file, hp, [](const Binder& b, int64_t i) {
    return LlamaLayer{b.attention(i), b.ffn(i)};
  });
}

Weights<Qwen2Layer> bind_qwen2(const gguf::GgufFile& file, const HParams& hp) {
  return bind<Qwen2Layer>(file, hp, [](const Binder& b, int64_t i) {
    const int64_t q_dim = b.hp().n_head * b.hp().head_dim;
    const int64_t kv_dim = b.hp().n_head_kv * b.hp().head_dim;
    return Qwen2Layer{b.attention(i), b.vector(b.layer(i, "attn_q.bias"), q_dim),
                      b.vector(b.layer(i, "attn_k.bias"), kv_dim),
                      b.vector(b.layer(i, "attn_v.bias"), kv_dim), b.ffn(i)};
  });
}

Weights<Qwen3Layer> bind_qwen3(const gguf::GgufFile& file, const HParams& hp) {
  return bind<Qwen3Layer>(file, hp, [](const Binder& b, int64_t i) {
    return Qwen3Layer{b.attention(i), b.vector(b.layer(i, "attn_q_norm.weight"), b.hp().head_dim),
                      b.vector(b.layer(i, "attn_k_norm.weight"), b.hp().head_dim), b.ffn(i)};
  });
}

}  // namespace cohort::model
