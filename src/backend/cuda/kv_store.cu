// KV store: one thread per 8 elements (16 bytes) of one token's K and V rows
// (all KV heads), BF16 rounded to F16 once (round to nearest even), or
// copied as they are into a BF16 cache.
#include "backend/cuda/attention_kernels.h"

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

// grid: x = vectors of one token's row (n_head_kv * head_dim / 8), y = tokens.
template <bool kBf16>
__global__ void __launch_bounds__(kThreads)
    kv_store_kernel(KvCacheView cache, const __nv_bfloat16* __restrict__ k_new,
                    const __nv_bfloat16* __restrict__ v_new, int64_t token_stride,
                    const int32_t* __restrict__ slots, int64_t n_vec) {
  wait_then_launch_dependents();
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= n_vec) return;
  const int64_t t = blockIdx.y;
  const int64_t slot = slots[t];
  if (slot < 0 || slot >= cache.n_blocks * kKvBlockSize) return;  // padding (or a bad slot)
  const int64_t src = t * token_stride + 8 * c;
  const int64_t dst = slot * n_vec * 8 + 8 * c;
  const uint4 k = __ldg(reinterpret_cast<const uint4*>(k_new + src));
  const uint4 v = __ldg(reinterpret_cast<const uint4*>(v_new + src));
  *reinterpret_cast<uint4*>(cache.k + dst) = kBf16 ? k : convert8(k);
  *reinterpret_cast<uint4*>(cache.v + dst) = kBf16 ? v : convert8(v);
}

}  // namespace

void launch_kv_store(const KvCacheView& cache, const __nv_bfloat16* k_new, const __nv_bfloat16* v_new,
                     int64_t token_stride, const int32_t* slots, int64_t n_tok, cudaStream_t stream) {
  const int64_t n_vec = cache.n_head_kv * cache.head_dim / 8;
  const dim3 grid(static_cast<unsigned>((n_vec + kThreads - 1) / kThreads), static_cast<unsigned>(n_tok));
  if (cache.bf16) {
    launch_kernel(kv_store_kernel<true>, grid, kThreads, 0, stream, cache, k_new, v_new, token_stride, slots, n_vec);
  } else {
    launch_kernel(kv_store_kernel<false>, grid, kThreads, 0, stream, cache, k_new, v_new, token_stride, slots, n_vec);
  }
}

}  // namespace cohort::cuda::kernels
