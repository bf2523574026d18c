// The matvec kernel shared by every weight type (included by matvec_*.cu).
//
// One warp per output row. The row is cut into units of a few blocks' worth
// of bytes; lane l takes units l, l+32, ... so that consecutive lanes read
// consecutive bytes (coalesced). A unit is loaded into registers (the next
// unit's loads are issued before the current one is used), decoded run by run
// (16 consecutive columns with their scale applied, in F32) and multiplied
// with the same 16 columns of every token's x (two 16-byte BF16 loads per
// token), so each weight byte is read once for all NT tokens. The 32 partial
// sums of a row are added by warp shuffles.
//
// The decoders are in matvec_decode.cuh.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/matvec_decode.cuh"
#include "backend/cuda/matvec_kernels.h"

namespace cohort::cuda::kernels::matvec_impl {

using matvec_decode::kRunLen;
// Rows (warps) per thread block. Untuned: 4 warps keep blocks small enough
// that 4096 rows fill 132 SMs several times over.
inline constexpr int kWarpsPerBlock = 4;
inline constexpr int kWarp = 32;

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

template <typename OutT>
__device__ __forceinline__ void store(OutT* y, float v);
template <>
__device__ __forceinline__ void store<float>(float* y, float v) { *y = v; }
template <>
__device__ __forceinline__ void store<__nv_bfloat16>(__nv_bfloat16* y, float v) {
  *y = __float2bfloat16_rn(v);
}

// --- the kernel ------------------------------------------------------------

template <typename D, int NT>
__device__ __forceinline__ void accumulate(const typename D::Unit& unit, int64_t u,
                                           const __nv_bfloat16* __restrict__ x, int64_t n_in,
                                           float (&acc)[NT]) {
#pragma unroll
  for (int r = 0; r < D::kRuns; ++r) {
    float w[kRunLen];
    const int64_t col = D::decode(unit, u, r, w);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const auto* xp = reinterpret_cast<const uint4*>(x + t * n_in + col);
      const uint4 a = __ldg(xp), b = __ldg(xp + 1);
      acc[t] = dot8(w + 8, b, dot8(w, a, acc[t]));
    }
  }
}

// x [NT, n_in], W rows of row_bytes, y [NT, n_out].
template <typename D, int NT, typename OutT>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp)
    matvec_kernel(const uint8_t* __restrict__ w, const __nv_bfloat16* __restrict__ x,
                  OutT* __restrict__ y, int64_t n_in, int64_t n_out, int64_t row_bytes) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
  if (row >= n_out) return;  // the whole warp leaves together
  const uint8_t* wrow = w + row * row_bytes;
  const int64_t n_units = n_in / D::kUnitElems;

  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
  int64_t u = lane;
  typename D::Unit cur{};
  if (u < n_units) cur = D::load(wrow, u);
  for (; u < n_units; u += kWarp) {
    typename D::Unit next = cur;
    if (u + kWarp < n_units) next = D::load(wrow, u + kWarp);  // in flight while cur is used
    accumulate<D, NT>(cur, u, x, n_in, acc);
    cur = next;
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) {
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      acc[t] += __shfl_xor_sync(0xFFFFFFFFu, acc[t], offset);
    }
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (lane == t) store(y + t * n_out + row, acc[t]);
  }
}

template <typename D, int NT>
void launch_nt(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int64_t n_in,
               int64_t n_out, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((n_out + kWarpsPerBlock - 1) / kWarpsPerBlock);
  const int64_t row_bytes = n_in / D::kBlockElems * D::kBlockBytes;
  const auto* wb = static_cast<const uint8_t*>(w);
  if (f32_out) {
    matvec_kernel<D, NT, float><<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(
        wb, x, static_cast<float*>(y), n_in, n_out, row_bytes);
  } else {
    matvec_kernel<D, NT, __nv_bfloat16><<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(
        wb, x, static_cast<__nv_bfloat16*>(y), n_in, n_out, row_bytes);
  }
  CUDA_CHECK(cudaGetLastError());
}

// The typed launcher: n_tok (1..8, checked by the entry) picks the kernel.
template <typename D>
void launch(const void* w, const __nv_bfloat16* x, void* y, bool f32_out, int n_tok, int64_t n_in,
            int64_t n_out, cudaStream_t stream) {
  switch (n_tok) {
    case 1: return launch_nt<D, 1>(w, x, y, f32_out, n_in, n_out, stream);
    case 2: return launch_nt<D, 2>(w, x, y, f32_out, n_in, n_out, stream);
    case 3: return launch_nt<D, 3>(w, x, y, f32_out, n_in, n_out, stream);
    case 4: return launch_nt<D, 4>(w, x, y, f32_out, n_in, n_out, stream);
    case 5: return launch_nt<D, 5>(w, x, y, f32_out, n_in, n_out, stream);
    case 6: return launch_nt<D, 6>(w, x, y, f32_out, n_in, n_out, stream);
    case 7: return launch_nt<D, 7>(w, x, y, f32_out, n_in, n_out, stream);
    case 8: return launch_nt<D, 8>(w, x, y, f32_out, n_in, n_out, stream);
    default: return;  // unreachable: the entry checks 1 <= n_tok <= 8
  }
}

}  // namespace cohort::cuda::kernels::matvec_impl
