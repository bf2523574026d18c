// The BF16 tensor-core matmul of dequantized weights (mmd.h) on the GPU
// against the F64 products of the CPU-dequantized weights and the BF16 x
// (the weights' rounding to BF16 is what remains), for every type at token
// counts across the tiles and passes, one matrix and several parts, K split
// over clusters of several sizes; a token's result is the same bits
// whatever the batch holds; and its refusals.
#include "backend/cuda/mmd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_test_util.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/kernel_test_util.h"
#include "backend/cuda/matvec_q8_test_util.h"
#include "common/error.h"

namespace cohort::cuda {
namespace mmd_test {

using gguf::TensorType;
using testing::within;

// kMaxTok: two passes, the second partial; then 1 (one partial tile), 9,
// 16, 17 (the first pair of tiles, full and not), 40 and 64 (six and eight).
constexpr int64_t kMaxTok = 70;
// The weights rounded to BF16 (2^-9 relative at most, ~1.1e-3 RMS) against
// the exact products; the BF16 output adds ~1.6e-3.
constexpr double kTolF32 = 3e-3, kTolBf16 = 5e-3;
// The types with an offset (Q4_0, Q4_1, Q4_K, Q5_K) are dequantized in BF16
// pairs, their sub-block scale and offset rounded to BF16 first: each adds
// up to 2^-9 of |dl q| and |nml|, which exceed |w| where they cancel; the
// two roundings are shared by a sub-block's 32 weights, so they do not
// average out within a row (measured 5-7e-3 over 1,024 outputs, and 8.1e-3
// over the 16 of one token of 256 columns on other random data).
constexpr double kTolOffsetF32 = 1.2e-2, kTolOffsetBf16 = 1.4e-2;

bool has_offset(TensorType type) {
  return type == TensorType::Q4_0 || type == TensorType::Q4_1 || type == TensorType::Q4_K ||
         type == TensorType::Q5_K;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b, size_t n) {
  return std::memcmp(a.data(), b.data(), n * sizeof(float)) == 0;
}

void check_shape(int64_t n_in, int64_t n_out, uint32_t seed) {
  std::mt19937 rng(seed);
  const testing::Bf16Data x = testing::random_bf16(static_cast<size_t>(kMaxTok * n_in), rng);
  DeviceBuffer<uint16_t> dx(x.bits.size());
  dx.upload(x.bits);
  DeviceBuffer<float> y32(static_cast<size_t>(kMaxTok * n_out));
  DeviceBuffer<uint16_t> y16(static_cast<size_t>(kMaxTok * n_out));
  for (TensorType type : testing::kQ8Types) {
    if (!can_mmd(type, n_in)) continue;
    const testing::QuantWeights w = testing::quant_weights(type, n_in, n_out, rng);
    DeviceBuffer<uint8_t> dw(w.bytes.size());
    dw.upload(w.bytes);
    const std::vector<double> want = testing::reference_f64(w.values, x.values, kMaxTok, n_in, n_out);
    std::vector<float> all;  // kMaxTok tokens at once
    for (int64_t n_tok : {kMaxTok, int64_t{1}, int64_t{9}, int64_t{16}, int64_t{17}, int64_t{40}, int64_t{64}}) {
      const std::string what = std::string(gguf::type_name(type)) + " " + std::to_string(n_in) + "->" +
                               std::to_string(n_out) + " n_tok " + std::to_string(n_tok);
      testing::poison(y32);
      testing::poison(y16);
      mmd(type, dw.data(), testing::as_bf16(dx), y32.data(), OutType::f32, n_tok, n_in, n_out, nullptr);
      mmd(type, dw.data(), testing::as_bf16(dx), y16.data(), OutType::bf16, n_tok, n_in, n_out, nullptr);
      CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<float> got = y32.download();
      const auto n = static_cast<size_t>(n_tok * n_out);
      if (n_tok < kMaxTok) {
        EXPECT_TRUE(std::isnan(got[n])) << what << ": wrote past n_tok";
      }
      const double e32 = testing::relative_l2(got.data(), want.data(), n);
      const std::vector<float> got16 = testing::bf16_values(y16.download());
      const double e16 = testing::relative_l2(got16.data(), want.data(), n);
      const double tol32 = has_offset(type) ? kTolOffsetF32 : kTolF32;
      const double tol16 = has_offset(type) ? kTolOffsetBf16 : kTolBf16;
      testing::report(what + " f32 out", e32, tol32);
      EXPECT_TRUE(within(e32, tol32)) << what << " f32 out: " << e32;
      EXPECT_TRUE(within(e16, tol16)) << what << " bf16 out: " << e16;
      if (n_tok == kMaxTok) {
        all = got;
      } else {
        EXPECT_TRUE(same_bits(got, all, n)) << what << ": not the bits of the same tokens in a larger batch";
      }
    }
  }
}

TEST(CudaMmd, MatchesTheCpuOnSmallAndOddShapes) {
  COHORT_REQUIRE_CUDA_DEVICE();
  check_shape(256, 16, 1);
  check_shape(512, 37, 2);    // rows not a multiple of a warp's 16
  check_shape(384, 200, 3);   // three Q8_0 steps: clusters of 3 blocks, one step each
  check_shape(2816, 75, 4);   // 11 super-blocks over a cluster of 8: unequal shares
}

TEST(CudaMmd, MatchesTheCpuOnLargeShapes) {
  COHORT_REQUIRE_CUDA_DEVICE();
  check_shape(4096, 1024, 5);
  check_shape(14336, 300, 6);
}

// q, k and v as one launch against each alone: the same bits.
TEST(CudaMmd, PartsEqualSeparateLaunches) {
  COHORT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(7);
  const int64_t n_in = 512, n_tok = 21;
  const std::vector<int64_t> rows = {256, 24, 130};
  const testing::Bf16Data x = testing::random_bf16(static_cast<size_t>(n_tok * n_in), rng);
  DeviceBuffer<uint16_t> dx(x.bits.size());
  dx.upload(x.bits);
  // Every launch here splits K as far as its steps allow (2 for Q4_K, 4
  // for Q8_0), so the joint and the lone launches add in the same order.
  for (TensorType type : {TensorType::Q4_K, TensorType::Q8_0}) {
    testing::expect_parts_equal_alone(
        type, n_in, n_tok, rows, rng,
        [&](std::span<const MatvecPart> parts) {
          mmd_parts(type, parts, testing::as_bf16(dx), OutType::bf16, n_tok, n_in, nullptr);
        },
        [&](const void* w, void* y, int64_t n_out) {
          mmd(type, w, testing::as_bf16(dx), y, OutType::bf16, n_tok, n_in, n_out, nullptr);
        });
  }
}

TEST(CudaMmd, SplitsOnlyWhereRowsAreFew) {
  // Clusters of 1..8 blocks an H200 holds at once for Q4_K at 32 tokens.
  const std::vector<int> h200 = {264, 132, 79, 62, 47, 39, 32, 30};
  EXPECT_EQ(mmd_split(112, 16, h200), 2);  // 14,336 rows: one wave of 2 (8 steps), not two of 4 (8)
  EXPECT_EQ(mmd_split(224, 16, h200), 1);  // 28,672 rows (gate and up)
  EXPECT_EQ(mmd_split(1002, 16, h200), 1); // the output: 4 waves either way
  EXPECT_EQ(mmd_split(48, 16, h200), 4);   // 6,144 rows (q, k, v): 4 steps in one wave
  EXPECT_EQ(mmd_split(32, 16, h200), 6);   // 4,096 rows: 3 steps in one wave, not 2 in two of 8
  EXPECT_EQ(mmd_split(32, 56, h200), 7);   // 4,096 rows of 14,336 columns: 8 steps, not 2 x 7
  EXPECT_EQ(mmd_split(32, 3, h200), 3);    // no more than the steps
  EXPECT_EQ(mmd_split(0, 16, h200), 8);
  EXPECT_EQ(mmd_split(32, 16, std::vector<int>{264, 0, 0, 0}), 1);  // only what fits
}

TEST(CudaMmd, RefusesWhatItCannotDo) {
  const auto* x = reinterpret_cast<const __nv_bfloat16*>(uintptr_t{256});
  void* w = reinterpret_cast<void*>(uintptr_t{256});
  void* y = reinterpret_cast<void*>(uintptr_t{256});
  EXPECT_FALSE(can_mmd(TensorType::Q8_0, 96));
  EXPECT_FALSE(can_mmd(TensorType::BF16, 256));
  EXPECT_FALSE(can_mmd(TensorType::Q4_K, 128));
  EXPECT_TRUE(can_mmd(TensorType::Q4_K, 4096));
  EXPECT_THROW(mmd(TensorType::Q8_0, w, x, y, OutType::f32, 1, 96, 4, nullptr), Error);
  EXPECT_THROW(mmd(TensorType::F16, w, x, y, OutType::f32, 1, 256, 4, nullptr), Error);
  EXPECT_THROW(mmd(TensorType::Q4_K, static_cast<char*>(w) + 2, x, y, OutType::f32, 1, 256, 4, nullptr), Error);
  EXPECT_THROW(mmd(TensorType::Q4_K, w, x, y, OutType::f32, -1, 256, 4, nullptr), Error);
}

}  // namespace mmd_test
}  // namespace cohort::cuda
