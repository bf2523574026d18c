// The matvec kernel shared by every weight type (included by matvec_*.cu).
//
// A warp computes R consecutive output rows (rows_per_warp). Each row is cut
// into units of a few blocks' worth of bytes; lane l takes units l, l+32, ...
// so that consecutive lanes read consecutive bytes (coalesced). Units are
// loaded into registers A per row ahead of their use (units_ahead), decoded
// run by run (16 consecutive columns with their scale applied, in F32) and
// multiplied with the same 16 columns of every token's x (two 16-byte BF16
// loads per token, shared by the R rows), so each weight byte is read once
// for all NT tokens. The 32 partial sums of a row are added by warp shuffles.
//
// The decoders are in matvec_decode.cuh.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/matvec_decode.cuh"
#include "backend/cuda/matvec_kernels.h"
#include "backend/cuda/matvec_q8_kernels.h"  // resident_limits
#include "backend/cuda/matvec_rows.cuh"

namespace cohort::cuda::kernels::matvec_impl {

using matvec_decode::kRunLen;
// Rows (warps) per thread block. Untuned: 4 warps keep blocks small enough
// that 4096 rows fill 132 SMs several times over.
inline constexpr int kWarpsPerBlock = 4;
inline constexpr int kWarp = 32;
// Rows per warp for n_tok <= 4: the x of a run is loaded once for all of
// them and R units per lane are in flight. 2, except 1 for F32 (its 64-byte
// units keep enough bytes in flight; 2 rows measured 3-7% slower there).
// 8 tokens keep 1 (registers). COHORT_MATVEC_ROWS overrides it for tuning.
#ifndef COHORT_MATVEC_ROWS
#define COHORT_MATVEC_ROWS 2
#endif
template <typename D>
constexpr int rows_per_warp(int n_tok) {
  return n_tok > 4 ? 1 : D::kBlockElems == 1 && D::kBlockBytes == 4 ? 1 : COHORT_MATVEC_ROWS;
}
// Units of each row loaded ahead per lane. 1: on an H200, 2 (and 4 rows per
// warp) cost registers, hence warps per SM, and ran 0-20% slower at n_tok 1;
// L2 prefetches 64-384 bytes ahead per lane were slower too (2026-12-01).
// COHORT_MATVEC_AHEAD overrides it for tuning.
#ifndef COHORT_MATVEC_AHEAD
#define COHORT_MATVEC_AHEAD 1
#endif
constexpr int units_ahead(int n_tok) { return n_tok <= 4 ? COHORT_MATVEC_AHEAD : 1; }

// acc + sum_i w[i] * x[i] over 8 BF16 values packed in a uint4.
__device__ __forceinline__ float dot8(const float* w, uint4 x, float acc) {
  const uint32_t v[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    acc = fmaf(w[2 * i], __uint_as_float(v[i] << 16), acc);
    acc = fmaf(w[2 * i + 1], __uint_as_float(v[i] & 0xFFFF0000u), acc);
  }
  return acc;
}

// --- the kernel ------------------------------------------------------------

// Stage 2 of the kernel: unit u of each of the R rows (already in registers)
// times every token's x. Each run's 16 columns of x are loaded once and used
// for all R rows.
template <typename D, int NT, int R>
__device__ __forceinline__ void accumulate(const typename D::Unit (&unit)[R], int64_t u,
                                           const __nv_bfloat16* __restrict__ x, int64_t n_in,
                                           float (&acc)[R][NT]) {
#pragma unroll
  for (int run = 0; run < D::kRuns; ++run) {
    float w[R][kRunLen];
    int64_t col = 0;
#pragma unroll
    for (int r = 0; r < R; ++r) col = D::decode(unit[r], u, run, w[r]);  // same column in every row
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const auto* xp = reinterpret_cast<const uint4*>(x + t * n_in + col);
      const uint4 a = __ldg(xp), b = __ldg(xp + 1);
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r][t] = dot8(w[r] + 8, b, dot8(w[r], a, acc[r][t]));
    }
  }
}

