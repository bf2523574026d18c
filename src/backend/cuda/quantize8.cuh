// The activation quantizer of matvec_q8.h as a device function, shared by
// quantize_activations and the kernels that quantize what they write (the
// RMS norm, SiLU·mul): four threads per 32-block, 8 values each; max|x|
// and the sum of q are exchanged by two shuffles each. The values are the
// F32 of the BF16 the thread stores, so the bytes equal those of
// quantize_activations applied to that BF16 output.
#pragma once

#include <cstdint>

#include "backend/cuda/matvec_q8_decode.cuh"

namespace cohort::cuda::kernels {

inline constexpr int kQuantPerThread = 8;
inline constexpr int kQuantThreadsPerBlock = matvec_q8::kQBlock / kQuantPerThread;  // 4

// Group g of 8 values (elements 8g .. 8g + 8 of the flat activations) into
// q (as 8-byte words, index g) and, by the first of its four threads,
// ds[g / 4]. Every lane of the warp calls it (the shuffles); the four
// threads of a 32-block are lanes 4k .. 4k + 3 and are valid or not
// together; invalid ones store nothing.
__device__ __forceinline__ void quantize8(const float (&v)[kQuantPerThread], bool valid, int64_t g,
                                          uint2* __restrict__ q, float2* __restrict__ ds) {
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kQuantPerThread; ++i) amax = fmaxf(amax, fabsf(v[i]));
#pragma unroll
  for (int o = 1; o < kQuantThreadsPerBlock; o *= 2) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
  const float inv = matvec_q8::block_inv(amax);
  uint32_t packed[2] = {0, 0};
  int sum = 0;
#pragma unroll
  for (int i = 0; i < kQuantPerThread; ++i) {
    const int qi = matvec_q8::quantize_one(v[i], inv);
    sum += qi;
    packed[i / 4] |= (static_cast<uint32_t>(qi) & 0xFFu) << (8 * (i % 4));
  }
#pragma unroll
  for (int o = 1; o < kQuantThreadsPerBlock; o *= 2) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
  if (!valid) return;
  q[g] = make_uint2(packed[0], packed[1]);
  if (g % kQuantThreadsPerBlock == 0) ds[g / kQuantThreadsPerBlock] = matvec_q8::block_ds(amax, sum);
}

}  // namespace cohort::cuda::kernels
