// The int8 matvec kernel shared by the weight types (included by
// matvec_q8_*.cu). A warp computes R consecutive output rows; lane l takes
// units l, l + 32, ... of each row (consecutive lanes read consecutive
// bytes). The next units are loaded before the current ones are used, so
// two units per row and lane are in flight. Each unit is unpacked to int8
// words once (prepare) and multiplied with every token's int8 x by dp4a
// (dot; x loaded once per token for the R rows), so W is read once for all
// NT <= 8 tokens. The 32 partial sums of a
// row are added by warp shuffles.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/matvec_q8_decode.cuh"
#include "backend/cuda/matvec_q8_kernels.h"
#include "backend/cuda/matvec_rows.cuh"

namespace cohort::cuda::kernels::matvec_q8 {

inline constexpr int kWarpsPerBlock = 4;
inline constexpr int kWarp = 32;
// Rows per warp: 2 up to 4 tokens (two rows' units in flight per lane), 1
// beyond (registers: the accumulators grow with the tokens).
constexpr int rows_per_warp(int n_tok) { return n_tok > 4 ? 1 : 2; }

template <typename D, int R>
__device__ __forceinline__ void load_units(const uint8_t* const (&wrow)[R], int64_t u, int64_t n_units,
                                           typename D::Unit (&units)[R]) {
  if (u < n_units) {
#pragma unroll
    for (int r = 0; r < R; ++r) units[r] = D::load(wrow[r], u);
  }
}

// acc[r][t] += unit u of row r times token t. The units are unpacked
// first; each token's x is then loaded once and used for all R rows.
template <typename D, int NT, int R>
__device__ __forceinline__ void accumulate(const typename D::Unit (&units)[R], int64_t u,
                                           const int8_t* __restrict__ q, const float2* __restrict__ ds,
                                           int64_t n_in, float (&acc)[R][NT]) {
  typename D::Prep p[R];
#pragma unroll
  for (int r = 0; r < R; ++r) p[r] = D::prepare(units[r], u);
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const typename D::X x = D::load_x(u, q + t * n_in, ds + t * (n_in / kQBlock));
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r][t] = D::dot(p[r], x, acc[r][t]);
  }
}

template <typename D, int NT, int R, typename OutT>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp)
    matvec_q8_kernel(const uint8_t* __restrict__ w, const int8_t* __restrict__ q,
                     const float2* __restrict__ ds, OutT* __restrict__ y, int64_t n_in,
                     int64_t n_out, int64_t row_bytes) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp) * R;
  if (row0 >= n_out) return;  // the whole warp leaves together
  // Past n_out (the last warp only) the last row is read again and its sums
  // are not stored.
  const uint8_t* wrow[R];
#pragma unroll
  for (int r = 0; r < R; ++r) wrow[r] = w + (row0 + r < n_out ? row0 + r : n_out - 1) * row_bytes;
  const int64_t n_units = n_in / D::kUnitElems;
  float acc[R][NT];
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = 0.0f;
  }
  typename D::Unit cur[R];
  load_units<D, R>(wrow, lane, n_units, cur);
  for (int64_t u = lane; u < n_units; u += kWarp) {
    typename D::Unit next[R];
    load_units<D, R>(wrow, u + kWarp, n_units, next);
    accumulate<D, NT, R>(cur, u, q, ds, n_in, acc);
#pragma unroll
    for (int r = 0; r < R; ++r) cur[r] = next[r];
  }
  reduce_and_store<R, NT>(acc, lane, row0, n_out, y);
}

template <typename D, int NT>
void launch_nt(const void* w, const int8_t* q, const float2* ds, void* y, bool f32_out, int64_t n_in,
               int64_t n_out, cudaStream_t stream) {
  constexpr int R = rows_per_warp(NT);
  constexpr int64_t kRowsPerBlock = kWarpsPerBlock * R;
  const auto blocks = static_cast<unsigned>((n_out + kRowsPerBlock - 1) / kRowsPerBlock);
  const int64_t row_bytes = n_in / D::kBlockElems * D::kBlockBytes;
  const auto* wb = static_cast<const uint8_t*>(w);
  if (f32_out) {
    matvec_q8_kernel<D, NT, R, float><<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(
        wb, q, ds, static_cast<float*>(y), n_in, n_out, row_bytes);
  } else {
    matvec_q8_kernel<D, NT, R, __nv_bfloat16><<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(
        wb, q, ds, static_cast<__nv_bfloat16*>(y), n_in, n_out, row_bytes);
  }
  CUDA_CHECK(cudaGetLastError());
}

// The typed launcher: n_tok (1..8, checked by the entry) picks the kernel.
template <typename D>
void launch(const void* w, const int8_t* q, const float2* ds, void* y, bool f32_out, int n_tok, int64_t n_in,
            int64_t n_out, cudaStream_t stream) {
  switch (n_tok) {
    case 1: return launch_nt<D, 1>(w, q, ds, y, f32_out, n_in, n_out, stream);
    case 2: return launch_nt<D, 2>(w, q, ds, y, f32_out, n_in, n_out, stream);
    case 3: return launch_nt<D, 3>(w, q, ds, y, f32_out, n_in, n_out, stream);
    case 4: return launch_nt<D, 4>(w, q, ds, y, f32_out, n_in, n_out, stream);
    case 5: return launch_nt<D, 5>(w, q, ds, y, f32_out, n_in, n_out, stream);
    case 6: return launch_nt<D, 6>(w, q, ds, y, f32_out, n_in, n_out, stream);
    case 7: return launch_nt<D, 7>(w, q, ds, y, f32_out, n_in, n_out, stream);
    case 8: return launch_nt<D, 8>(w, q, ds, y, f32_out, n_in, n_out, stream);
    default: return;  // unreachable: the entry checks 1 <= n_tok <= 8
  }
}

}  // namespace cohort::cuda::kernels::matvec_q8
