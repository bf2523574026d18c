#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_testing.h"

namespace cohort::quant {
namespace quantize_test {

using namespace testing;

std::vector<float> round_trip(TensorType type, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> bytes(gguf::row_bytes(type, n));
  quantize(type, x.data(), bytes.data(), n);
  std::vector<float> y(x.size());
  dequantize(type, bytes.data(), y.data(), n);
  return y;
}

// Upper bounds of the relative RMS error on Gaussian data, about 10% above
// what these encoders measure (F16 2.1e-4, BF16 1.7e-3, Q8_0 5.4e-3,
// Q4_0 0.086, Q4_1 0.078, Q4_K 0.072, Q5_K 0.036, Q6_K 0.0174); a layout or
// rounding mistake costs far more than the margin.
double error_bound(TensorType type) {
  switch (type) {
    case TensorType::F32: return 0.0;
    case TensorType::F16: return 2.5e-4;
    case TensorType::BF16: return 2e-3;
    case TensorType::Q8_0: return 6e-3;
    case TensorType::Q4_0: return 0.095;
    case TensorType::Q4_1: return 0.087;
    case TensorType::Q4_K: return 0.08;
    case TensorType::Q5_K: return 0.04;
    case TensorType::Q6_K: return 0.0195;
    default: return 0.0;
  }
}

TEST(Quantize, RoundTripErrorOfGaussianDataIsBounded) {
  std::mt19937 rng(21);
  const auto x = random_normal(64 * 256, rng);
  for (TensorType type : kSupportedTypes) {
    ASSERT_TRUE(can_quantize(type)) << gguf::type_name(type);
    const double err = relative_rms_error(round_trip(type, x), x);
    std::printf("[ quantize ] %-5s relative RMS error %.5f (bound %.5f)\n",
                std::string(gguf::type_name(type)).c_str(), err, error_bound(type));
    EXPECT_TRUE(within(err, error_bound(type))) << gguf::type_name(type) << " " << err;
  }
}

TEST(Quantize, ErrorIsRelativeToTheDataScale) {
  // Tiny and large magnitudes (inside f16's range for the block scales).
  std::mt19937 rng(22);
  for (float sigma : {1e-3f, 30.0f}) {
    const auto x = random_normal(16 * 256, rng, sigma);
    for (TensorType type : kSupportedTypes) {
      const double err = relative_rms_error(round_trip(type, x), x);
      EXPECT_TRUE(within(err, 1.1 * error_bound(type) + 1e-6))
          << gguf::type_name(type) << " sigma " << sigma << " error " << err;
    }
  }
}

TEST(Quantize, OneBlockAndShiftedData) {
  // A single block, and data with a large common offset (the min formats
  // must use their offset; the symmetric ones still stay bounded).
  std::mt19937 rng(23);
  for (TensorType type : kSupportedTypes) {
    const auto bs = static_cast<size_t>(gguf::traits(type).block_size < 32 ? 32 : gguf::traits(type).block_size);
    auto x = random_normal(bs, rng);
    EXPECT_TRUE(within(relative_rms_error(round_trip(type, x), x), 1.5 * error_bound(type) + 1e-6))
        << gguf::type_name(type);
    for (float& v : x) v += 3.0f;
    EXPECT_TRUE(within(relative_rms_error(round_trip(type, x), x), 1.5 * error_bound(type) + 1e-6))
        << gguf::type_name(type) << " shifted";
  }
}

TEST(Quantize, ZerosStayExactlyZero) {
  const std::vector<float> x(512, 0.0f);
  for (TensorType type : kSupportedTypes) {
    for (float v : round_trip(type, x)) ASSERT_EQ(v, 0.0f) << gguf::type_name(type);
  }
}

TEST(Quantize, Q8_0RoundsHalvesAwayFromZero) {
  // amax 127 gives d = 1 exactly: q = round(x), ties away from zero as ggml's roundf.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.49f;
  BlockQ8_0 b{};
  quantize(TensorType::Q8_0, x.data(), &b, 32);
  EXPECT_EQ(f16_to_f32(b.d), 1.0f);
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 3);
  EXPECT_EQ(b.qs[2], -3);
  EXPECT_EQ(b.qs[3], 0);
}

TEST(Quantize, Q4_0MapsTheLargestMagnitudeToMinusEight) {
  std::vector<float> x(32, 0.0f);
  x[5] = -4.0f;  // largest magnitude, negative: d = 0.5, q = 0
  x[6] = 3.0f;
  BlockQ4_0 b{};
  quantize(TensorType::Q4_0, x.data(), &b, 32);
  EXPECT_EQ(f16_to_f32(b.d), 0.5f);
  EXPECT_EQ(b.qs[5] & 0xF, 0);
  EXPECT_EQ(b.qs[6] & 0xF, 14);
}

TEST(Quantize, NonFiniteInputIsHandledWithoutUndefinedBehaviour) {
  // Only checks that encoding finishes (the sanitizer build checks the casts).
  std::vector<float> x(256, 1.0f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[7] = std::numeric_limits<float>::infinity();
  x[200] = -std::numeric_limits<float>::infinity();
  for (TensorType type : kSupportedTypes) {
    std::vector<uint8_t> bytes(gguf::row_bytes(type, 256));
    quantize(type, x.data(), bytes.data(), 256);
  }
}

TEST(Quantize, EmptyInputTouchesNothing) {
  for (TensorType type : kSupportedTypes) {
    quantize(type, nullptr, nullptr, 0);
    dequantize(type, nullptr, nullptr, 0);
  }
}

TEST(Quantize, RejectsUnsupportedTypesAndPartialBlocks) {
  std::vector<float> x(64);
  std::vector<uint8_t> bytes(64);
  EXPECT_FALSE(can_quantize(TensorType::Q2_K));
  EXPECT_THROW(quantize(TensorType::Q2_K, x.data(), bytes.data(), 64), Error);
  EXPECT_THROW(quantize(TensorType::Q8_0, x.data(), bytes.data(), 48), Error);
}

}  // namespace quantize_test
}  // namespace cohort::quant
