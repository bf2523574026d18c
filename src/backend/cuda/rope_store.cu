// Rotary position embedding of q and k and the store of the rotated k and
// of v into the KV cache, in one launch (attention.h, rope_store_kv): a
// decode step's layer launches it in place of rope, rope and kv_store, two
// dependent launches fewer. Each pair rotates as rope.cu's (rope.cuh) and
// each vector is stored as kv_store.cu's (kv_store.cuh), so the results are
// the three kernels' bits.
#include "backend/cuda/attention_kernels.h"

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kv_store.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/rope.cuh"

namespace cohort::cuda::kernels {
namespace {

constexpr int kThreads = 64;  // a head: 64 pairs and 32 K and V vectors at head_dim 128

// grid: x = heads (q's n_head, then k's n_head_kv), y = tokens. Thread p
// rotates pairs p, p + kThreads, ... of the block's head; a block of k then
// waits for its head's pairs and stores the head's K vectors (threads
// 0 .. nv - 1, nv = head_dim / 8) and V vectors (nv .. 2 nv - 1), reading
// K back through the L1 (written in this kernel, so not by __ldg).
template <KvType kType>
__global__ void __launch_bounds__(kThreads)
    rope_store_kernel(RopeArgs a, __nv_bfloat16* __restrict__ q, int64_t q_stride, int n_head,
                      __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ v, int64_t kv_stride,
                      const int32_t* __restrict__ positions, KvCacheView cache, const int32_t* __restrict__ slots) {
  wait_then_launch_dependents();
  const int64_t t = blockIdx.y;
  const int h = static_cast<int>(blockIdx.x), head_dim = static_cast<int>(cache.head_dim);
  const bool of_q = h < n_head;
  const int hk = h - n_head;
  __nv_bfloat16* head = of_q ? q + t * q_stride + static_cast<int64_t>(h) * head_dim
                             : k + t * kv_stride + static_cast<int64_t>(hk) * head_dim;
  const int32_t position = positions[t];
  for (int p = static_cast<int>(threadIdx.x); p < a.n_rot / 2; p += kThreads) rope_pair(a, position, p, head);
  if (of_q) return;  // the whole block
  __syncthreads();   // the head's rotated K, written by the block's threads
  const int64_t slot = slots[t];
  if (slot < 0 || slot >= cache.n_blocks * kKvBlockSize) return;  // padding (or a bad slot): the whole block
  const int nv = head_dim / 8;
  const int64_t n_vec = cache.n_head_kv * nv;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int i0 = 0; i0 < 2 * nv; i0 += kThreads) {  // the same trips for every thread (Q8_0's shuffles)
    const int i = i0 + static_cast<int>(threadIdx.x);
    const bool valid = i < 2 * nv, of_k = i < nv;
    const int j = of_k ? i : i - nv;
    const int64_t src = t * kv_stride + static_cast<int64_t>(hk) * head_dim + 8 * j;
    uint4 raw = zero;
    if (valid) raw = of_k ? *reinterpret_cast<const uint4*>(k + src) : __ldg(reinterpret_cast<const uint4*>(v + src));
    const int64_t c = static_cast<int64_t>(hk) * nv + j;
    // A 32-block's four lanes are all K or all V (nv is a multiple of 4).
    store_vector<kType>(raw, valid, slot, n_vec, c, of_k ? cache.k : cache.v, of_k ? cache.k_scale : cache.v_scale);
  }
}

template <KvType kType>
void launch_for_type(const RopeArgs& a, __nv_bfloat16* q, int64_t q_stride, int64_t n_head, __nv_bfloat16* k,
                     const __nv_bfloat16* v, int64_t kv_stride, const int32_t* positions, const KvCacheView& cache,
                     const int32_t* slots, int64_t n_tok, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(n_head + cache.n_head_kv), static_cast<unsigned>(n_tok));
  launch_kernel(rope_store_kernel<kType>, grid, kThreads, 0, stream, a, q, q_stride, static_cast<int>(n_head), k, v,
                kv_stride, positions, cache, slots);
}

}  // namespace

void launch_rope_store(const RopeArgs& a, __nv_bfloat16* q, int64_t q_stride, int64_t n_head, __nv_bfloat16* k,
                       const __nv_bfloat16* v, int64_t kv_stride, const int32_t* positions, const KvCacheView& cache,
                       const int32_t* slots, int64_t n_tok, cudaStream_t stream) {
  switch (cache.type) {
    case KvType::kF16:
      return launch_for_type<KvType::kF16>(a, q, q_stride, n_head, k, v, kv_stride, positions, cache, slots, n_tok,
                                           stream);
    case KvType::kBf16:
      return launch_for_type<KvType::kBf16>(a, q, q_stride, n_head, k, v, kv_stride, positions, cache, slots, n_tok,
                                            stream);
    case KvType::kQ8_0:
      return launch_for_type<KvType::kQ8_0>(a, q, q_stride, n_head, k, v, kv_stride, positions, cache, slots, n_tok,
                                            stream);
  }
}

}  // namespace cohort::cuda::kernels
