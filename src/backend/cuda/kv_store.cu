// KV store: one thread per 8 elements (16 bytes of BF16 in) of one token's K
// and V rows (all KV heads), stored as kv_store.cuh does.
#include "backend/cuda/attention_kernels.h"

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kv_store.cuh"
#include "backend/cuda/launch.cuh"

namespace cohort::cuda::kernels {
namespace {

constexpr int kThreads = 128;  // untuned

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
  store_vector<kType>(k, valid, slot, n_vec, c, cache.k, cache.k_scale);
  store_vector<kType>(v, valid, slot, n_vec, c, cache.v, cache.v_scale);
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
