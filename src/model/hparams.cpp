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
