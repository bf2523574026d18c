// The int8 tensor-core matmul (mmq.h) on the GPU against the F64 products
// of the CPU-dequantized weights with the same quantized activations (only
// F32 rounding differs) and with the BF16 x (adds the int8 rounding of x),
// for every type at token counts across the tiles and passes, one matrix
// and several parts; the activations read directly and staged in shared
// memory (the same bits); and its refusals.
#include "backend/cuda/mmq.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_test_util.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/kernel_test_util.h"
#include "backend/cuda/matvec_q8.h"
#include "backend/cuda/matvec_q8_test_util.h"
#include "common/error.h"

namespace cohort::cuda {
namespace mmq_test {

using gguf::TensorType;
using testing::within;

// 1 and 7: one partial tile; 9, 17: a partial last tile; 32: every tile
// of a pass full; 41: two passes, the second partial.
constexpr int64_t kTokenCounts[] = {1, 7, 8, 9, 17, 32, 41};
constexpr int64_t kMaxTok = 41;
// As matvec_q8_test.cpp: against d * q only F32 rounding remains; against
// x the int8 rounding of x (~5.7e-3 relative L2 with BF16 output).
constexpr double kTolF32 = 3e-5, kTolBf16 = 5e-3, kTolX = 1e-2;

struct Weights {
  TensorType type;
  int64_t n_in, n_out;
  DeviceBuffer<uint8_t> w;
  std::vector<double> want_q, want_x;  // [kMaxTok, n_out]
};

Weights make_weights(TensorType type, int64_t n_in, int64_t n_out, const testing::Bf16Data& x,
                     const testing::QuantActivations& xq, std::mt19937& rng) {
  const testing::QuantWeights w = testing::quant_weights(type, n_in, n_out, rng);
  Weights out{type, n_in, n_out, DeviceBuffer<uint8_t>(w.bytes.size()),
              testing::reference_f64(w.values, xq.values, kMaxTok, n_in, n_out),
              testing::reference_f64(w.values, x.values, kMaxTok, n_in, n_out)};
  out.w.upload(w.bytes);
  return out;
}

// The first n_tok rows of got (F32 values) against the references.
void compare(const std::string& what, std::vector<float> got, const Weights& w, int64_t n_tok, double tol_q) {
  const auto n = static_cast<size_t>(n_tok * w.n_out);
  got.resize(n);
  const double eq = testing::relative_l2(got.data(), w.want_q.data(), n);
  const double ex = testing::relative_l2(got.data(), w.want_x.data(), n);
  testing::report(what + " vs d*q", eq, tol_q);
  EXPECT_TRUE(within(eq, tol_q)) << what << " vs quantized x: " << eq;
  if (n >= 32) {
    EXPECT_TRUE(within(ex, kTolX)) << what << " vs x: " << ex;
  }
}

void check_shape(int64_t n_in, int64_t n_out, uint32_t seed) {
  static const MmqStaging default_staging = mmq_staging();
  std::mt19937 rng(seed);
  const testing::Bf16Data x = testing::random_bf16(static_cast<size_t>(kMaxTok * n_in), rng);
  DeviceBuffer<uint16_t> dx(x.bits.size());
  dx.upload(x.bits);
  DeviceBuffer<uint8_t> xq(q8_activation_bytes(kMaxTok, n_in));
  DeviceBuffer<float> y32(static_cast<size_t>(kMaxTok * n_out));
  DeviceBuffer<uint16_t> y16(static_cast<size_t>(kMaxTok * n_out));
  // The references are of kMaxTok tokens; quantization is per row, so
  // their first n_tok rows are those of n_tok tokens.
  const testing::QuantActivations hq = testing::quant_activations(x.bits, kMaxTok, n_in);
  for (TensorType type : testing::kQ8Types) {
    if (!can_mmq(type, n_in)) continue;
    const Weights w = make_weights(type, n_in, n_out, x, hq, rng);
    for (int64_t n_tok : kTokenCounts) {
      const std::string what = std::string(gguf::type_name(type)) + " " + std::to_string(n_in) + "->" +
                               std::to_string(n_out) + " n_tok " + std::to_string(n_tok);
      testing::poison(xq);
      quantize_activations(testing::as_bf16(dx), n_tok, n_in, xq.data(), nullptr);
      std::vector<float> direct;
      for (const MmqStaging staging : {MmqStaging::never, MmqStaging::always}) {
        set_mmq_staging(staging);
        testing::poison(y32);
        testing::poison(y16);
        mmq(type, w.w.data(), xq.data(), y32.data(), OutType::f32, n_tok, n_in, n_out, nullptr);
        mmq(type, w.w.data(), xq.data(), y16.data(), OutType::bf16, n_tok, n_in, n_out, nullptr);
        CUDA_CHECK(cudaDeviceSynchronize());
        const std::vector<float> got32 = y32.download();
        const std::string how = what + (staging == MmqStaging::always ? " staged" : " direct");
        if (n_tok < kMaxTok) {
          EXPECT_TRUE(std::isnan(got32[static_cast<size_t>(n_tok * n_out)])) << how << ": wrote past n_tok";
        }
        compare(how + " f32 out", got32, w, n_tok, kTolF32);
        compare(how + " bf16 out", testing::bf16_values(y16.download()), w, n_tok, kTolBf16);
        if (staging == MmqStaging::never) {
          direct = got32;
        } else {
          EXPECT_TRUE(std::equal(direct.begin(), direct.end(), got32.begin(), [](float a, float b) {
            return std::memcmp(&a, &b, sizeof a) == 0;
          })) << how << ": not the bits of the direct reads";
        }
      }
      set_mmq_staging(default_staging);
    }
  }
}

TEST(CudaMmq, MatchesTheCpuOnSmallAndOddShapes) {
  COHORT_REQUIRE_CUDA_DEVICE();
  check_shape(256, 16, 1);
  check_shape(512, 37, 2);   // rows not a multiple of the 16 of a block
  check_shape(384, 5, 3);    // three Q8_0 steps; fewer rows than a tile
  check_shape(2816, 75, 4);  // 11 super-blocks: the split warps take unequal shares
}

TEST(CudaMmq, MatchesTheCpuOnLargeShapes) {
  COHORT_REQUIRE_CUDA_DEVICE();
  check_shape(4096, 256, 5);
  check_shape(14336, 48, 6);
}

// q, k and v as one launch against each alone: the same bits.
TEST(CudaMmq, PartsEqualSeparateLaunches) {
  COHORT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(7);
  const int64_t n_in = 512, n_tok = 21;
  const std::vector<int64_t> rows = {64, 24, 8};
  const testing::Bf16Data x = testing::random_bf16(static_cast<size_t>(n_tok * n_in), rng);
  DeviceBuffer<uint16_t> dx(x.bits.size());
  dx.upload(x.bits);
  DeviceBuffer<uint8_t> xq(q8_activation_bytes(n_tok, n_in));
  quantize_activations(testing::as_bf16(dx), n_tok, n_in, xq.data(), nullptr);
  for (TensorType type : {TensorType::Q4_K, TensorType::Q8_0}) {
    testing::expect_parts_equal_alone(
        type, n_in, n_tok, rows, rng,
        [&](std::span<const MatvecPart> parts) {
          mmq_parts(type, parts, xq.data(), OutType::bf16, n_tok, n_in, nullptr);
        },
        [&](const void* w, void* y, int64_t n_out) {
          mmq(type, w, xq.data(), y, OutType::bf16, n_tok, n_in, n_out, nullptr);
        });
  }
}

TEST(CudaMmq, RefusesWhatItCannotDo) {
  const void* xq = reinterpret_cast<const void*>(uintptr_t{256});
  void* w = reinterpret_cast<void*>(uintptr_t{256});
  void* y = reinterpret_cast<void*>(uintptr_t{256});
  EXPECT_FALSE(can_mmq(TensorType::Q8_0, 96));  // not whole steps of four blocks
  EXPECT_FALSE(can_mmq(TensorType::BF16, 256));
  EXPECT_FALSE(can_mmq(TensorType::Q4_K, 128));
  EXPECT_TRUE(can_mmq(TensorType::Q4_K, 4096));
  EXPECT_GT(mmq_range(TensorType::Q4_K, 4096).max, 0);
  EXPECT_EQ(mmq_range(TensorType::BF16, 4096).max, 0);  // no count
  EXPECT_EQ(mmq_range(TensorType::Q8_0, 96).max, 0);
  EXPECT_THROW(mmq(TensorType::Q8_0, w, xq, y, OutType::f32, 1, 96, 4, nullptr), Error);
  EXPECT_THROW(mmq(TensorType::F16, w, xq, y, OutType::f32, 1, 256, 4, nullptr), Error);
  EXPECT_THROW(mmq(TensorType::Q4_K, static_cast<char*>(w) + 2, xq, y, OutType::f32, 1, 256, 4, nullptr), Error);
  EXPECT_THROW(mmq(TensorType::Q4_K, w, xq, y, OutType::f32, -1, 256, 4, nullptr), Error);
}

}  // namespace mmq_test
}  // namespace cohort::cuda
