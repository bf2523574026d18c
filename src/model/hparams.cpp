#include "model/hparams.h"

#include <fmt/format.h>

#include "common/error.h"

namespace cohort::model {

const char* family_name(Family f) {
  switch (f) {
    case Family::llama: return "llama";
    case Family::qwen2: return "qwen2";
    case Family::qwen3: return "qwen3";
  }
  return "?";
}

Family family_from_name(const std::string& name) {
  for (Family f : {Family::llama, Family::qwen2, Family::qwen3}) {
    if (name == family_name(f)) return f;
  }
  fail("unsupported architecture '{}' (supported: llama, qwen2, qwen3)", name);
}

TensorSpec layer_tensor(const HParams& hp, int64_t layer, LayerTensor which) {
  const int64_t q_dim = hp.n_head * hp.head_dim;
  const int64_t kv_dim = hp.n_head_kv * hp.head_dim;
  auto spec = [layer](const char* what, std::vector<int64_t> shape) {
    const bool is_matrix = shape.size() == 2;
    return TensorSpec{fmt::format("blk.{}.{}", layer, what), std::move(shape), is_matrix};
  };
  switch (which) {
    case LayerTensor::attn_norm: return spec("attn_norm.weight", {hp.n_embd});
    case LayerTensor::attn_q: return spec("attn_q.weight", {hp.n_embd, q_dim});
    case LayerTensor::attn_k: return spec("attn_k.weight", {hp.n_embd, kv_dim});
    case LayerTensor::attn_v: return spec("attn_v.weight", {hp.n_embd, kv_dim});
    case LayerTensor::attn_q_bias: return spec("attn_q.bias", {q_dim});
    case LayerTensor::attn_k_bias: return spec("attn_k.bias", {kv_dim});
    case LayerTensor::attn_v_bias: return spec("attn_v.bias", {kv_dim});
    case LayerTensor::attn_q_norm: return spec("attn_q_norm.weight", {hp.head_dim});
    case LayerTensor::attn_k_norm: return spec("attn_k_norm.weight", {hp.head_dim});
    case LayerTensor::attn_output: return spec("attn_output.weight", {q_dim, hp.n_embd});
    case LayerTensor::ffn_norm: return spec("ffn_norm.weight", {hp.n_embd});
    case LayerTensor::ffn_gate: return spec("ffn_gate.weight", {hp.n_embd, hp.n_ff});
    case LayerTensor::ffn_up: return spec("ffn_up.weight", {hp.n_embd, hp.n_ff});
    case LayerTensor::ffn_down: return spec("ffn_down.weight", {hp.n_ff, hp.n_embd});
  }
  fail("unknown layer tensor {}", static_cast<int>(which));
}

TensorSpec head_tensor(const HParams& hp, HeadTensor which) {
  switch (which) {
    case HeadTensor::token_embd: return {"token_embd.weight", {hp.n_embd, hp.n_vocab}, true};
    case HeadTensor::output_norm: return {"output_norm.weight", {hp.n_embd}, false};
    case HeadTensor::output: return {"output.weight", {hp.n_embd, hp.n_vocab}, true};
    case HeadTensor::rope_freqs: return {"rope_freqs.weight", {hp.n_rot / 2}, false};
  }
  fail("unknown head tensor {}", static_cast<int>(which));
}

std::vector<TensorSpec> tensor_specs(const HParams& hp) {
  using L = LayerTensor;
  std::vector<TensorSpec> specs;
  specs.push_back(head_tensor(hp, HeadTensor::token_embd));
  for (int64_t i = 0; i < hp.n_layer; ++i) {
    std::vector<L> order{L::attn_norm, L::attn_q, L::attn_k, L::attn_v};
    if (hp.has_qkv_bias()) order.insert(order.end(), {L::attn_q_bias, L::attn_k_bias, L::attn_v_bias});
    if (hp.has_qk_norm()) order.insert(order.end(), {L::attn_q_norm, L::attn_k_norm});
    order.insert(order.end(), {L::attn_output, L::ffn_norm, L::ffn_gate, L::ffn_up, L::ffn_down});
    for (L which : order) specs.push_back(layer_tensor(hp, i, which));
  }
  specs.push_back(head_tensor(hp, HeadTensor::output_norm));
  if (!hp.tied_embeddings) specs.push_back(head_tensor(hp, HeadTensor::output));
  return specs;
}

}  // namespace cohort::model

