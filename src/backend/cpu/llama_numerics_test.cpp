#include "backend/cpu/llama_numerics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quant/quant_testing.h"

namespace cohort::cpu {
namespace llama_numerics_test {

using quant::testing::IsaGuard;
using quant::testing::runnable_isas;
using quant::testing::same_float;

std::vector<float> normal(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Distance in units in the last place between two finite floats of one sign.
int64_t ulps(float a, float b) {
  return std::llabs(static_cast<int64_t>(std::bit_cast<int32_t>(a)) - std::bit_cast<int32_t>(b));
}

TEST(LlamaNumerics, ExpPolyIsWithinTwoUlpsOfExp) {
  for (float x = -87.0f; x < 88.0f; x += 0.0137f) {
    const auto want = static_cast<float>(std::exp(static_cast<double>(x)));
    EXPECT_LE(ulps(exp_poly(x), want), 2) << x;
  }
  EXPECT_EQ(exp_poly(0.0f), 1.0f);
  EXPECT_EQ(exp_poly(-INFINITY), 0.0f);
  EXPECT_EQ(exp_poly(-200.0f), 0.0f);
  EXPECT_EQ(exp_poly(200.0f), INFINITY);
  // subnormal results stay close to exp
  EXPECT_NEAR(exp_poly(-100.0f), std::exp(-100.0f), 1e-45);
}

TEST(LlamaNumerics, SumLanesIsTheTreeOfA16WideHorizontalAdd) {
  float v[kSumLanes];
  for (int i = 0; i < kSumLanes; ++i) v[i] = 1.0f + static_cast<float>(i) * 0x1p-22f;
  float t[8];
  for (int i = 0; i < 8; ++i) t[i] = v[i] + v[i + 8];
  const float want = ((t[0] + t[4]) + (t[2] + t[6])) + ((t[1] + t[5]) + (t[3] + t[7]));
  EXPECT_TRUE(same_float(sum_lanes(v), want));
}

TEST(LlamaNumerics, WideDotIsCloseToF64AndHasItsTailAfterTheReduction) {
  for (int64_t n : {1, 63, 64, 128, 200}) {
    const auto x = normal(static_cast<size_t>(n), 1), y = normal(static_cast<size_t>(n), 2);
    double want = 0.0;
    for (int64_t i = 0; i < n; ++i) want += static_cast<double>(x[i]) * y[i];
    EXPECT_NEAR(dot_f32_wide(x.data(), y.data(), n), want, 1e-5 * std::sqrt(n)) << n;
  }
  // a single element in lane 0 of the wide part is exact
  std::vector<float> x(64, 0.0f), y(64, 0.0f);
  x[0] = 3.0f;
  y[0] = 0.5f;
  EXPECT_EQ(dot_f32_wide(x.data(), y.data(), 64), 1.5f);
}

TEST(LlamaNumerics, LanesAccumulateAndReduceToTheWeightedSum) {
  const int64_t hd = 24;
  for (int n_lanes : {kSumLanes, kWideLanes}) {
    const int n_pos = 150;
    std::vector<float> lanes(static_cast<size_t>(n_lanes * hd), 0.0f), out(hd);
    const auto p = normal(n_pos, 3), v = normal(static_cast<size_t>(n_pos * hd), 4);
    for (int j = 0; j < n_pos; ++j) axpy_lane(lanes.data() + (j % n_lanes) * hd, p[j], &v[j * hd], hd);
    reduce_lanes(lanes.data(), n_lanes, hd, out.data());
    for (int64_t d = 0; d < hd; ++d) {
      double want = 0.0;
      for (int j = 0; j < n_pos; ++j) want += static_cast<double>(p[j]) * v[j * hd + d];
      EXPECT_NEAR(out[d], want, 1e-4) << n_lanes << " " << d;
    }
  }
}

TEST(LlamaNumerics, SoftmaxSumsToOneAndSiluMatchesItsDefinition) {
  auto x = normal(37, 5, 4.0f);
  const auto before = x;
  softmax_llama(x.data(), static_cast<int64_t>(x.size()));
  double total = 0.0, max_in = -INFINITY;
  for (float v : before) max_in = std::max<double>(max_in, v);
  for (size_t i = 0; i < x.size(); ++i) {
    total += x[i];
    EXPECT_GT(x[i], 0.0f);
  }
  EXPECT_NEAR(total, 1.0, 1e-6);
  const auto g = normal(40, 6, 3.0f), u = normal(40, 7);
  std::vector<float> y(40);
  silu_mul_llama(g.data(), u.data(), y.data(), 40);
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_NEAR(y[i], g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i], 1e-5);
  }
}

// The portable and AVX2/FMA builds are one source: same bits for everything.
TEST(LlamaNumerics, EveryIsaReturnsTheSameBits) {
  const IsaGuard guard;
  const auto x = normal(300, 8, 5.0f), y = normal(300, 9);
  std::vector<std::vector<float>> results;
  for (quant::Isa isa : runnable_isas()) {
    quant::set_isa(isa);
    std::vector<float> r;
    for (float v : x) r.push_back(exp_poly(v));
    r.push_back(dot_f32_wide(x.data(), y.data(), 300));
    std::vector<float> lanes(static_cast<size_t>(kWideLanes) * 4, 0.0f), out(4);
    for (int j = 0; j < 70; ++j) axpy_lane(&lanes[(j % kWideLanes) * 4], y[j], &x[j * 4], 4);
    reduce_lanes(lanes.data(), kWideLanes, 4, out.data());
    r.insert(r.end(), out.begin(), out.end());
    auto s = x;
    softmax_llama(s.data(), 300);
    r.insert(r.end(), s.begin(), s.end());
    std::vector<float> silu(300);
    silu_mul_llama(x.data(), y.data(), silu.data(), 300);
    r.insert(r.end(), silu.begin(), silu.end());
    results.push_back(r);
  }
  for (size_t k = 1; k < results.size(); ++k) {
    for (size_t i = 0; i < results[0].size(); ++i) {
      ASSERT_TRUE(same_float(results[0][i], results[k][i])) << i;
    }
  }
}

}  // namespace llama_numerics_test
}  // namespace cohort::cpu
