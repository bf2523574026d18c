// The int8 matvec on the host: the activation quantizer's blocks, and the
// decoders of matvec_q8_decode.cuh compiled for the host (dp4a stand-in)
// against the F64 product of the dequantized weights and the same quantized
// activations. This pins the unpacking and scale arithmetic without a GPU.
#include "backend/cuda/matvec_q8_decode.cuh"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/matvec_q8.h"
#include "backend/cuda/matvec_q8_test_util.h"
#include "common/error.h"
#include "common/half.h"

namespace cohort::cuda::kernels::matvec_q8 {
namespace matvec_q8_decode_test {

using gguf::TensorType;

TEST(MatvecQ8Host, ActivationBlocksRoundToTheirScale) {
  const int64_t n_tok = 3, n_in = 256;
  std::mt19937 rng(11);
  cuda::testing::Bf16Data x = cuda::testing::random_bf16(static_cast<size_t>(n_tok * n_in), rng, 3.0f);
  for (int i = 64; i < 96; ++i) x.bits[static_cast<size_t>(i)] = 0;  // an all-zero block: d = 0, q = 0
  x.values = cuda::testing::bf16_values(x.bits);
  ASSERT_EQ(q8_activation_bytes(n_tok, n_in), static_cast<size_t>(n_tok * n_in * 5 / 4));
  std::vector<uint8_t> xq(q8_activation_bytes(n_tok, n_in));
  quantize_activations_host(x.bits.data(), n_tok, n_in, xq.data());
  const auto* q = reinterpret_cast<const int8_t*>(xq.data());
  for (int64_t b = 0; b < n_tok * n_in / 32; ++b) {
    float2 ds;
    std::memcpy(&ds, xq.data() + n_tok * n_in + b * 8, sizeof ds);
    float amax = 0.0f;
    int sum = 0, qmax = 0;
    for (int64_t i = 32 * b; i < 32 * b + 32; ++i) amax = std::max(amax, std::fabs(x.values[static_cast<size_t>(i)]));
    EXPECT_EQ(ds.x, amax / 127.0f) << "block " << b;
    for (int64_t i = 32 * b; i < 32 * b + 32; ++i) {
      sum += q[i];
      qmax = std::max(qmax, std::abs(static_cast<int>(q[i])));
      // Rounded to nearest: |x - d q| <= d / 2 (and a little F32 slack).
      EXPECT_LE(std::fabs(x.values[static_cast<size_t>(i)] - ds.x * q[i]), 0.5f * ds.x * 1.0001f + 1e-30f);
    }
    EXPECT_EQ(qmax, amax > 0.0f ? 127 : 0) << "block " << b;
    EXPECT_EQ(ds.y, ds.x * static_cast<float>(sum)) << "block " << b;
  }
}

// Every row through D's load / prepare / dot, unit by unit, as the kernel
// does for one token; against the F64 reference of the dequantized weights
// times the dequantized activations. Only F32 rounding differs: the
// per-block scale products and the running sum, ~1e-7 relative.
template <typename D>
void check(TensorType type, int64_t n_in, uint32_t seed) {
  SCOPED_TRACE(std::string(gguf::type_name(type)) + " n_in " + std::to_string(n_in));
  const int64_t n_out = 16;
  std::mt19937 rng(seed);
  const cuda::testing::QuantWeights w = cuda::testing::quant_weights(type, n_in, n_out, rng);
  const cuda::testing::Bf16Data x = cuda::testing::random_bf16(static_cast<size_t>(n_in), rng);
  const cuda::testing::QuantActivations xq = cuda::testing::quant_activations(x.bits, 1, n_in);
  const std::vector<double> want = cuda::testing::reference_f64(w.values, xq.values, 1, n_in, n_out);
  const auto* q = reinterpret_cast<const int8_t*>(xq.bytes.data());
  std::vector<float2> ds(static_cast<size_t>(n_in / 32));
  std::memcpy(ds.data(), xq.bytes.data() + n_in, ds.size() * sizeof(float2));
  const size_t row_bytes = gguf::row_bytes(type, n_in);
  ASSERT_EQ(row_bytes, static_cast<size_t>(n_in / D::kBlockElems * D::kBlockBytes));
  std::vector<float> got(static_cast<size_t>(n_out));
  for (int64_t o = 0; o < n_out; ++o) {
    const uint8_t* row = w.bytes.data() + o * row_bytes;
    float acc = 0.0f;
    for (int64_t u = 0; u < n_in / D::kUnitElems; ++u) acc = D::dot(D::prepare(D::load(row, u), u), D::load_x(u, q, ds.data()), acc);
    got[static_cast<size_t>(o)] = acc;
  }
  const double err = cuda::testing::relative_l2(got.data(), want.data(), got.size());
  EXPECT_LE(err, 3e-6) << "relative L2 error";
}

TEST(MatvecQ8Host, EveryDecoderMatchesTheDequantizedProduct) {
  for (int64_t n_in : {256, 768, 4096}) {
    check<Q8_0>(TensorType::Q8_0, n_in, 1);
    check<Q4_0>(TensorType::Q4_0, n_in, 2);
    check<Q4_1>(TensorType::Q4_1, n_in, 3);
    check<Q4_K>(TensorType::Q4_K, n_in, 4);
    check<Q5_K>(TensorType::Q5_K, n_in, 5);
    check<Q6_K>(TensorType::Q6_K, n_in, 6);
  }
  check<Q8_0>(TensorType::Q8_0, 96, 7);
  check<Q4_0>(TensorType::Q4_0, 96, 8);
  check<Q4_1>(TensorType::Q4_1, 96, 9);
}

}  // namespace matvec_q8_decode_test
}  // namespace cohort::cuda::kernels::matvec_q8