namespace cohort::model {
namespace {

int64_t required_int(const gguf::GgufFile& f, const std::string& key) {
  auto v = f.metadata().get_int(key);
  if (!v) fail("{}: metadata '{}' is missing", f.name(), key);
  if (*v <= 0) fail("{}: metadata '{}' is {}, expected a positive value", f.name(), key, *v);
  return *v;
}

void read_rope_scaling(const gguf::GgufFile& f, const std::string& a, HParams& hp) {
  const gguf::Metadata& md = f.metadata();
  const std::string type = md.get_string(a + ".rope.scaling.type").value_or("none");
  hp.rope_scale = static_cast<float>(md.get_float(a + ".rope.scaling.factor").value_or(1.0));
  if (hp.rope_scale == 0.0f) hp.rope_scale = 1.0f;
  hp.n_ctx_orig = md.get_int(a + ".rope.scaling.original_context_length").value_or(hp.n_ctx_train);
  if (type == "none" || (type == "linear" && hp.rope_scale == 1.0f)) {
    hp.rope_scaling = RopeScaling::none;
  } else if (type == "linear") {
    hp.rope_scaling = RopeScaling::linear;
  } else if (type == "yarn") {
    hp.rope_scaling = RopeScaling::yarn;
    hp.yarn_attn_factor =
        static_cast<float>(md.get_float(a + ".rope.scaling.attn_factor").value_or(1.0));
    hp.yarn_beta_fast = static_cast<float>(md.get_float(a + ".rope.scaling.yarn_beta_fast").value_or(32.0));
    hp.yarn_beta_slow = static_cast<float>(md.get_float(a + ".rope.scaling.yarn_beta_slow").value_or(1.0));
  } else if (type == "llama3") {
    hp.rope_scaling = RopeScaling::llama3;
  } else {
    fail("{}: unsupported RoPE scaling '{}' (supported: none, linear, yarn, llama3)", f.name(),
         type);
  }
  // llama3-style scaling is carried by per-dimension factors in rope_freqs.weight.
  if (f.find_tensor("rope_freqs.weight")) hp.rope_scaling = RopeScaling::llama3;
}

}  // namespace

HParams hparams_from_gguf(const gguf::GgufFile& f) {
  const std::string a = f.architecture();
  const gguf::Metadata& md = f.metadata();
  HParams hp;
  hp.family = family_from_name(a);
  hp.n_embd = required_int(f, a + ".embedding_length");
  hp.n_layer = required_int(f, a + ".block_count");
  hp.n_ff = required_int(f, a + ".feed_forward_length");
  hp.n_head = required_int(f, a + ".attention.head_count");
  hp.n_head_kv = md.get_int(a + ".attention.head_count_kv").value_or(hp.n_head);
  hp.n_ctx_train = required_int(f, a + ".context_length");
  if (hp.n_head_kv <= 0 || hp.n_head % hp.n_head_kv != 0) {
    fail("{}: {} attention heads cannot be grouped over {} KV heads", f.name(), hp.n_head,
         hp.n_head_kv);
  }
  hp.head_dim = md.get_int(a + ".attention.key_length").value_or(hp.n_embd / hp.n_head);
  const int64_t v_dim = md.get_int(a + ".attention.value_length").value_or(hp.head_dim);
  if (v_dim != hp.head_dim || hp.head_dim <= 0) {
    fail("{}: key length {} and value length {} differ (unsupported)", f.name(), hp.head_dim, v_dim);
  }
  hp.n_rot = md.get_int(a + ".rope.dimension_count").value_or(hp.head_dim);
  if (hp.n_rot <= 0 || hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0) {
    fail("{}: rope.dimension_count {} is invalid for head size {}", f.name(), hp.n_rot, hp.head_dim);
  }
  hp.rope_freq_base = static_cast<float>(md.get_float(a + ".rope.freq_base").value_or(10000.0));
  hp.rms_eps =
      static_cast<float>(md.get_float(a + ".attention.layer_norm_rms_epsilon").value_or(1e-5));
  const gguf::TensorInfo* emb = f.find_tensor("token_embd.weight");
  if (!emb || emb->shape.size() != 2) fail("{}: tensor 'token_embd.weight' is missing", f.name());
  hp.n_vocab = emb->shape[1];
  hp.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  read_rope_scaling(f, a, hp);
  return hp;
}

}  // namespace cohort::model
