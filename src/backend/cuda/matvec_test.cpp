#include "backend/cuda/matvec.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_test_util.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/kernel_test_util.h"
#include "common/error.h"
#include "quant/quant.h"

namespace cohort::cuda {
namespace matvec_test {

using gguf::TensorType;
using testing::within;

constexpr TensorType kTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                                 TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1,
                                 TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

// Tolerances on the relative L2 error against the F64 reference of the same
// (dequantized) weights and BF16 activations. F32 outputs differ only by F32
// rounding in the sums: about sqrt(n_in / 32) * 2^-24 ~ 1e-6 at n_in 14336;
// 3e-5 leaves room and still catches any wrong weight or column. BF16
// outputs add their rounding, 2^-8..2^-9 relative per element (an RMS of
// about 1.6e-3); 5e-3 is three times that.
constexpr double kTolF32 = 3e-5;
constexpr double kTolBf16 = 5e-3;
constexpr int kMaxTok = 8;

struct Weights {
  std::vector<uint8_t> bytes;   // the GGUF rows, made by the project's quantizer
  std::vector<float> values;    // what the CPU dequantizer makes of them
};

Weights make_weights(TensorType type, const std::vector<float>& f, int64_t n_in, int64_t n_out) {
  Weights w;
  const size_t row = gguf::row_bytes(type, n_in);
  w.bytes.resize(row * static_cast<size_t>(n_out));
  w.values.resize(f.size());
  testing::parallel_ranges(n_out, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      quant::quantize(type, f.data() + r * n_in, w.bytes.data() + r * row, n_in);
      quant::dequantize(type, w.bytes.data() + r * row, w.values.data() + r * n_in, n_in);
    }
  });
  return w;
}

// want [n_tok, n_out] = x · Wᵀ in F64.
std::vector<double> reference(const std::vector<float>& w, const std::vector<float>& x, int64_t n_tok,
                              int64_t n_in, int64_t n_out) {
  std::vector<double> y(static_cast<size_t>(n_tok * n_out));
  testing::parallel_ranges(n_out, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const float* wr = w.data() + o * n_in;
      for (int64_t t = 0; t < n_tok; ++t) {
        const float* xr = x.data() + t * n_in;
        double s = 0.0;
        for (int64_t i = 0; i < n_in; ++i) s += static_cast<double>(wr[i]) * xr[i];
        y[static_cast<size_t>(t * n_out + o)] = s;
      }
    }
  });
  return y;
}

