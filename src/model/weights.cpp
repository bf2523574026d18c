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

  // A matrix [n_out, n_in] (GGUF shape [n_in, n_out]).
  WeightView matrix(const TensorSpec& spec) const {
    const gguf::TensorInfo& t = find(spec.name, spec.shape);
    const int64_t n_in = spec.shape[0], n_out = spec.shape[1];
    return WeightView{file_.tensor_data(t).data(), t.type, backend::Device::cpu, n_out, n_in,
                      gguf::row_bytes(t.type, n_in)};
  }

  F32Vector vector(const TensorSpec& spec) const {
    const gguf::TensorInfo& t = find(spec.name, spec.shape);
    F32Vector v(static_cast<size_t>(spec.shape[0]));
    quant::dequantize(t.type, file_.tensor_data(t).data(), v.data(), spec.shape[0]);
    return v;
  }

  WeightView matrix(int64_t i, LayerTensor which) const { return matrix(layer_tensor(hp_, i, which)); }
  F32Vector vector(int64_t i, LayerTensor which) const { return vector(layer_tensor(hp_, i, which)); }

  AttentionWeights attention(int64_t i) const {
    using L = LayerTensor;
    return {vector(i, L::attn_norm), matrix(i, L::attn_q), matrix(i, L::attn_k),
            matrix(i, L::attn_v), matrix(i, L::attn_output)};
  }

  FfnWeights ffn(int64_t i) const {
    using L = LayerTensor;
    return {vector(i, L::ffn_norm), matrix(i, L::ffn_gate), matrix(i, L::ffn_up),
            matrix(i, L::ffn_down)};
  }

  HeadWeights head() const {
    HeadWeights h;
    h.embedding = matrix(head_tensor(hp_, HeadTensor::token_embd));
    h.output_norm = vector(head_tensor(hp_, HeadTensor::output_norm));
    h.output = hp_.tied_embeddings ? h.embedding : matrix(head_tensor(hp_, HeadTensor::output));
    const TensorSpec freqs = head_tensor(hp_, HeadTensor::rope_freqs);
    if (file_.find_tensor(freqs.name)) h.rope_freqs = vector(freqs);
    return h;
  }

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
    using L = LayerTensor;
    return Qwen2Layer{b.attention(i), b.vector(i, L::attn_q_bias), b.vector(i, L::attn_k_bias),
                      b.vector(i, L::attn_v_bias), b.ffn(i)};
  });
}

Weights<Qwen3Layer> bind_qwen3(const gguf::GgufFile& file, const HParams& hp) {
  return bind<Qwen3Layer>(file, hp, [](const Binder& b, int64_t i) {
    using L = LayerTensor;
    return Qwen3Layer{b.attention(i), b.vector(i, L::attn_q_norm), b.vector(i, L::attn_k_norm),
                      b.ffn(i)};
  });
}

}  // namespace cohort::model
