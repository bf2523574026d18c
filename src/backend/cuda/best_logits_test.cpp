// The best k logits selected on the GPU against engine::select_top_k on the
// same rows (the host sampler's own selection): the same ids, in the same
// order, with the same logits, ties and NaN included.
#include "backend/cuda/best_logits.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_test_util.h"
#include "backend/cuda/device_buffer.h"
#include "common/error.h"
#include "engine/candidates.h"

namespace cohort::cuda {
namespace best_logits_test {

// Rows of normal logits; with `coarse`, rounded to quarters, so that most
// logits tie with others; a few NaN, infinities and zeros of both signs.
std::vector<float> make_rows(int64_t n_rows, int64_t n, bool coarse, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(n_rows * n));
  for (float& x : v) x = coarse ? std::round(normal(rng) * 4.0f) / 4.0f : normal(rng);
  std::uniform_int_distribution<size_t> at(0, v.size() - 1);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(),
                            -0.0f, 0.0f};
  for (int i = 0; i < 8 * n_rows; ++i) v[at(rng)] = specials[i % 4];
  return v;
}

// Token masks [n_rows, (n + 31) / 32] allowing each token with probability
// `density`; row 0 allows only a handful (fewer than most k), and every
// bit past n is set, which must not matter.
std::vector<uint32_t> make_masks(int64_t n_rows, int64_t n, double density, uint32_t seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution allowed(density);
  const int64_t words = (n + 31) / 32;
  std::vector<uint32_t> m(static_cast<size_t>(n_rows * words), 0xFFFFFFFFu);
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t t = 0; t < n; ++t) {
      const bool on = r == 0 ? t % (n / 5 + 1) == 3 : allowed(rng);
      if (!on) m[static_cast<size_t>(r * words + t / 32)] &= ~(1u << (t % 32));
    }
  }
  return m;
}

// With masks (density > 0): the host selects from each row with the
// tokens its mask clears set to -inf.
void check(int64_t n_rows, int64_t n, int k, bool coarse, uint32_t seed, double density = 0) {
  SCOPED_TRACE(::testing::Message() << n_rows << " rows of " << n << ", k = " << k << (coarse ? ", ties" : "")
                                    << ", mask density " << density);
  std::vector<float> host = make_rows(n_rows, n, coarse, seed);
  DeviceBuffer<float> logits(host.size());
  logits.upload(host);
  DeviceBuffer<uint32_t> masks;
  if (density > 0) {
    const std::vector<uint32_t> m = make_masks(n_rows, n, density, seed + 1000);
    masks = DeviceBuffer<uint32_t>(m.size());
    masks.upload(m);
    const int64_t words = (n + 31) / 32;
    for (int64_t r = 0; r < n_rows; ++r) {
      for (int64_t t = 0; t < n; ++t) {
        if (((m[static_cast<size_t>(r * words + t / 32)] >> (t % 32)) & 1u) == 0)
          host[static_cast<size_t>(r * n + t)] = -std::numeric_limits<float>::infinity();
      }
    }
  }
  DeviceBuffer<uint8_t> scratch(best_logits_scratch_bytes(n_rows, n, k));
  DeviceBuffer<BestLogit> out(static_cast<size_t>(n_rows * k));
  CUDA_CHECK(cudaMemset(out.data(), 0xFF, out.size() * sizeof(BestLogit)));
  best_logits(logits.data(), n_rows, n, k, scratch.data(), out.data(), nullptr, masks.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<BestLogit> got = out.download();

  const std::vector<uint8_t> skip(static_cast<size_t>(n), 0);
  engine::Candidates want;
  for (int64_t r = 0; r < n_rows; ++r) {
    const std::span<const float> row(host.data() + r * n, static_cast<size_t>(n));
    engine::select_top_k(want, row, k, {}, skip);
    ASSERT_EQ(want.size, static_cast<size_t>(k));
    for (int j = 0; j < k; ++j) {
      const BestLogit& g = got[static_cast<size_t>(r * k + j)];
      ASSERT_EQ(g.id, want.data[static_cast<size_t>(j)].id) << "row " << r << " rank " << j;
      ASSERT_EQ(g.logit, want.data[static_cast<size_t>(j)].logit) << "row " << r << " rank " << j;
    }
  }
}

TEST(CudaBestLogits, MatchTheHostSelectionOfEveryRow) {
  COHORT_REQUIRE_CUDA_DEVICE();
  uint32_t seed = 1;
  for (int64_t n : {int64_t{128256}, int64_t{49152}, int64_t{4096}, int64_t{5000}, int64_t{300}}) {
    for (int k : {1, 2, 40, kMaxBestK}) {
      for (bool coarse : {false, true}) check(3, n, k, coarse, seed++);
    }
  }
}

// Structured output's masks: the selection of the masked rows, also where
// fewer tokens are allowed than k (the rest come as -inf, by id).
TEST(CudaBestLogits, MaskedRowsMatchTheHostSelectionOfTheMaskedRows) {
  COHORT_REQUIRE_CUDA_DEVICE();
  uint32_t seed = 100;
  for (int64_t n : {int64_t{128256}, int64_t{49152}, int64_t{5000}, int64_t{300}}) {
    for (int k : {1, 40, kMaxBestK}) {
      for (double density : {0.5, 0.01}) check(4, n, k, true, seed++, density);
    }
  }
}

TEST(CudaBestLogits, ManyRowsAndAWholeRowOfTies) {
  COHORT_REQUIRE_CUDA_DEVICE();
  check(64, 128256, 40, true, 7);
  // Every logit equal: the k lowest ids, in order.
  const int64_t n = 10000;
  DeviceBuffer<float> logits(static_cast<size_t>(n));
  logits.upload(std::vector<float>(static_cast<size_t>(n), 1.5f));
  DeviceBuffer<uint8_t> scratch(best_logits_scratch_bytes(1, n, 5));
  DeviceBuffer<BestLogit> out(5);
  best_logits(logits.data(), 1, n, 5, scratch.data(), out.data(), nullptr);
  const std::vector<BestLogit> got = out.download();
  for (int j = 0; j < 5; ++j) {
    EXPECT_EQ(got[static_cast<size_t>(j)].id, j);
    EXPECT_EQ(got[static_cast<size_t>(j)].logit, 1.5f);
  }
}

TEST(CudaBestLogits, RefusesAnImpossibleK) {
  COHORT_REQUIRE_CUDA_DEVICE();
  DeviceBuffer<float> logits(16);
  DeviceBuffer<BestLogit> out(64);
  EXPECT_THROW(best_logits(logits.data(), 1, 16, 0, nullptr, out.data(), nullptr), Error);
  EXPECT_THROW(best_logits(logits.data(), 1, 16, 17, nullptr, out.data(), nullptr), Error);
  EXPECT_THROW(best_logits(logits.data(), 1, 16, kMaxBestK + 1, nullptr, out.data(), nullptr), Error);
}

}  // namespace best_logits_test
}  // namespace cohort::cuda
