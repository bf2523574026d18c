// How 8 elements (16 bytes of BF16) of a token's K or V row reach the
// cache (kv_store.cu, rope_store.cu): rounded to F16 once (round to nearest
// even), copied as they are into a BF16 cache, or quantized to Q8_0 by the
// four threads of each 32-element block (consecutive lanes: a head's row is
// whole blocks).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/attention_kernels.h"
#include "backend/cuda/bf16x8.cuh"

namespace cohort::cuda::kernels {

__device__ __forceinline__ uint32_t bf16x2_to_f16x2(uint32_t w) {
  const float lo = __uint_as_float(w << 16), hi = __uint_as_float(w & 0xFFFF0000u);
  return static_cast<uint32_t>(__half_as_ushort(__float2half_rn(lo))) |
         (static_cast<uint32_t>(__half_as_ushort(__float2half_rn(hi))) << 16);
}

__device__ __forceinline__ uint4 convert8(uint4 v) {
  return make_uint4(bf16x2_to_f16x2(v.x), bf16x2_to_f16x2(v.y), bf16x2_to_f16x2(v.z), bf16x2_to_f16x2(v.w));
}

// Eight BF16 of a 32-block held by four consecutive lanes, quantized as
// quant::quantize_q8_0 does (F32 amax / 127, roundf of x * (1 / d), clamped
// to +-127); all lanes of the warp call it. Writes the 8 quants, and the
// block's F16 scale from its first lane.
__device__ __forceinline__ void store_q8(uint4 raw, bool store, int64_t c, int8_t* __restrict__ q,
                                         __half* __restrict__ scale) {
  float x[8];
  unpack8(raw, x);
  float amax = 0.0f;
#pragma unroll
  for (float f : x) amax = fmaxf(amax, fabsf(f));
  amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 1));
  amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 2));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint32_t w[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int v = static_cast<int>(fminf(fmaxf(roundf(x[i] * id), -127.0f), 127.0f));
    w[i / 4] |= (static_cast<uint32_t>(v) & 0xFFu) << (8 * (i % 4));
  }
  if (!store) return;
  *reinterpret_cast<uint2*>(q + 8 * c) = make_uint2(w[0], w[1]);
  if (c % 4 == 0) scale[c / 4] = __float2half_rn(d);
}

// Vector c (of 8 elements) of cache row `slot` (a token's n_vec vectors):
// K or V (`values`, `scales` for Q8_0) of type kType. Q8_0: every lane of
// the warp calls it (store: whether this lane's vector is real).
template <KvType kType>
__device__ __forceinline__ void store_vector(uint4 raw, bool store, int64_t slot, int64_t n_vec, int64_t c,
                                             void* values, __half* scales) {
  if constexpr (kType == KvType::kQ8_0) {
    const int64_t row = slot * n_vec;  // in 8-element vectors
    store_q8(raw, store, c, static_cast<int8_t*>(values) + 8 * row, scales + row / 4);
  } else {
    if (store) static_cast<uint4*>(values)[slot * n_vec + c] = kType == KvType::kBf16 ? raw : convert8(raw);
  }
}

}  // namespace cohort::cuda::kernels
