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

// Every lane's acc = the sums of the warp's acc (shuffles).
template <int R, int NT>
__device__ __forceinline__ void warp_sums(float (&acc)[R][NT]) {
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
}

template <int R, int NT, typename OutT>
__device__ __forceinline__ void store_rows(const float (&acc)[R][NT], int lane, const WarpRows<OutT>& wr) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (lane == r * NT + t && wr.row0 + r < wr.n_out) store(wr.y + t * wr.n_out + wr.row0 + r, acc[r][t]);
    }
  }
}

// y [NT, n_out] rows row0 .. row0 + R of the warp's part (those below n_out)
// = the warp's sums of acc. Every lane of the warp calls it.
template <int R, int NT, typename OutT>
__device__ __forceinline__ void reduce_and_store(float (&acc)[R][NT], int lane, const WarpRows<OutT>& wr) {
  warp_sums(acc);
  store_rows<R, NT, OutT>(acc, lane, wr);
}

// Rows split over the KS warps of a block (split_units): the same rows'
// sums of the block's warps, added in warp order through shared memory, and
// stored by warp 0. Every thread of the block calls it.
template <int KS, int R, int NT, typename OutT>
__device__ __forceinline__ void reduce_split_and_store(float (&acc)[R][NT], int lane, int warp,
                                                       const WarpRows<OutT>& wr) {
  static_assert(KS > 1);
  __shared__ float partial[KS - 1][R][NT];
  warp_sums(acc);
  if (warp > 0 && lane == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int t = 0; t < NT; ++t) partial[warp - 1][r][t] = acc[r][t];
    }
  }
  __syncthreads();
  if (warp > 0) return;
#pragma unroll
  for (int k = 0; k < KS - 1; ++k) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int t = 0; t < NT; ++t) acc[r][t] += partial[k][r][t];
    }
  }
  store_rows<R, NT, OutT>(acc, lane, wr);
}

// The F32-decoding matvec's warps a multiprocessor may hold at one token
// (46 registers on sm_90 for BF16: 10 blocks of 4 warps), counted low.
inline constexpr int64_t kMatvecWarpsPerSm = 28;

// The warps sharing each group of rows at one token in the F32-decoding
// matvec: 2 (a block of two warps a group, lane l of warp k taking units
// 32 k + l, + 64, ...) where a warp a group would leave multiprocessors
// short of warps, so of loads in flight, and each warp still has a unit for
// each lane; else 1. The 4096-row projections of an 8B model (q, k, v;
// output; down) ran as 2,048-3,072 warps, 15-23 a multiprocessor; split,
// BF16 tg128 went 220.8 -> 232.6 t/s on an H200. The int8 matvec, split
// the same way, lost (Q4_K 460 -> 445, Q8_0 345 -> 338), and split only
// where each warp keeps three units a lane (the down projection) lost too
// (PERFORMANCE.md, "a streaming int8 matvec"), so it is not.
inline int split_units(int64_t groups, int64_t n_units, int sm_count) {
  return groups < kMatvecWarpsPerSm * sm_count && n_units >= 64 ? 2 : 1;
}

}  // namespace cohort::cuda::kernels
