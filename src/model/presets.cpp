#include "model/presets.h"

#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"

namespace cohort::model {
namespace {

struct Preset {
  const char* name;
  HParams hp;
};

HParams make(Family f, int64_t vocab, int64_t ctx, int64_t embd, int64_t layers, int64_t heads,
             int64_t kv_heads, int64_t head_dim, int64_t ff, float rope_base, float eps,
             bool tied) {
  HParams hp;
  hp.family = f;
  hp.n_vocab = vocab;
  hp.n_ctx_train = ctx;
  hp.n_embd = embd;
  hp.n_layer = layers;
  hp.n_head = heads;
  hp.n_head_kv = kv_heads;
  hp.head_dim = head_dim;
  hp.n_ff = ff;
  hp.rope_freq_base = rope_base;
  hp.rms_eps = eps;
  hp.tied_embeddings = tied;
  return hp;
}

// Shapes as published in each model's config.json. `tiny` keeps every row a
// multiple of 256 so that all block types (K-quants included) apply to it.
// `tiny-tp` is tiny for tensor parallelism: 3 KV heads in groups of 4 (256
// O columns per KV head) and 3 blocks of 256 FFN columns, so that 1, 2 or 3
// ranks split it for every block type. `llama3-70b` is Llama 3's 70B shape
// (141 GB in BF16: `mkmodel --layers` cuts it to what the GPUs at hand hold).
const std::array<Preset, 6>& presets() {
  static const std::array<Preset, 6> kPresets = {{
      {"tiny", make(Family::llama, 512, 2048, 256, 2, 4, 2, 64, 512, 10000.0f, 1e-5f, false)},
      {"tiny-tp", make(Family::llama, 512, 2048, 768, 2, 12, 3, 64, 768, 10000.0f, 1e-5f, false)},
      {"smollm-135m",
       make(Family::llama, 49152, 8192, 576, 30, 9, 3, 64, 1536, 100000.0f, 1e-5f, true)},
      {"llama3-8b",
       make(Family::llama, 128256, 8192, 4096, 32, 32, 8, 128, 14336, 500000.0f, 1e-5f, false)},
      {"llama3-70b",
       make(Family::llama, 128256, 8192, 8192, 80, 64, 8, 128, 28672, 500000.0f, 1e-5f, false)},
      {"qwen3-8b",
       make(Family::qwen3, 151936, 40960, 4096, 36, 32, 8, 128, 12288, 1000000.0f, 1e-6f, false)},
  }};
  return kPresets;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : presets()) names.emplace_back(p.name);
  return names;
}

HParams preset(const std::string& name) {
  for (const Preset& p : presets()) {
    if (name == p.name) return p.hp;
  }
  fail("unknown preset '{}' (known: {})", name, fmt::join(preset_names(), ", "));
}

}  // namespace cohort::model
