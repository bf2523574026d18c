// KV store: one thread per 8 elements (16 bytes of BF16 in) of one token's K
// and V rows (all KV heads): rounded to F16 once (round to nearest even),
// copied as they are into a BF16 cache, or quantized to Q8_0 by the four
// threads of each 32-element block (consecutive lanes: a head's row is
// whole blocks).
#include "backend/cuda/attention_kernels.h"

#include "backend/cuda/bf16x8.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch.cuh"

namespace cohort::cuda::kernels {
namespace {

constexpr int kThreads = 128;  // untuned

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

// grid: x = vectors of one token's row (n_head_kv * head_dim / 8), y = tokens.
template <KvType kType>
__global__ void __launch_bounds__(kThreads)
    kv_store_kernel(KvCacheView cache, const __nv_bfloat16* __restrict__ k_new,
                    const __nv_bfloat16* __restrict__ v_new, int64_t token_stride,
                    const int32_t* __restrict__ slots, int64_t n_vec) {
  wait_then_launch_dependents();
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t t = blockIdx.y;
  const int64_t slot = slots[t];
  if (slot < 0 || slot >= cache.n_blocks * kKvBlockSize) return;  // padding (or a bad slot): the whole block
  const bool valid = c < n_vec;
  if (kType != KvType::kQ8_0 && !valid) return;  // Q8_0: every lane takes part in the block's amax
  const int64_t src = t * token_stride + 8 * c;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  const uint4 k = valid ? __ldg(reinterpret_cast<const uint4*>(k_new + src)) : zero;
  const uint4 v = valid ? __ldg(reinterpret_cast<const uint4*>(v_new + src)) : zero;
  if constexpr (kType == KvType::kQ8_0) {
    const int64_t row = slot * n_vec;  // in 8-element vectors
    store_q8(k, valid, c, static_cast<int8_t*>(cache.k) + 8 * row, cache.k_scale + row / 4);
    store_q8(v, valid, c, static_cast<int8_t*>(cache.v) + 8 * row, cache.v_scale + row / 4);
  } else {
    const int64_t dst = slot * n_vec + c;
    static_cast<uint4*>(cache.k)[dst] = kType == KvType::kBf16 ? k : convert8(k);
    static_cast<uint4*>(cache.v)[dst] = kType == KvType::kBf16 ? v : convert8(v);
  }
}

template <KvType kType>
void launch_for_type(const KvCacheView& cache, const __nv_bfloat16* k_new, const __nv_bfloat16* v_new,
                     int64_t token_stride, const int32_t* slots, int64_t n_tok, cudaStream_t stream) {
  const int64_t n_vec = cache.n_head_kv * cache.head_dim / 8;
  const dim3 grid(static_cast<unsigned>((n_vec + kThreads - 1) / kThreads), static_cast<unsigned>(n_tok));
  launch_kernel(kv_store_kernel<kType>, grid, kThreads, 0, stream, cache, k_new, v_new, token_stride, slots, n_vec);
}

}  // namespace

void launch_kv_store(const KvCacheView& cache, const __nv_bfloat16* k_new, const __nv_bfloat16* v_new,
                     int64_t token_stride, const int32_t* slots, int64_t n_tok, cudaStream_t stream) {
  switch (cache.type) {
    case KvType::kF16: return launch_for_type<KvType::kF16>(cache, k_new, v_new, token_stride, slots, n_tok, stream);
    case KvType::kBf16: return launch_for_type<KvType::kBf16>(cache, k_new, v_new, token_stride, slots, n_tok, stream);
    case KvType::kQ8_0: return launch_for_type<KvType::kQ8_0>(cache, k_new, v_new, token_stride, slots, n_tok, stream);
  }
}

}  // namespace cohort::cuda::kernels
