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

std::vector<TensorSpec> tensor_specs(const HParams& hp) {
  const int64_t q_dim = hp.n_head * hp.head_dim;
  const int64_t kv_dim = hp.n_head_kv * hp.head_dim;
  std::vector<TensorSpec> specs;
  specs.push_back({"token_embd.weight", {hp.n_embd, hp.n_vocab}, true});
  for (int64_t i = 0; i < hp.n_layer; ++i) {
    auto name = [i](const char* what) { return fmt::format("blk.{}.{}", i, what); };
    specs.push_back({name("attn_norm.weight"), {hp.n_embd}, false});
    specs.push_back({name("attn_q.weight"), {hp.n_embd, q_dim}, true});
    specs.push_back({name("attn_k.weight"), {hp.n_embd, kv_dim}, true});
    specs.push_back({name("attn_v.weight"), {hp.n_embd, kv_dim}, true});
    if (hp.has_qkv_bias()) {
      specs.push_back({name("attn_q.bias"), {q_dim}, false});
      specs.push_back({name("attn_k.bias"), {kv_dim}, false});
      specs.push_back({name("attn_v.bias"), {kv_dim}, false});
    }
    if (hp.has_qk_norm()) {
      specs.push_back({name("attn_q_norm.weight"), {hp.head_dim}, false});
      specs.push_back({name("attn_k_norm.weight"), {hp.head_dim}, false});
    }
    specs.push_back({name("attn_output.weight"), {q_dim, hp.n_embd}, true});
    specs.push_back({name("ffn_norm.weight"), {hp.n_embd}, false});
    specs.push_back({name("ffn_gate.weight"), {hp.n_embd, hp.n_ff}, true});
    specs.push_back({name("ffn_up.weight"), {hp.n_embd, hp.n_ff}, true});
    specs.push_back({name("ffn_down.weight"), {hp.n_ff, hp.n_embd}, true});
  }
  specs.push_back({"output_norm.weight", {hp.n_embd}, false});
  if (!hp.tied_embeddings) specs.push_back({"output.weight", {hp.n_embd, hp.n_vocab}, true});
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
