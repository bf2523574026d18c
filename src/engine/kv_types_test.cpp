// The KV cache types (-ctk/-ctv) on the CPU: each against an F32 cache on
// the reference path (--exact) of random tiny-tp models (mean KLD, top-1
// disagreements only at near-ties); the bytes each takes; a cache type is
// really used (its logits differ from F32's), and one run's bits repeat.
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "engine/decoder.h"
#include "engine/decoder_testing.h"
#include "model/model.h"

namespace cohort::engine {
namespace kv_types_test {

DecoderOptions with_cache(const std::string& k, const std::string& v) {
  DecoderOptions o;
  o.exact = true;
  o.device = "cpu";
  o.cache_type_k = k;
  o.cache_type_v = v;
  return o;
}

TEST(KvCacheTypes, EachTypeAgreesWithAnF32Cache) {
  const std::string path = write_model(gguf::TensorType::F16, model::Family::qwen3);
  const auto m = model::Model::load(path);
  const size_t n_vocab = static_cast<size_t>(m->hparams().n_vocab);
  const std::vector<float> f32 = two_sequence_logits(*m, with_cache("f32", "f32"));
  // (K type, V type, KLD bound): 16-bit caches round each value by at most
  // 2^-9 (bf16) of itself, q8_0 by half a step of its block's scale.
  for (const auto& [k, v, bound] : std::vector<std::tuple<std::string, std::string, double>>{
           {"f16", "f16", 1e-5}, {"bf16", "bf16", 1e-4}, {"q8_0", "q8_0", 1e-3}, {"f16", "q8_0", 1e-3}}) {
    SCOPED_TRACE(fmt::format("-ctk {} -ctv {}", k, v));
    const std::vector<float> got = two_sequence_logits(*m, with_cache(k, v));
    ASSERT_EQ(got.size(), f32.size());
    const Agreement a = agree(f32, got, n_vocab);
    fmt::print("[ kv type  ] -ctk {} -ctv {}: mean KLD {:.3g} against f32, {} top-1 disagreements\n", k, v,
               a.mean_kld, a.disagree);
    EXPECT_LE(a.mean_kld, bound);
    EXPECT_EQ(a.misses, 0) << a.disagree << " disagreements";
    EXPECT_NE(got, f32) << "the cache type changed no logit";
    EXPECT_EQ(two_sequence_logits(*m, with_cache(k, v)), got) << "two runs differ";
  }
  std::filesystem::remove(path);
}

TEST(KvCacheTypes, TheDecoderReportsEachTypesBytes) {
  const std::string path = write_model(gguf::TensorType::Q8_0, model::Family::llama);
  const auto m = model::Model::load(path);
  auto kv = [&m](const std::string& k, const std::string& v) {
    DecoderOptions o = with_cache(k, v);
    o.n_ctx = 512;
    const backend::MemoryUse use = Decoder(*m, o).memory();
    EXPECT_EQ(use.kv_type_k, k);
    EXPECT_EQ(use.kv_type_v, v);
    EXPECT_EQ(use.kv_tokens, 512);
    return use.kv;
  };
  const size_t f32 = kv("f32", "f32");
  EXPECT_EQ(2 * kv("f16", "f16"), f32);
  EXPECT_EQ(2 * kv("bf16", "bf16"), f32);
  EXPECT_EQ(128 * kv("q8_0", "q8_0"), 34 * f32);
  EXPECT_EQ(4 * kv("f32", "f16"), 3 * f32);
  EXPECT_EQ(DecoderOptions{}.cache_type_k, "f16") << "llama.cpp's default";
  EXPECT_EQ(DecoderOptions{}.cache_type_v, "f16");
  std::filesystem::remove(path);
}

TEST(KvCacheTypes, AnUnknownTypeIsAClearError) {
  DecoderOptions o = with_cache("q4_0", "f16");
  try {
    o.validate();
    FAIL() << "expected cohort::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "-ctk q4_0: the KV cache stores f32, f16, bf16 or q8_0");
  }
  o = with_cache("f16", "fp8");
  EXPECT_THROW(o.validate(), Error);
}

}  // namespace kv_types_test
}  // namespace cohort::engine
