#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <limits>
#include <random>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "quant/quant.h"
#include "quant/quant_testing.h"

namespace cohort::quant {
namespace dot_test {

using namespace testing;

// Error of a dot product relative to sum |w_i x_i|, the scale of the
// rounding errors any summation order makes (relative to the result itself
// would blow up whenever the terms cancel).
struct DotCheck {
  double error;  // |got - want| / scale
  float got;
  double want;   // in float64 from the dequantized weights
  double scale;  // sum |w_i x_i|
};

DotCheck check_dot(TensorType type, const std::vector<uint8_t>& row, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> w(x.size());
  {
    IsaGuard guard;
    set_isa(Isa::scalar);  // bit-exact with numpy on either path; see dequantize_test
    dequantize(type, row.data(), w.data(), n);
  }
  double want = 0.0, scale = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    want += static_cast<double>(w[i]) * x[i];
    scale += std::fabs(static_cast<double>(w[i]) * x[i]);
  }
  const float got = dot(type, row.data(), x.data(), n);
  return {std::fabs(got - want) / scale, got, want, scale};
}

// 1e-5 is about 100 float ulps: far above what a correct F32 summation of
// these lengths makes (~1e-7), far below what a wrong element makes.
constexpr double kTolerance = 1e-5;

TEST(Dot, MatchesFloat64ReferenceOnEveryIsaAndSize) {
  IsaGuard guard;
  std::mt19937 rng(11);
  for (TensorType type : kSupportedTypes) {
    const int64_t bs = gguf::traits(type).block_size;
    // One block, an odd count, and a long row (4096 elements of 32-blocks,
    // 16 super-blocks). The float formats also get lengths with tails.
    std::vector<int64_t> counts = {1, 3, 7, 4096 / bs < 16 ? 16 : 4096 / bs};
    if (bs == 1) counts.insert(counts.end(), {9, 31, 33, 100});
    for (int64_t n_blocks : counts) {
      const auto row = random_blocks(type, n_blocks, rng);
      const auto x = random_normal(static_cast<size_t>(n_blocks * bs), rng);
      double worst = 0.0;
      for (Isa isa : runnable_isas()) {
        set_isa(isa);
        const DotCheck c = check_dot(type, row, x);
        EXPECT_TRUE(within(c.error, kTolerance))
            << gguf::type_name(type) << " " << isa_name(isa) << " n=" << x.size() << " got " << c.got
            << " want " << c.want << " rel error " << c.error;
        worst = std::fmax(worst, c.error);
      }
      if (n_blocks * bs >= 4096) {
        std::printf("[ dot      ] %-5s n=%zu worst relative error %.2e\n",
                    std::string(gguf::type_name(type)).c_str(), x.size(), worst);
      }
    }
  }
}

TEST(Dot, ScalarAndAvx2AgreeClosely) {
  if (best_isa() != Isa::avx2) GTEST_SKIP() << "CPU lacks AVX2/FMA";
  IsaGuard guard;
  std::mt19937 rng(12);
  for (TensorType type : kSupportedTypes) {
    const int64_t n = 8192;
    const auto row = random_blocks(type, n / gguf::traits(type).block_size, rng);
    const auto x = random_normal(static_cast<size_t>(n), rng);
    set_isa(Isa::scalar);
    const DotCheck s = check_dot(type, row, x);
    set_isa(Isa::avx2);
    const DotCheck a = check_dot(type, row, x);
    EXPECT_TRUE(within(std::fabs(static_cast<double>(s.got) - a.got) / s.scale, 2 * kTolerance))
        << gguf::type_name(type) << " scalar " << s.got << " avx2 " << a.got;
  }
}

TEST(Dot, EmptyRowIsZero) {
  const float x = 1.0f;
  for (TensorType type : kSupportedTypes) EXPECT_EQ(dot(type, &x, &x, 0), 0.0f);
}

TEST(Dot, NanWeightGivesNanAndNeverPassesTheCheck) {
  IsaGuard guard;
  std::mt19937 rng(13);
  auto row = random_blocks(TensorType::Q8_0, 4, rng);
  const uint16_t nan = 0x7e00;
  std::memcpy(row.data() + 2 * 34, &nan, sizeof(nan));  // scale of the third block
  const auto x = random_normal(128, rng);
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    const float got = dot(TensorType::Q8_0, row.data(), x.data(), 128);
    EXPECT_TRUE(std::isnan(got)) << isa_name(isa);
    EXPECT_FALSE(within(check_dot(TensorType::Q8_0, row, x).error, kTolerance)) << isa_name(isa);
  }
  EXPECT_FALSE(within(std::numeric_limits<double>::quiet_NaN(), 1e300));
  EXPECT_FALSE(within(std::numeric_limits<double>::infinity(), 1e300));
}

TEST(Dot, RejectsUnsupportedTypesAndPartialBlocks) {
  std::vector<uint8_t> row(256);
  std::vector<float> x(64);
  EXPECT_THROW(dot(TensorType::Q5_1, row.data(), x.data(), 32), Error);
  EXPECT_THROW(dot(TensorType::Q4_K, row.data(), x.data(), 64), Error);
}

}  // namespace dot_test
}  // namespace cohort::quant
