// The rows and the end shared by the matvec kernels (matvec_impl.cuh,
// matvec_q8_impl.cuh): where row i of a launch's parts (matvec_parts.h)
// lives, and the store: each lane of a warp holds partial sums of R rows
// for NT tokens; the 32 partials of each (row, token) are added by shuffles
// and lane r * NT + t stores row r, token t as F32 or BF16.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

#include "backend/cuda/matvec_parts.h"

namespace cohort::cuda::kernels {

template <typename OutT>
__device__ __forceinline__ void store(OutT* y, float v);
template <>
__device__ __forceinline__ void store<float>(float* y, float v) { *y = v; }
template <>
__device__ __forceinline__ void store<__nv_bfloat16>(__nv_bfloat16* y, float v) {
  *y = __float2bfloat16_rn(v);
}

// The part holding launch row `row` (< parts.rows()).
__device__ __forceinline__ int part_of(const MatvecParts& parts, int64_t row) {
  int p = 0;
#pragma unroll
  for (int i = 0; i + 1 < MatvecParts::kMaxParts; ++i) p += i + 1 < parts.n && row >= parts.end[i];
  return p;
}

__device__ __forceinline__ int64_t part_start(const MatvecParts& parts, int p) {
  return p == 0 ? 0 : MatvecParts::pick(parts.end, p - 1);
}

// The bytes of launch row `row`; past the last row, the last row again (a
// warp's rows past the end are read, not stored: the loop stays free of
// branches). kOnePart: parts.n == 1, without the lookups.
template <bool kOnePart>
__device__ __forceinline__ const uint8_t* weight_row(const MatvecParts& parts, int64_t row, int64_t row_bytes) {
  if constexpr (kOnePart) {
    return static_cast<const uint8_t*>(parts.w[0]) + (row < parts.end[0] ? row : parts.end[0] - 1) * row_bytes;
  }
  if (row >= parts.rows()) row = parts.rows() - 1;
  const int p = part_of(parts, row);
  return static_cast<const uint8_t*>(MatvecParts::pick(parts.w, p)) + (row - part_start(parts, p)) * row_bytes;
}

// y of each part [NT, its n_out], launch rows row0 .. row0 + R (those below
// parts.rows()) = the warp's sums of acc. Every lane of the warp calls it.
// kOnePart as weight_row's.
template <int R, int NT, typename OutT, bool kOnePart>
__device__ __forceinline__ void reduce_and_store(float (&acc)[R][NT], int lane, int64_t row0,
                                                 const MatvecParts& parts) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) {
        acc[r][t] += __shfl_xor_sync(0xFFFFFFFFu, acc[r][t], offset);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (kOnePart && lane == r * NT + t && row0 + r < parts.end[0]) {
        store(static_cast<OutT*>(parts.y[0]) + t * parts.end[0] + row0 + r, acc[r][t]);
      } else if (!kOnePart && lane == r * NT + t && row0 + r < parts.rows()) {
        const int p = part_of(parts, row0 + r);
        const int64_t start = part_start(parts, p), n_out = MatvecParts::pick(parts.end, p) - start;
        store(static_cast<OutT*>(MatvecParts::pick(parts.y, p)) + t * n_out + row0 + r - start, acc[r][t]);
      }
    }
  }
}

}  // namespace cohort::cuda::kernels
