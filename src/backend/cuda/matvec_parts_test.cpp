// matvec_parts and matvec_q8_parts: several matrices in one launch give,
// part by part, the bits that one launch per matrix gives (each row's
// arithmetic is the same; only where its output goes differs).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_test_util.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/matvec.h"
#include "backend/cuda/matvec_q8.h"
#include "backend/cuda/matvec_q8_test_util.h"
#include "common/error.h"

namespace cohort::cuda {
namespace matvec_parts_test {

using gguf::TensorType;

constexpr int64_t kNIn = 512;
// A q projection and two small ones, as q, k and v: the parts' rows meet
// inside a warp's rows (37 and 29 are odd).
constexpr int64_t kNOut[] = {100, 37, 29};
// One pass of the global-x kernels, the shared-x ones, and two passes.
constexpr int64_t kTokenCounts[] = {1, 3, 6, 11};
constexpr int64_t kMaxTok = 11;

struct Matrices {
  std::vector<DeviceBuffer<uint8_t>> w;
  std::vector<DeviceBuffer<uint16_t>> joint, alone;  // outputs [kMaxTok, n_out] of each part
};

Matrices make(TensorType type, std::mt19937& rng) {
  Matrices m;
  for (int64_t n_out : kNOut) {
    const testing::QuantWeights w = testing::quant_weights(type, kNIn, n_out, rng);
    m.w.emplace_back(w.bytes.size());
    m.w.back().upload(w.bytes);
    m.joint.emplace_back(static_cast<size_t>(kMaxTok * n_out));
    m.alone.emplace_back(static_cast<size_t>(kMaxTok * n_out));
  }
  return m;
}

// Runs `one` per part into alone and `all` into joint, then compares.
template <typename One, typename All>
void expect_parts_equal(const std::string& what, Matrices& m, One one, All all) {
  std::vector<MatvecPart> parts;
  for (size_t p = 0; p < m.w.size(); ++p) {
    testing::poison(m.joint[p]);
    testing::poison(m.alone[p]);
    one(m.w[p].data(), m.alone[p].data(), kNOut[p]);
    parts.push_back({m.w[p].data(), m.joint[p].data(), kNOut[p]});
  }
  all(std::span<const MatvecPart>(parts));
  CUDA_CHECK(cudaDeviceSynchronize());
  for (size_t p = 0; p < m.w.size(); ++p) {
    EXPECT_EQ(m.joint[p].download(), m.alone[p].download()) << what << ", part " << p;
  }
}

TEST(CudaMatvecParts, EachPartEqualsItsOwnLaunch) {
  COHORT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(11);
  const testing::Bf16Data x = testing::random_bf16(static_cast<size_t>(kMaxTok * kNIn), rng);
  DeviceBuffer<uint16_t> dx(x.bits.size());
  dx.upload(x.bits);
  DeviceBuffer<uint8_t> xq(q8_activation_bytes(kMaxTok, kNIn));
  for (TensorType type : {TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_K,
                          TensorType::Q6_K}) {
    Matrices m = make(type, rng);
    for (int64_t n_tok : kTokenCounts) {
      const std::string what = std::string(gguf::type_name(type)) + " n_tok " + std::to_string(n_tok);
      const auto* xb = testing::as_bf16(dx);
      expect_parts_equal(
          what + " matvec", m,
          [&](const void* w, void* y, int64_t n_out) {
            matvec(type, w, xb, y, OutType::bf16, n_tok, kNIn, n_out, nullptr);
          },
          [&](std::span<const MatvecPart> parts) {
            matvec_parts(type, parts, xb, OutType::bf16, n_tok, kNIn, nullptr);
          });
      if (!can_matvec_q8(type)) continue;
      quantize_activations(xb, n_tok, kNIn, xq.data(), nullptr);
      for (const Q8XSource source : {Q8XSource::shared_where_it_fits, Q8XSource::global}) {
        expect_parts_equal(
            what + (source == Q8XSource::global ? " matvec_q8 x global" : " matvec_q8"), m,
            [&](const void* w, void* y, int64_t n_out) {
              matvec_q8(type, w, xq.data(), y, OutType::bf16, n_tok, kNIn, n_out, nullptr, source);
            },
            [&](std::span<const MatvecPart> parts) {
              matvec_q8_parts(type, parts, xq.data(), OutType::bf16, n_tok, kNIn, nullptr, source);
            });
      }
    }
  }
}

TEST(CudaMatvecParts, RejectsNoPartsAndTooMany) {
  const auto* x = reinterpret_cast<const __nv_bfloat16*>(uintptr_t{256});
  void* p = reinterpret_cast<void*>(uintptr_t{256});
  const std::vector<MatvecPart> four(4, MatvecPart{p, p, 4});
  EXPECT_THROW(matvec_parts(TensorType::BF16, {}, x, OutType::bf16, 1, 256, nullptr), Error);
  EXPECT_THROW(matvec_parts(TensorType::BF16, four, x, OutType::bf16, 1, 256, nullptr), Error);
  EXPECT_THROW(matvec_q8_parts(TensorType::Q8_0, {}, p, OutType::bf16, 1, 256, nullptr), Error);
  EXPECT_THROW(matvec_q8_parts(TensorType::Q8_0, four, p, OutType::bf16, 1, 256, nullptr), Error);
}

}  // namespace matvec_parts_test
}  // namespace cohort::cuda