// Units u, u + 32, ..., u + 32 (A - 1) of each of the R rows (those below
// n_units; the others are left as they are and not used).
template <typename D, int A, int R>
__device__ __forceinline__ void load_units(const uint8_t* const (&wrow)[R], int64_t u, int64_t n_units,
                                           typename D::Unit (&units)[A][R]) {
#pragma unroll
  for (int a = 0; a < A; ++a) {
    if (u + a * kWarp < n_units) {
#pragma unroll
      for (int r = 0; r < R; ++r) units[a][r] = D::load(wrow[r], u + a * kWarp);
    }
  }
}

// x [NT, n_in], the rows of `parts` (matvec_parts.h) of row_bytes each.
// Each warp computes R consecutive rows; lane l takes units l, l+32, ... of
// each. KS > 1 (with A = 1): a block of KS warps a group, warp k taking
// every KS-th 32 units from the k-th (matvec_rows.cuh, split_units).
template <typename D, int NT, int R, int A, typename OutT, bool kOnePart, int KS = 1>
__device__ __forceinline__ void matvec_body(const MatvecParts& parts, const __nv_bfloat16* __restrict__ x,
                                            int64_t n_in, int64_t row_bytes) {
  static_assert(KS == 1 || A == 1);
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int64_t g = KS == 1 ? static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp : blockIdx.x;
  const WarpRows<OutT> wr = warp_rows<R, OutT, kOnePart>(parts, g);
  if (!wr.valid) return;  // the whole warp (KS > 1: block) leaves together
  // Stage 0: the rows (past the part's last, the last row again: weight_row).
  const uint8_t* wrow[R];
#pragma unroll
  for (int r = 0; r < R; ++r) wrow[r] = weight_row(wr, r, row_bytes);
  const int64_t n_units = n_in / D::kUnitElems;

  float acc[R][NT];
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = 0.0f;
  }
  // Stage 1: loads, A units of every row ahead of their use, so that A * R
  // units per lane are in flight while the previous A * R are decoded and
  // multiplied (stage 2).
  const int64_t first = (KS == 1 ? 0 : warp) * kWarp + lane;
  typename D::Unit cur[A][R];
  load_units<D, A, R>(wrow, first, n_units, cur);
  // The first weights are in flight while the kernel before finishes (launch.cuh).
  wait_then_launch_dependents();
  for (int64_t u = first; u < n_units; u += A * KS * kWarp) {
    typename D::Unit next[A][R];
    load_units<D, A, R>(wrow, u + A * KS * kWarp, n_units, next);
#pragma unroll
    for (int a = 0; a < A; ++a) {
      if (u + a * kWarp < n_units) accumulate<D, NT, R>(cur[a], u + a * kWarp, x, n_in, acc);
    }
#pragma unroll
    for (int a = 0; a < A; ++a) {
#pragma unroll
      for (int r = 0; r < R; ++r) cur[a][r] = next[a][r];
    }
  }
  // Stage 3: the 32 partial sums of each row and token, by shuffles.
  if constexpr (KS == 1) {
    reduce_and_store<R, NT, OutT>(acc, lane, wr);
  } else {
    reduce_split_and_store<KS, R, NT, OutT>(acc, lane, warp, wr);
  }
}

template <typename D, int NT, int R, int A, typename OutT, bool kOnePart, int KS = 1>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp)
    matvec_kernel(const __grid_constant__ MatvecParts parts, const __nv_bfloat16* __restrict__ x, int64_t n_in,
                  int64_t row_bytes) {
  matvec_body<D, NT, R, A, OutT, kOnePart, KS>(parts, x, n_in, row_bytes);
}

