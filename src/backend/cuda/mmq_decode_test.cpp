// The tensor-core matmul's decoders (mmq_decode.cuh) on the host: every
// thread's fragment words and scales of every sub-block, multiplied with
// the int8 activations at the columns the kernel pairs them with (8t ..
// 8t + 7 of the sub-block, mmq_impl.cuh) and scaled as the kernel scales
// the mma's sums, against the F64 product of the dequantized weights and
// the same quantized activations. The mma itself is the GPU test's
// (mmq_test.cpp); this pins which bytes a thread holds and their scales.
#include "backend/cuda/mmq_decode.cuh"

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/matvec_q8_test_util.h"

namespace cohort::cuda::kernels::mmq {
namespace mmq_decode_test {

using gguf::TensorType;

constexpr int64_t kTokens = 3;

// acc[n] += sub-block J of step s times token n, as the kernel takes it:
// the four threads' fragments summed as integers (the mma; per half where
// a sub-block has two scales), then one scale (per half) and one offset,
// which must therefore be the same in the threads that share them.
template <typename D, int J>
void add_sub(const uint8_t* row, int64_t s, const int8_t* q, const float2* ds, int64_t n_in, float (&acc)[kTokens]) {
  constexpr int kPerHalf = 4 / D::kHalves;  // threads sharing a scale
  Sub sub[4];
  for (int t = 0; t < 4; ++t) {
    sub[t] = D::template sub<J>(D::load(row, s, t));
    const Sub& first = sub[t / kPerHalf * kPerHalf];
    EXPECT_EQ(sub[t].dl, first.dl) << "sub-block " << J << " thread " << t;
    EXPECT_EQ(sub[t].nml, sub[0].nml) << "sub-block " << J << " thread " << t;
  }
  const int64_t col0 = s * D::kStepElems + 32 * J;
  for (int64_t n = 0; n < kTokens; ++n) {
    const float2 x = ds[n * (n_in / 32) + col0 / 32];
    acc[n] = fmaf(sub[0].nml, x.y, acc[n]);
    for (int h = 0; h < D::kHalves; ++h) {
      int dot = 0;
      for (int t = h * kPerHalf; t < (h + 1) * kPerHalf; ++t) {
        for (int i = 0; i < 8; ++i) {
          const auto w = static_cast<int8_t>((sub[t].w[i / 4] >> (8 * (i % 4))) & 0xFFu);
          dot += w * q[n * n_in + col0 + 8 * t + i];
        }
      }
      acc[n] = fmaf(sub[h * kPerHalf].dl * x.x, static_cast<float>(dot), acc[n]);
    }
  }
}

template <typename D, int... J>
void add_step(const uint8_t* row, int64_t s, const int8_t* q, const float2* ds, int64_t n_in, float (&acc)[kTokens],
              std::integer_sequence<int, J...>) {
  (add_sub<D, J>(row, s, q, ds, n_in, acc), ...);
}

template <typename D>
void check(TensorType type, int64_t n_in, uint32_t seed) {
  SCOPED_TRACE(std::string(gguf::type_name(type)) + " n_in " + std::to_string(n_in));
  const int64_t n_out = 16;
  std::mt19937 rng(seed);
  const cuda::testing::QuantWeights w = cuda::testing::quant_weights(type, n_in, n_out, rng);
  const cuda::testing::Bf16Data x = cuda::testing::random_bf16(static_cast<size_t>(kTokens * n_in), rng);
  const cuda::testing::QuantActivations xq = cuda::testing::quant_activations(x.bits, kTokens, n_in);
  const std::vector<double> want = cuda::testing::reference_f64(w.values, xq.values, kTokens, n_in, n_out);
  const auto* q = reinterpret_cast<const int8_t*>(xq.bytes.data());
  std::vector<float2> ds(static_cast<size_t>(kTokens * n_in / 32));
  std::memcpy(ds.data(), xq.bytes.data() + kTokens * n_in, ds.size() * sizeof(float2));
  const size_t row_bytes = gguf::row_bytes(type, n_in);
  ASSERT_EQ(row_bytes, static_cast<size_t>(n_in / D::kBlockElems * D::kBlockBytes));
  ASSERT_EQ(n_in % D::kStepElems, 0);
  std::vector<float> got(static_cast<size_t>(kTokens * n_out));
  for (int64_t o = 0; o < n_out; ++o) {
    const uint8_t* row = w.bytes.data() + o * row_bytes;
    float acc[kTokens] = {};
    for (int64_t s = 0; s < n_in / D::kStepElems; ++s) {
      add_step<D>(row, s, q, ds.data(), n_in, acc, std::make_integer_sequence<int, D::kSubs>{});
    }
    for (int64_t n = 0; n < kTokens; ++n) got[static_cast<size_t>(n * n_out + o)] = acc[n];
  }
  EXPECT_LE(cuda::testing::relative_l2(got.data(), want.data(), got.size()), 3e-6) << "relative L2 error";
}

TEST(MmqHost, EveryDecoderMatchesTheDequantizedProduct) {
  for (int64_t n_in : {256, 768, 4096}) {
    check<Q8_0>(TensorType::Q8_0, n_in, 1);
    check<Q4_0>(TensorType::Q4_0, n_in, 2);
    check<Q4_1>(TensorType::Q4_1, n_in, 3);
    check<Q4_K>(TensorType::Q4_K, n_in, 4);
    check<Q5_K>(TensorType::Q5_K, n_in, 5);
    check<Q6_K>(TensorType::Q6_K, n_in, 6);
  }
  check<Q8_0>(TensorType::Q8_0, 384, 7);  // three steps of four blocks
}

}  // namespace mmq_decode_test
}  // namespace cohort::cuda::kernels::mmq
