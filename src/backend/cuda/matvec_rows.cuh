// The rows and the end shared by the matvec kernels (matvec_impl.cuh,
// matvec_q8_impl.cuh): where a warp's group of R rows of a launch's parts
// (matvec_parts.h) lives, and the store: each lane of a warp holds partial
// sums of R rows for NT tokens; the 32 partials of each (row, token) are
// added by shuffles and lane r * NT + t stores row r, token t as F32 or
// BF16.
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

// The R rows of group `g` of a launch: their part's weights and output,
// the part's rows, and the first row's index in it.
template <typename OutT>
struct WarpRows {
  const uint8_t* w;  // the part's row 0
  OutT* y;           // the part's y [NT, n_out]
  int64_t n_out;
  int64_t row0;      // in the part
  bool valid;        // g is a group of the launch
};

// kOnePart (parts.n == 1): the lookups left out, so that the compiler reads
// the part's pointers from the parameters where it needs them instead of
// keeping them in registers through the loop (46 registers against 68 for
// the BF16 matvec at one token on sm_90: 10 blocks a multiprocessor
// against 7).
template <int R, typename OutT, bool kOnePart>
__device__ __forceinline__ WarpRows<OutT> warp_rows(const MatvecParts& parts, int64_t g) {
  if constexpr (kOnePart) {
    return {static_cast<const uint8_t*>(parts.w[0]), static_cast<OutT*>(parts.y[0]), parts.n_out[0], g * R,
            g * R < parts.n_out[0]};
  }
  int p = 0;
  int64_t first = 0, end = 0;  // the part's first group; the groups of parts 0..i
#pragma unroll
  for (int i = 0; i + 1 < MatvecParts::kMaxParts; ++i) {
    end += MatvecParts::groups_of(parts.n_out[i], R);
    if (i + 1 < parts.n && g >= end) {
      p = i + 1;
      first = end;
    }
  }
  const int64_t n_out = MatvecParts::pick(parts.n_out, p);
  const int64_t row0 = (g - first) * R;
  return {static_cast<const uint8_t*>(MatvecParts::pick(parts.w, p)), static_cast<OutT*>(MatvecParts::pick(parts.y, p)),
          n_out, row0, row0 < n_out};
}

// The bytes of row row0 + r of the warp's part; past its last row, the last
// row again (read, not stored: the loop stays free of branches).
template <typename OutT>
__device__ __forceinline__ const uint8_t* weight_row(const WarpRows<OutT>& wr, int r, int64_t row_bytes) {
  const int64_t row = wr.row0 + r;
  return wr.w + (row < wr.n_out ? row : wr.n_out - 1) * row_bytes;
}

// y [NT, n_out] rows row0 .. row0 + R of the warp's part (those below n_out)
// = the warp's sums of acc. Every lane of the warp calls it.
template <int R, int NT, typename OutT>
__device__ __forceinline__ void reduce_and_store(float (&acc)[R][NT], int lane, const WarpRows<OutT>& wr) {
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
      if (lane == r * NT + t && wr.row0 + r < wr.n_out) store(wr.y + t * wr.n_out + wr.row0 + r, acc[r][t]);
    }
  }
}

}  // namespace cohort::cuda::kernels