// Runs every n_tok in 1..n_tok_max with both output types against `want`.
void check_all_token_counts(TensorType type, const Weights& w, const DeviceBuffer<uint16_t>& x,
                            const std::vector<double>& want, int64_t n_tok_max, int64_t n_in,
                            int64_t n_out) {
  DeviceBuffer<uint8_t> dw(w.bytes.size());
  dw.upload(w.bytes);
  DeviceBuffer<float> y32(static_cast<size_t>(n_tok_max * n_out));
  DeviceBuffer<uint16_t> y16(static_cast<size_t>(n_tok_max * n_out));
  for (int64_t n_tok = 1; n_tok <= n_tok_max; ++n_tok) {
    const std::string what = std::string(gguf::type_name(type)) + " " + std::to_string(n_in) + "->" +
                             std::to_string(n_out) + " n_tok " + std::to_string(n_tok);
    testing::poison(y32);
    testing::poison(y16);
    matvec(type, dw.data(), testing::as_bf16(x), y32.data(), OutType::f32, n_tok, n_in, n_out, nullptr);
    matvec(type, dw.data(), testing::as_bf16(x), y16.data(), OutType::bf16, n_tok, n_in, n_out, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    const size_t n = static_cast<size_t>(n_tok * n_out);
    const std::vector<float> got32 = y32.download();
    const std::vector<float> got16 = testing::bf16_values(y16.download());
    const double e32 = testing::relative_l2(got32.data(), want.data(), n);
    const double e16 = testing::relative_l2(got16.data(), want.data(), n);
    testing::report(what + " f32 out", e32, kTolF32);
    testing::report(what + " bf16 out", e16, kTolBf16);
    EXPECT_TRUE(within(e32, kTolF32)) << what << ": f32 out " << e32;
    EXPECT_TRUE(within(e16, kTolBf16)) << what << ": bf16 out " << e16;
    // The rows past n_tok must be untouched (still the poison).
    if (n_tok < n_tok_max) {
      EXPECT_TRUE(std::isnan(y32.download()[n]));
    }
  }
}

void check_shape(int64_t n_in, int64_t n_out, int64_t n_tok_max, uint32_t seed) {
  std::mt19937 rng(seed);
  const testing::Bf16Data x = testing::random_bf16(static_cast<size_t>(n_tok_max * n_in), rng);
  DeviceBuffer<uint16_t> dx(x.bits.size());
  dx.upload(x.bits);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> f(static_cast<size_t>(n_in * n_out));
  for (float& v : f) v = normal(rng);
  for (TensorType type : kTypes) {
    if (n_in % gguf::traits(type).block_size != 0) continue;
    SCOPED_TRACE(std::string(gguf::type_name(type)));
    const Weights w = make_weights(type, f, n_in, n_out);
    const std::vector<double> want = reference(w.values, x.values, n_tok_max, n_in, n_out);
    check_all_token_counts(type, w, dx, want, n_tok_max, n_in, n_out);
  }
}

TEST(CudaMatvec, MatchesTheCpuOnSmallAndOddShapes) {
  COHORT_REQUIRE_CUDA_DEVICE();
  check_shape(256, 1, kMaxTok, 1);
  check_shape(512, 37, kMaxTok, 2);     // n_out not a multiple of the rows per block
  check_shape(96, 129, kMaxTok, 3);     // n_in of a few 32-blocks: no K-quant, fewer units than lanes
  check_shape(2816, 75, 13, 4);         // 11 super-blocks; n_tok past 8 runs in two passes
}

TEST(CudaMatvec, MatchesTheCpuOnLlama3_8bShapes) {
  COHORT_REQUIRE_CUDA_DEVICE();
  check_shape(4096, 4096, kMaxTok, 5);   // attention projections
  check_shape(4096, 14336, kMaxTok, 6);  // gate / up
  check_shape(14336, 4096, kMaxTok, 7);  // down
}

TEST(CudaMatvec, RejectsBadShapesTypesAndAlignment) {
  const auto* x = reinterpret_cast<const __nv_bfloat16*>(uintptr_t{256});
  void* w = reinterpret_cast<void*>(uintptr_t{256});
  void* y = reinterpret_cast<void*>(uintptr_t{256});
  EXPECT_THROW(matvec(TensorType::Q4_K, w, x, y, OutType::f32, 1, 128, 4, nullptr), Error);
  EXPECT_THROW(matvec(TensorType::F16, w, x, y, OutType::f32, 1, 24, 4, nullptr), Error);
  EXPECT_THROW(matvec(TensorType::Q5_0, w, x, y, OutType::f32, 1, 256, 4, nullptr), Error);
  EXPECT_THROW(matvec(TensorType::F32, w, x + 1, y, OutType::f32, 1, 256, 4, nullptr), Error);
  EXPECT_THROW(matvec(TensorType::Q4_K, static_cast<char*>(w) + 2, x, y, OutType::f32, 1, 256, 4, nullptr),
               Error);
  EXPECT_THROW(matvec(TensorType::F32, w, x, y, OutType::f32, -1, 256, 4, nullptr), Error);
  for (TensorType type : kTypes) EXPECT_TRUE(can_matvec(type));
  EXPECT_FALSE(can_matvec(TensorType::Q2_K));
}

}  // namespace matvec_test
}  // namespace cohort::cuda
