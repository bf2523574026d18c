// Hyper-parameters of the transformer families cohort runs (llama, qwen2,
// qwen3), and the GGUF tensor names and shapes that llama.cpp uses for them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

namespace cohort::model {

enum class Family { llama, qwen2, qwen3 };
enum class RopeScaling { none, linear, yarn, llama3 };

const char* family_name(Family f);
// Throws cohort::Error listing the supported families.
Family family_from_name(const std::string& name);

struct HParams {
  Family family = Family::llama;
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;     // context length the model was trained for
  int64_t n_embd = 0;          // hidden size
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;       // grouped-query attention: n_head % n_head_kv == 0
  int64_t head_dim = 0;        // usually n_embd / n_head (qwen3 may differ)
  int64_t n_ff = 0;            // FFN inner size
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool tied_embeddings = false;  // no output.weight: the head reuses token_embd
  int64_t n_rot = 0;             // rotated dims per head (rope.dimension_count)
  RopeScaling rope_scaling = RopeScaling::none;
  float rope_scale = 1.0f;       // context extension factor (1 = none)
  int64_t n_ctx_orig = 0;        // pre-extension context (YaRN)
  float yarn_attn_factor = 1.0f;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;

  bool has_qkv_bias() const { return family == Family::qwen2; }
  bool has_qk_norm() const { return family == Family::qwen3; }
};

// Reads the hyper-parameters of a GGUF model file. Throws cohort::Error for
// an unsupported architecture or RoPE scaling (naming what is supported) and
// for missing or inconsistent values (naming the key). Does not look at
// tensors except to detect tied embeddings.
HParams hparams_from_gguf(const gguf::GgufFile& file);

// One weight tensor of a model file: llama.cpp's name and ggml-order shape.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;  // shape[0] is the contiguous dimension (inputs of a matrix)
  bool is_matrix;              // 2-D weight (quantizable); else norm or bias (kept F32)
};

// The weight tensors of a layer and of the head, in file order. These two
// functions are the only place their names and shapes are written: the
// weight binder and the model writer both read them.
enum class LayerTensor {
  attn_norm, attn_q, attn_k, attn_v, attn_q_bias, attn_k_bias, attn_v_bias, attn_q_norm,
  attn_k_norm, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down,
};
enum class HeadTensor { token_embd, output_norm, output, rope_freqs };

TensorSpec layer_tensor(const HParams& hp, int64_t layer, LayerTensor which);
TensorSpec head_tensor(const HParams& hp, HeadTensor which);

// Every tensor a model of these hyper-parameters has, in file order
// (rope_freqs.weight, which only some llama3 files carry, is not listed).
std::vector<TensorSpec> tensor_specs(const HParams& hp);

}  // namespace cohort::model
