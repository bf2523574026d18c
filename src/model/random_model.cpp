#include "model/random_model.h"

#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "common/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/synthetic_vocab.h"
#include "quant/quant.h"

namespace cohort::model {
namespace {

using gguf::TensorType;
using gguf::Value;

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// ref: llama.cpp enum llama_ftype (the "mostly" type of a file).
uint32_t file_type_of(TensorType t) {
  switch (t) {
    case TensorType::F32: return 0;
    case TensorType::F16: return 1;
    case TensorType::Q4_0: return 2;
    case TensorType::Q4_1: return 3;
    case TensorType::Q8_0: return 7;
    case TensorType::Q4_K: return 14;
    case TensorType::Q5_K: return 16;
    case TensorType::Q6_K: return 18;
    case TensorType::BF16: return 32;
    default: fail("mkmodel cannot write type {}", gguf::type_name(t));
  }
}

// The type a matrix gets: the requested one where its row length allows,
// else Q8_0 (as llama.cpp's quantizer falls back for such rows), else F16.
TensorType matrix_type(TensorType wanted, int64_t row) {
  if (row % gguf::traits(wanted).block_size == 0) return wanted;
  if (row % 32 == 0) return TensorType::Q8_0;
  return TensorType::F16;
}

void write_hparams(gguf::Metadata& md, const RandomModelOptions& o) {
  const HParams& hp = o.hp;
  const std::string a = family_name(hp.family);
  auto u32 = [](int64_t v) { return Value(static_cast<uint32_t>(v)); };
  md.set("general.architecture", Value(a));
  md.set("general.name", Value("cohort random " + o.preset_name));
  md.set("general.file_type", Value(file_type_of(o.type)));
  md.set("general.quantization_version", Value(uint32_t{2}));
  md.set(a + ".context_length", u32(hp.n_ctx_train));
  md.set(a + ".embedding_length", u32(hp.n_embd));
  md.set(a + ".block_count", u32(hp.n_layer));
  md.set(a + ".feed_forward_length", u32(hp.n_ff));
  md.set(a + ".attention.head_count", u32(hp.n_head));
  md.set(a + ".attention.head_count_kv", u32(hp.n_head_kv));
  md.set(a + ".attention.key_length", u32(hp.head_dim));
  md.set(a + ".attention.value_length", u32(hp.head_dim));
  md.set(a + ".rope.dimension_count", u32(hp.head_dim));
  md.set(a + ".rope.freq_base", Value(hp.rope_freq_base));
  md.set(a + ".attention.layer_norm_rms_epsilon", Value(hp.rms_eps));
  md.set(a + ".vocab_size", u32(hp.n_vocab));
}

// Fills rows [r0, r1) of a tensor: uniform values around `center` with
// half-width `half`, quantized row by row.
void fill_rows(std::span<uint8_t> out, TensorType type, int64_t row_len, int64_t r0, int64_t r1,
               uint64_t seed, float center, float half) {
  std::vector<float> row(static_cast<size_t>(row_len));
  const size_t rb = gguf::row_bytes(type, row_len);
  for (int64_t r = r0; r < r1; ++r) {
    uint64_t state = seed ^ (static_cast<uint64_t>(r) * 0xd1b54a32d192ed03ull);
    for (float& v : row) {
      // 24 random bits -> [-1, 1)
      float u = static_cast<float>(splitmix64(state) >> 40) * 0x1p-23f - 1.0f;
      v = center + half * u;
    }
    quant::quantize(type, row.data(), out.data() + static_cast<size_t>(r) * rb, row_len);
  }
}

gguf::GgufWriter::Fill make_fill(const TensorSpec& spec, TensorType type, uint64_t seed,
                                 int n_threads) {
  const int64_t row_len = spec.shape[0];
  const float center = spec.is_matrix ? 0.0f : (spec.name.find(".bias") != std::string::npos ? 0.0f : 1.0f);
  // uniform on [-h, h] has standard deviation h/sqrt(3)
  const float half = spec.is_matrix ? std::sqrt(3.0f / static_cast<float>(row_len)) : 0.1f;
  return [=, shape = spec.shape](std::span<uint8_t> out) {
    int64_t n_rows = 1;
    for (size_t i = 1; i < shape.size(); ++i) n_rows *= shape[i];
    const int64_t per = (n_rows + n_threads - 1) / n_threads;
    std::vector<std::jthread> workers;
    for (int64_t r0 = 0; r0 < n_rows; r0 += per) {
      const int64_t r1 = std::min(n_rows, r0 + per);
      workers.emplace_back([=] { fill_rows(out, type, row_len, r0, r1, seed, center, half); });
    }
  };
}

}  // namespace

void write_random_model(const RandomModelOptions& o, const std::string& path) {
  if (!quant::can_quantize(o.type)) fail("mkmodel cannot write type {}", gguf::type_name(o.type));
  RandomModelOptions opts = o;
  gguf::GgufWriter writer;
  gguf::Metadata& md = writer.metadata();
  if (!o.vocab_from.empty()) {
    gguf::GgufFile src = gguf::GgufFile::open(o.vocab_from);
    opts.hp.n_vocab = copy_vocab(src.metadata(), md);
  } else {
    write_synthetic_vocab(md, opts.hp.n_vocab);
  }
  write_hparams(md, opts);
  const int n_threads =
      o.n_threads > 0 ? o.n_threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  int n_fallback = 0;
  for (const TensorSpec& spec : tensor_specs(opts.hp)) {
    TensorType type = spec.is_matrix ? matrix_type(o.type, spec.shape[0]) : TensorType::F32;
    if (spec.is_matrix && type != o.type) ++n_fallback;
    uint64_t seed = o.seed * 0x9e3779b97f4a7c15ull ^ hash_name(spec.name);
    writer.add_tensor(spec.name, spec.shape, type, make_fill(spec, type, seed, n_threads));
  }
  if (n_fallback > 0) {
    std::fprintf(stderr, "mkmodel: %d matrices have rows that are not a multiple of the %s block; "
                 "they use q8_0 or f16 instead\n", n_fallback,
                 std::string(gguf::type_name(o.type)).c_str());
  }
  writer.write(path);
}

}  // namespace cohort::model
