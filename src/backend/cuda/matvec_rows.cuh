// The end shared by the matvec kernels (matvec_impl.cuh, matvec_q8_impl.cuh):
// each lane of a warp holds partial sums of R rows for NT tokens; the 32
// partials of each (row, token) are added by shuffles and lane r * NT + t
// stores row r, token t as F32 or BF16.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

namespace cohort::cuda::kernels {

template <typename OutT>
__device__ __forceinline__ void store(OutT* y, float v);
template <>
__device__ __forceinline__ void store<float>(float* y, float v) { *y = v; }
template <>
__device__ __forceinline__ void store<__nv_bfloat16>(__nv_bfloat16* y, float v) {
  *y = __float2bfloat16_rn(v);
}

// y [NT, n_out] rows row0 .. row0 + R (those below n_out) = the warp's sums
// of acc. Every lane of the warp calls it.
template <int R, int NT, typename OutT>
__device__ __forceinline__ void reduce_and_store(float (&acc)[R][NT], int lane, int64_t row0, int64_t n_out,
                                                 OutT* y) {
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
      if (lane == r * NT + t && row0 + r < n_out) store(y + t * n_out + row0 + r, acc[r][t]);
    }
  }
}

}  // namespace cohort::cuda::kernels
