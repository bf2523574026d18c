#include "model/weights.h"

#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "model/weight_shard.h"
#include "quant/quant.h"

namespace cohort::model {
namespace {

// Binds the whole of every tensor, or (with a plan) one rank's shards of
// them: a row shard is a view of consecutive rows, a column shard a view of
// part of every row that keeps the full row's stride.
class Binder {
 public:
  Binder(const gguf::GgufFile& file, const HParams& hp, const ShardPlan* plan, int rank)
      : file_(file), hp_(hp), plan_(plan), rank_(rank) {}

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

  // A matrix [n_out, n_in] (GGUF shape [n_in, n_out]), or the part `shard`
  // of it.
  WeightView matrix(const TensorSpec& spec, const MatrixShard* shard = nullptr) const {
    const gguf::TensorInfo& t = find(spec.name, spec.shape);
    const int64_t n_in = spec.shape[0], n_out = spec.shape[1];
    const uint8_t* data = file_.tensor_data(t).data();
    if (shard == nullptr || shard->whole()) {
      return WeightView{data, t.type, backend::Device::cpu, n_out, n_in, gguf::row_bytes(t.type, n_in)};
    }
    if (!shard->aligned_for(t.type)) {
      fail("{}: tensor '{}' ({}) cannot be split at columns [{}, {}): not on its block boundaries",
           file_.name(), spec.name, gguf::type_name(t.type), shard->cols.begin, shard->cols.end);
    }
    return WeightView{data + shard->offset_bytes(t.type), t.type, backend::Device::cpu,
                      shard->rows.size(), shard->cols.size(), shard->row_stride_bytes(t.type)};
  }

  F32Vector vector(const TensorSpec& spec, const VectorShard* shard = nullptr) const {
    const gguf::TensorInfo& t = find(spec.name, spec.shape);
    F32Vector v(static_cast<size_t>(spec.shape[0]));
    quant::dequantize(t.type, file_.tensor_data(t).data(), v.data(), spec.shape[0]);
    if (shard != nullptr) v = F32Vector(v.begin() + shard->range.begin, v.begin() + shard->range.end);
    return v;
  }

  WeightView matrix(int64_t i, LayerTensor which, const MatrixShard* shard) const {
    return matrix(layer_tensor(hp_, i, which), shard);
  }
  F32Vector vector(int64_t i, LayerTensor which, const VectorShard* shard = nullptr) const {
    return vector(layer_tensor(hp_, i, which), shard);
  }

  // This rank's part of every layer's matrices; none when binding whole.
  std::optional<LayerShard> layer_shard() const {
    if (plan_ == nullptr) return std::nullopt;
    return model::layer_shard(*plan_, hp_, rank_);
  }

  AttentionWeights attention(int64_t i, const LayerShard* s) const {
    using L = LayerTensor;
    return {vector(i, L::attn_norm), matrix(i, L::attn_q, s ? &s->q : nullptr),
            matrix(i, L::attn_k, s ? &s->k : nullptr), matrix(i, L::attn_v, s ? &s->v : nullptr),
            matrix(i, L::attn_output, s ? &s->o : nullptr)};
  }

  FfnWeights ffn(int64_t i, const LayerShard* s) const {
    using L = LayerTensor;
    return {vector(i, L::ffn_norm), matrix(i, L::ffn_gate, s ? &s->gate : nullptr),
            matrix(i, L::ffn_up, s ? &s->up : nullptr), matrix(i, L::ffn_down, s ? &s->down : nullptr)};
  }

  HeadWeights head() const {
    HeadWeights h;
    h.embedding = matrix(head_tensor(hp_, HeadTensor::token_embd));
    h.output_norm = vector(head_tensor(hp_, HeadTensor::output_norm));
    const TensorSpec output = head_tensor(hp_, hp_.tied_embeddings ? HeadTensor::token_embd : HeadTensor::output);
    if (plan_ == nullptr) {
      h.output = hp_.tied_embeddings ? h.embedding : matrix(output);
    } else {
      const HeadShard s = head_shard(*plan_, hp_, rank_);
      h.output = matrix(output, &s.output);
    }
    const TensorSpec freqs = head_tensor(hp_, HeadTensor::rope_freqs);
    if (file_.find_tensor(freqs.name)) h.rope_freqs = vector(freqs);
    return h;
  }

 private:
  const gguf::GgufFile& file_;
  const HParams& hp_;
  const ShardPlan* plan_;
  int rank_;
};

template <typename Layer, typename MakeLayer>
Weights<Layer> bind(const gguf::GgufFile& file, const HParams& hp, const ShardPlan* plan, int rank,
                    MakeLayer make_layer) {
  Binder b(file, hp, plan, rank);
  Weights<Layer> w;
  w.head = b.head();
  w.layers.reserve(static_cast<size_t>(hp.n_layer));
  const std::optional<LayerShard> s = b.layer_shard();
  for (int64_t i = 0; i < hp.n_layer; ++i) w.layers.push_back(make_layer(b, i, s ? &*s : nullptr));
  return w;
}

}  // namespace

Weights<LlamaLayer> bind_llama(const gguf::GgufFile& file, const HParams& hp, const ShardPlan* plan,
                               int rank) {
  return bind<LlamaLayer>(file, hp, plan, rank, [](const Binder& b, int64_t i, const LayerShard* s) {
    return LlamaLayer{b.attention(i, s), b.ffn(i, s)};
  });
}

Weights<Qwen2Layer> bind_qwen2(const gguf::GgufFile& file, const HParams& hp, const ShardPlan* plan,
                               int rank) {
  return bind<Qwen2Layer>(file, hp, plan, rank, [](const Binder& b, int64_t i, const LayerShard* s) {
    using L = LayerTensor;
    return Qwen2Layer{b.attention(i, s), b.vector(i, L::attn_q_bias, s ? &s->q_bias : nullptr),
                      b.vector(i, L::attn_k_bias, s ? &s->k_bias : nullptr),
                      b.vector(i, L::attn_v_bias, s ? &s->v_bias : nullptr), b.ffn(i, s)};
  });
}

Weights<Qwen3Layer> bind_qwen3(const gguf::GgufFile& file, const HParams& hp, const ShardPlan* plan,
                               int rank) {
  return bind<Qwen3Layer>(file, hp, plan, rank, [](const Binder& b, int64_t i, const LayerShard* s) {
    using L = LayerTensor;
    return Qwen3Layer{b.attention(i, s), b.vector(i, L::attn_q_norm), b.vector(i, L::attn_k_norm),
                      b.ffn(i, s)};
  });
}

}  // namespace cohort::model