// Several parts at one token, held to the blocks a multiprocessor keeps of
// the one-part kernel (46 registers on sm_90, 10 blocks), which the parts'
// lookups would otherwise push to 68 (7 blocks: fewer warps in flight for a
// kernel that waits on memory); the lookups' values spill instead, read
// once a warp.
inline constexpr int kParts1MinBlocks = 10;
template <typename D, int R, int A, typename OutT, int KS = 1>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp, kParts1MinBlocks)
    matvec_parts1_kernel(const __grid_constant__ MatvecParts parts, const __nv_bfloat16* __restrict__ x,
                         int64_t n_in, int64_t row_bytes) {
  matvec_body<D, 1, R, A, OutT, false, KS>(parts, x, n_in, row_bytes);
}

template <typename D, int NT, typename OutT>
void launch_out(const MatvecParts& parts, const __nv_bfloat16* x, int64_t n_in, unsigned blocks, cudaStream_t stream) {
  constexpr int R = rows_per_warp<D>(NT), A = units_ahead(NT);
  const unsigned threads = kWarpsPerBlock * kWarp;
  const int64_t row_bytes = n_in / D::kBlockElems * D::kBlockBytes;
  if constexpr (NT == 1 && A == 1) {
    if (split_units(parts.groups(R), n_in / D::kUnitElems, resident_limits().sm_count) == 2) {
      const auto groups = static_cast<unsigned>(parts.groups(R));
      if (parts.n == 1) {
        launch_kernel(matvec_kernel<D, 1, R, 1, OutT, true, 2>, groups, 2 * kWarp, 0, stream, parts, x, n_in,
                      row_bytes);
      } else {
        launch_kernel(matvec_parts1_kernel<D, R, 1, OutT, 2>, groups, 2 * kWarp, 0, stream, parts, x, n_in,
                      row_bytes);
      }
      return;
    }
  }
  if (parts.n == 1) {  // without the parts' lookups (warp_rows)
    launch_kernel(matvec_kernel<D, NT, R, A, OutT, true>, blocks, threads, 0, stream, parts, x, n_in, row_bytes);
  } else if constexpr (NT == 1) {
    launch_kernel(matvec_parts1_kernel<D, R, A, OutT>, blocks, threads, 0, stream, parts, x, n_in, row_bytes);
  } else {
    launch_kernel(matvec_kernel<D, NT, R, A, OutT, false>, blocks, threads, 0, stream, parts, x, n_in, row_bytes);
  }
}

template <typename D, int NT>
void launch_nt(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int64_t n_in, cudaStream_t stream) {
  constexpr int R = rows_per_warp<D>(NT);
  const auto blocks = static_cast<unsigned>((parts.groups(R) + kWarpsPerBlock - 1) / kWarpsPerBlock);
  if (f32_out) {
    launch_out<D, NT, float>(parts, x, n_in, blocks, stream);
  } else {
    launch_out<D, NT, __nv_bfloat16>(parts, x, n_in, blocks, stream);
  }
}

// The typed launcher: n_tok (1..8, checked by the entry) picks the kernel.
template <typename D>
void launch(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int n_tok, int64_t n_in,
            cudaStream_t stream) {
  switch (n_tok) {
    case 1: return launch_nt<D, 1>(parts, x, f32_out, n_in, stream);
    case 2: return launch_nt<D, 2>(parts, x, f32_out, n_in, stream);
    case 3: return launch_nt<D, 3>(parts, x, f32_out, n_in, stream);
    case 4: return launch_nt<D, 4>(parts, x, f32_out, n_in, stream);
    case 5: return launch_nt<D, 5>(parts, x, f32_out, n_in, stream);
    case 6: return launch_nt<D, 6>(parts, x, f32_out, n_in, stream);
    case 7: return launch_nt<D, 7>(parts, x, f32_out, n_in, stream);
    case 8: return launch_nt<D, 8>(parts, x, f32_out, n_in, stream);
    default: return;  // unreachable: the entry checks 1 <= n_tok <= 8
  }
}

}  // namespace cohort::cuda::kernels::matvec_impl
