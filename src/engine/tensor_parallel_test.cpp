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
#include "engine/decoder_testing.h"
#include "model/model.h"

namespace cohort::engine {
namespace tensor_parallel_test {

// The tensor-parallel options of one run (every other option as
// decoder_testing.h's two_sequence_logits sets it).
std::vector<float> run(const model::Model& m, const std::string& dev, std::vector<float> ts = {},
                       bool exact = true) {
  DecoderOptions o;
  o.exact = exact;
  o.device = dev;
  o.split_mode = dev.find(',') == std::string::npos ? "none" : "tensor";
  o.tensor_split = std::move(ts);
  return two_sequence_logits(m, o);
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

}  // namespace tensor_parallel_test
}  // namespace cohort::engine
