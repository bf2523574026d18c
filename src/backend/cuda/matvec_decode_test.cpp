// The matvec decoders compiled for the host: every unit of random rows must
// decode to the CPU dequantizer's values at the columns it claims, and the
// units of a row must cover each column exactly once. This pins the layout
// arithmetic of matvec_decode.cuh without a GPU.
#include "backend/cuda/matvec_decode.cuh"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/tensor_type.h"
#include "quant/quant.h"

namespace cohort::cuda::kernels::matvec_decode {
namespace matvec_decode_test {

using gguf::TensorType;

// Decodes a whole row with D and compares with quant::dequantize. `slack`
// is the allowed difference in units of the row's largest |value|: 0 where
// the decoder does the CPU's arithmetic, 2^-22 where it fuses a*b+c into
// one FMA (Q4_1, Q4_K, Q5_K: one rounding fewer than the CPU).
template <typename D>
void check(TensorType type, int64_t n_in, double slack, uint32_t seed) {
  SCOPED_TRACE(std::string(gguf::type_name(type)) + " n_in " + std::to_string(n_in));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> f(static_cast<size_t>(n_in));
  for (float& v : f) v = normal(rng);
  std::vector<uint8_t> row(gguf::row_bytes(type, n_in));
  ASSERT_EQ(row.size(), static_cast<size_t>(n_in / D::kBlockElems * D::kBlockBytes));
  quant::quantize(type, f.data(), row.data(), n_in);
  std::vector<float> want(f.size());
  quant::dequantize(type, row.data(), want.data(), n_in);
  double top = 0.0;
  for (float v : want) top = std::max(top, static_cast<double>(std::fabs(v)));

  std::vector<int> seen(f.size(), 0);
  int bad = 0;
  for (int64_t u = 0; u < n_in / D::kUnitElems; ++u) {
    const typename D::Unit unit = D::load(row.data(), u);
    for (int r = 0; r < D::kRuns; ++r) {
      float w[kRunLen];
      const int64_t col = D::decode(unit, u, r, w);
      ASSERT_GE(col, 0);
      ASSERT_LE(col + kRunLen, n_in);
      for (int i = 0; i < kRunLen; ++i) {
        ++seen[static_cast<size_t>(col + i)];
        const double diff = std::fabs(static_cast<double>(w[i]) - want[static_cast<size_t>(col + i)]);
        if (!(diff <= slack * top) && bad++ < 5) {
          ADD_FAILURE() << "unit " << u << " run " << r << " column " << col + i << ": " << w[i] << " vs "
                        << want[static_cast<size_t>(col + i)];
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "column " << i;
}

TEST(MatvecDecode, EveryTypeDecodesToTheCpuValuesAtItsColumns) {
  constexpr double kFused = 0x1p-22;
  for (int64_t n_in : {256, 768, 4096}) {
    check<F32>(TensorType::F32, n_in, 0.0, 1);
    check<F16>(TensorType::F16, n_in, 0.0, 2);
    check<BF16>(TensorType::BF16, n_in, 0.0, 3);
    check<Q8_0>(TensorType::Q8_0, n_in, 0.0, 4);
    check<Q4_0>(TensorType::Q4_0, n_in, 0.0, 5);
    check<Q4_1>(TensorType::Q4_1, n_in, kFused, 6);
    check<Q4_K>(TensorType::Q4_K, n_in, kFused, 7);
    check<Q5_K>(TensorType::Q5_K, n_in, kFused, 8);
    check<Q6_K>(TensorType::Q6_K, n_in, 0.0, 9);
  }
}

TEST(MatvecDecode, BytesBecomeExactFloats) {
  for (uint32_t b = 0; b < 256; ++b) {
    const uint32_t word = b | (b << 8) | (b << 16) | (b << 24);
    EXPECT_EQ(byte_as_float<0>(word, 0.0f), static_cast<float>(b));
    EXPECT_EQ(byte_as_float<1>(word, 8.0f), static_cast<float>(b) - 8.0f);
    EXPECT_EQ(byte_as_float<2>(word, 32.0f), static_cast<float>(b) - 32.0f);
    EXPECT_EQ(byte_as_float<3>(word ^ 0x80808080u, 128.0f), static_cast<float>(static_cast<int8_t>(b)));
  }
}

}  // namespace matvec_decode_test
}  // namespace cohort::cuda::kernels::matvec_decode
