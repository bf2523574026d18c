// The weights of each family, bound to tensors of a model file by name.
//
// Matrices are views into the memory-mapped file (no copy): [n_out, n_in]
// rows in the file type, on the host. Norm weights and biases are small and
// are copied to F32 at load, whatever their file type; vec() views them. One struct per family; the shared pieces are composed, not
// inherited, so that a family's weights say exactly what it has.
#pragma once

#include <vector>

#include "backend/tensor.h"
#include "gguf/gguf_file.h"
#include "model/hparams.h"
#include "model/shard_plan.h"

namespace cohort::model {

using WeightView = backend::ConstTensorView;
using F32Vector = std::vector<float>;

// v [n] as a one-row F32 tensor [1, n].
inline backend::ConstTensorView vec(const F32Vector& v) {
  return backend::host_f32(v, 1, static_cast<int64_t>(v.size()));
}

struct AttentionWeights {
  F32Vector norm;         // [n_embd]
  WeightView q;           // [n_embd] -> [n_head * head_dim]
  WeightView k;           // [n_embd] -> [n_head_kv * head_dim]
  WeightView v;           // [n_embd] -> [n_head_kv * head_dim]
  WeightView o;           // [n_head * head_dim] -> [n_embd]
};

struct FfnWeights {
  F32Vector norm;         // [n_embd]
  WeightView gate;        // [n_embd] -> [n_ff]
  WeightView up;          // [n_embd] -> [n_ff]
  WeightView down;        // [n_ff] -> [n_embd]
};

struct HeadWeights {
  WeightView embedding;   // token_embd: [n_embd] rows, one per token id
  F32Vector output_norm;  // [n_embd]
  WeightView output;      // [n_embd] -> [n_vocab] (token_embd when tied)
  F32Vector rope_freqs;   // [n_rot / 2] llama3 frequency divisors, or empty
};

struct LlamaLayer {
  AttentionWeights attn;
  FfnWeights ffn;
};

struct Qwen2Layer {
  AttentionWeights attn;
  F32Vector q_bias;       // [n_head * head_dim]
  F32Vector k_bias;       // [n_head_kv * head_dim]
  F32Vector v_bias;       // [n_head_kv * head_dim]
  FfnWeights ffn;
};

struct Qwen3Layer {
  AttentionWeights attn;
  F32Vector q_norm;       // [head_dim], per head, before RoPE
  F32Vector k_norm;       // [head_dim]
  FfnWeights ffn;
};

template <typename Layer>
struct Weights {
  HeadWeights head;
  std::vector<Layer> layers;
};

// Builders: throw cohort::Error naming the tensor that is missing, has the
// wrong shape, or has a type the CPU cannot compute on. With a plan, they
// bind rank `rank`'s shards (model/weight_shard.h): matrices become views of
// the rank's rows or columns, biases its elements; norm weights and the
// embedding table stay whole. hp is the whole model's.
Weights<LlamaLayer> bind_llama(const gguf::GgufFile& file, const HParams& hp,
                               const ShardPlan* plan = nullptr, int rank = 0);
Weights<Qwen2Layer> bind_qwen2(const gguf::GgufFile& file, const HParams& hp,
                               const ShardPlan* plan = nullptr, int rank = 0);
Weights<Qwen3Layer> bind_qwen3(const gguf::GgufFile& file, const HParams& hp,
                               const ShardPlan* plan = nullptr, int rank = 0);

}  // namespace cohort::model
