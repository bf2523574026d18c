// Tensor parallelism on CPU ranks (-sm tensor -dev cpu,cpu,...) against one
// rank on random tiny-tp models: two sequences prefilled together (several
// micro-batches) then decoded together, every row's logits compared, on the
// reference path (--exact). Bounds of the tensor-parallel issue: mean KLD
// <= 1e-4, and every top-1 disagreement at a near-tie of the one-rank logits
// (a gap below a quarter of the median top-1/top-2 gap). The ranks round
// each contribution of a reduction to BF16, so the bits differ from one
// rank; two runs of one rank layout give the same bits, on both paths.
// (The fast path quantizes activations to 8 bits before every matmul, so any
// change of an input moves its logits by about its own distance from the
// reference path: tests/python/test_tensor_parallel.py bounds it by that.)
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "backend/backend.h"
#include "common/error.h"
#include "engine/decoder.h"
#include "model/model.h"
#include "model/presets.h"
#include "model/random_model.h"

namespace cohort::engine {
namespace {

constexpr int kPrefillA = 70, kPrefillB = 45, kDecodeSteps = 12;

std::string write_model(gguf::TensorType type, model::Family family) {
  model::RandomModelOptions o;
  o.hp = model::preset("tiny-tp");
  o.hp.family = family;
  o.type = type;
  o.n_threads = 1;
  const std::string path = (std::filesystem::temp_directory_path() /
                            fmt::format("cohort-tp-{}-{}-{}.gguf", getpid(), model::family_name(family),
                                        gguf::type_name(type)))
                               .string();
  model::write_random_model(o, path);
  return path;
}

std::vector<float> run(const model::Model& m, const std::string& dev, std::vector<float> ts = {},
                       bool exact = true) {
  DecoderOptions o;
  o.exact = exact;
  o.n_ctx = 256;
  o.n_batch = 128;
  o.n_ubatch = 32;  // the prefill takes several micro-batches
  o.n_threads = 2;
  o.device = dev;
  o.split_mode = dev.find(',') == std::string::npos ? "none" : "tensor";
  o.tensor_split = std::move(ts);
  Decoder dec(m, o);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> tok(3, dec.n_vocab() - 1);
  dec.reserve(0, kPrefillA + kDecodeSteps);
  dec.reserve(1, kPrefillB + kDecodeSteps);
  std::vector<float> out;
  Batch b;
  for (int i = 0; i < kPrefillA; ++i) b.add(tok(rng), i, 0, true);
  for (int i = 0; i < kPrefillB; ++i) b.add(tok(rng), i, 1, true);
  std::span<const float> l = dec.decode(b);
  out.insert(out.end(), l.begin(), l.end());
  for (int s = 0; s < kDecodeSteps; ++s) {
    b.clear();
    b.add(tok(rng), kPrefillA + s, 0, true);
    b.add(tok(rng), kPrefillB + s, 1, true);
    l = dec.decode(b);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

struct Agreement {
  double mean_kld = 0.0;
  int disagree = 0;
  int misses = 0;  // disagreements that are not near-ties
};

Agreement agree(const std::vector<float>& ref, const std::vector<float>& ours, size_t n_vocab) {
  const size_t n_rows = ref.size() / n_vocab;
  std::vector<double> gaps;
  for (size_t r = 0; r < n_rows; ++r) {
    std::vector<float> row(ref.begin() + r * n_vocab, ref.begin() + (r + 1) * n_vocab);
    std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<>());
    gaps.push_back(row[0] - row[1]);
  }
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  const double tie = 0.25 * gaps[gaps.size() / 2];
  Agreement a;
  for (size_t r = 0; r < n_rows; ++r) {
    const float* p = ref.data() + r * n_vocab;
    const float* q = ours.data() + r * n_vocab;
    const double mp = *std::max_element(p, p + n_vocab), mq = *std::max_element(q, q + n_vocab);
    double sp = 0.0, sq = 0.0;
    for (size_t i = 0; i < n_vocab; ++i) sp += std::exp(p[i] - mp), sq += std::exp(q[i] - mq);
    double kld = 0.0;
    for (size_t i = 0; i < n_vocab; ++i) {
      const double lp = p[i] - mp - std::log(sp), lq = q[i] - mq - std::log(sq);
      kld += std::exp(lp) * (lp - lq);
    }
    a.mean_kld += kld / static_cast<double>(n_rows);
    const size_t tp = std::max_element(p, p + n_vocab) - p, tq = std::max_element(q, q + n_vocab) - q;
    if (tp != tq) {
      ++a.disagree;
      if (p[tp] - p[tq] >= tie) ++a.misses;
    }
  }
  return a;
}

struct Case {
  gguf::TensorType type;
  model::Family family;
};

class TensorParallel : public ::testing::TestWithParam<Case> {};

TEST_P(TensorParallel, RanksAgreeWithOneRank) {
  const std::string path = write_model(GetParam().type, GetParam().family);
  const auto m = model::Model::load(path);
  const std::vector<float> one = run(*m, "cpu");
  const size_t n_vocab = static_cast<size_t>(m->hparams().n_vocab);
  for (const auto& [dev, ts] : std::vector<std::pair<std::string, std::vector<float>>>{
           {"cpu,cpu", {}}, {"cpu,cpu,cpu", {2, 1, 1}}, {"cpu,cpu", {1, 3}}}) {
    SCOPED_TRACE(fmt::format("-dev {} -ts {}", dev, fmt::join(ts, ",")));
    const std::vector<float> tp = run(*m, dev, ts);
    ASSERT_EQ(tp.size(), one.size());
    ASSERT_TRUE(std::all_of(tp.begin(), tp.end(), [](float x) { return std::isfinite(x); }));
    const Agreement a = agree(one, tp, n_vocab);
    EXPECT_LE(a.mean_kld, 1e-4);
    EXPECT_EQ(a.misses, 0) << a.disagree << " disagreements";
    EXPECT_NE(tp, one) << "the ranks' BF16 reduction should change some bits";
    EXPECT_EQ(run(*m, dev, ts), tp) << "two runs of one rank layout differ";
    EXPECT_EQ(run(*m, dev, ts, false), run(*m, dev, ts, false)) << "fast path: two runs differ";
  }
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(
    Types, TensorParallel,
    ::testing::Values(Case{gguf::TensorType::F16, model::Family::llama},
                      Case{gguf::TensorType::Q8_0, model::Family::qwen2},
                      Case{gguf::TensorType::Q4_K, model::Family::qwen3},
                      Case{gguf::TensorType::Q6_K, model::Family::llama}),
    [](const ::testing::TestParamInfo<Case>& tc) {
      return fmt::format("{}_{}", model::family_name(tc.param.family), gguf::type_name(tc.param.type));
    });

TEST(TensorParallelOptions, ImpossibleFlagsAreClearErrors) {
  const std::string path = write_model(gguf::TensorType::Q8_0, model::Family::llama);
  const auto m = model::Model::load(path);
  auto error_of = [&](DecoderOptions o) -> std::string {
    o.n_ctx = 64;
    try {
      Decoder dec(*m, o);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  DecoderOptions o;
  o.device = "cpu,cpu";
  EXPECT_NE(error_of(o).find("needs -sm tensor"), std::string::npos) << error_of(o);
  o.split_mode = "layer";
  EXPECT_NE(error_of(o).find("-sm layer"), std::string::npos) << error_of(o);
  o.split_mode = "tensor";
  o.tensor_split = {1, 1, 1};
  EXPECT_NE(error_of(o).find("-ts has 3 values for 2 ranks"), std::string::npos) << error_of(o);
  o.tensor_split = {1, 0};
  EXPECT_NE(error_of(o).find("must be a positive"), std::string::npos) << error_of(o);
  o.tensor_split = {};
  o.device = "cpu,cpu,cpu,cpu";  // 3 KV heads
  EXPECT_NE(error_of(o).find("4 ranks but the model has only 3 KV-head groups"), std::string::npos)
      << error_of(o);
  o.device = "cpu,,cpu";
  EXPECT_NE(error_of(o).find("empty entry"), std::string::npos) << error_of(o);
  o.device = "";
  EXPECT_NE(error_of(o).find("needs -dev"), std::string::npos) << error_of(o);
  o.device = "cuda0,cuda1,cuda0";
  o.allreduce = "nccl";
  EXPECT_NE(error_of(o).find("NCCL runs one rank per GPU, and cuda0 is listed twice"), std::string::npos)
      << error_of(o);
  o.allreduce = "mpi";
  EXPECT_NE(error_of(o).find("-ar mpi: unknown transport (nccl, host, p2p)"), std::string::npos) << error_of(o);
  o.allreduce = "p2p";
  o.device = "cpu";
  o.tensor_split = {};
  EXPECT_EQ(error_of(o), "") << "one rank under -sm tensor works";
  std::filesystem::remove(path);
}

TEST(TensorParallelOptions, RepeatedGpuFindsTheFirstGpuListedTwice) {
  using backend::Device;
  EXPECT_EQ(backend::repeated_gpu({{Device::cuda, 0}, {Device::cuda, 1}}), -1);
  EXPECT_EQ(backend::repeated_gpu({{Device::cuda, 2}, {Device::cuda, 1}, {Device::cuda, 1}, {Device::cuda, 2}}), 1);
  EXPECT_EQ(backend::repeated_gpu({{Device::cpu, 0}, {Device::cpu, 0}}), -1) << "CPU ranks are not GPUs";
  EXPECT_EQ(backend::repeated_gpu({}), -1);
}

// -ar p2p without peer access (forced here) reduces through the host, with
// a warning; ranks sharing one GPU need no peer access.
TEST(TensorParallelOptions, P2pFallsBackToTheHostWithAWarning) {
  using backend::Device;
  const std::vector<backend::DeviceChoice> shared{{Device::cuda, 0}, {Device::cuda, 0}};
  unsetenv("COHORT_DISABLE_P2P");
  EXPECT_EQ(backend::resolve_transport("p2p", shared), "p2p");
  EXPECT_EQ(backend::resolve_transport("nccl", shared), "nccl");
  setenv("COHORT_DISABLE_P2P", "1", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(backend::resolve_transport("p2p", shared), "host");
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("warning: -ar p2p: COHORT_DISABLE_P2P=1; reducing through the host"), std::string::npos)
      << warning;
  EXPECT_EQ(backend::resolve_transport("host", shared), "host");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(backend::resolve_transport("p2p", {{Device::cpu, 0}, {Device::cpu, 0}}), "p2p");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "CPU ranks have nothing to fall back from";
  unsetenv("COHORT_DISABLE_P2P");
}

}  // namespace
}  // namespace cohort::engine
