// Split-K ("flash-decoding") attention over the paged KV cache.
//
// K and V are F16, BF16 or Q8_0 (the view's type), converted to F32 on load.
//
// Stage 1, one thread block per (KV head, chunk of G query heads, sequence,
// split of shape.split_tokens tokens): a token's K (and V) row of one KV
// head is head_dim elements, read by D/8 lanes with one load of 8 each (and
// for Q8_0 the scale of their block), so a warp takes 32 / (D/8) tokens per
// step. A warp iteration is 4, 8 or 16 tokens of one KV block, every load
// of it issued before the first is used, and the 4 warps take turns over
// the split's iterations. Every lane keeps, for each of the G query heads
// sharing the KV head (grouped-query: K/V are read once for all of them), an
// online-softmax state (max, sum, output for its 8 dims) in log2 units (q is
// prescaled by scale * log2(e)), updated once an iteration. States are
// merged across the lane groups of a warp (shuffles), then across warps
// (shared memory), and written to the workspace. Stage 2 merges the splits
// of each (sequence, head) and normalises, 8 threads per 8 dims, and
// quantizes what it writes where the caller asks (quantize8.cuh: the input
// of the int8 output projection).
#include "backend/cuda/attention_kernels.h"

#include <cmath>

#include "backend/cuda/bf16x8.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/quantize8.cuh"

namespace cohort::cuda::kernels {
namespace {

constexpr int kWarps = 4;  // untuned
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ void unpack_f16x8(uint4 v, float (&f)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] & 0xFFFFu)));
    f[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] >> 16)));
  }
}

// Eight cache elements from element `off` of the array at `base` (and, for
// Q8_0, their block's scale): the raw bits, unpacked by unpack_kv8 (apart,
// so that the loads of K and V are both in flight before either is used).
template <KvType kType>
__device__ __forceinline__ uint4 load_kv8(const void* base, const __half* scale, int64_t off) {
  if constexpr (kType == KvType::kQ8_0) {
    const uint2 q = __ldg(reinterpret_cast<const uint2*>(static_cast<const int8_t*>(base) + off));
    return make_uint4(q.x, q.y, __half_as_ushort(__ldg(scale + off / 32)), 0);
  } else {
    return __ldg(reinterpret_cast<const uint4*>(static_cast<const __half*>(base) + off));
  }
}

template <KvType kType>
__device__ __forceinline__ void unpack_kv8(uint4 v, float (&f)[8]) {
  if constexpr (kType == KvType::kBf16) {
    unpack8(v, f);
  } else if constexpr (kType == KvType::kQ8_0) {
    const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(v.z)));
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t w = i < 4 ? v.x : v.y;
      f[i] = static_cast<float>(static_cast<int8_t>(w >> (8 * (i % 4)))) * d;
    }
  } else {
    unpack_f16x8(v, f);
  }
}

// Weight of a state with max m in a merge whose max is `top`; an empty
// state (m = -inf) weighs 0 even when every state is empty.
__device__ __forceinline__ float merge_weight(float m, float top) {
  return m == -INFINITY ? 0.0f : exp2f(m - top);
}

// Tokens a warp takes per iteration of the split kernel: its loads of K
// and V for all of them are issued before any is used (the bytes in flight
// that a memory-bound loop needs), and they lie in one KV block, so one
// block-table entry serves them. Fewer where many query heads share a KV
// head (their scores and outputs take the registers).
__host__ __device__ constexpr int iteration_tokens(int d, int g) {
  return d <= 128 && d * g <= 512 ? 16 : d * g <= 1024 ? 8 : 4;
}

template <int D, int G, KvType kType>
__global__ void __launch_bounds__(kWarps * 32)
    attention_split_kernel(KvCacheView cache, const __nv_bfloat16* __restrict__ q,
                           const int32_t* __restrict__ block_table, const int32_t* __restrict__ ctx_lens,
                           AttentionShape shape, float q_scale, AttentionPartials part) {
  wait_then_launch_dependents();
  constexpr int kLanes = D / 8;            // lanes per token
  constexpr int kTokens = 32 / kLanes;     // tokens per warp step
  constexpr int kIter = iteration_tokens(D, G);
  constexpr int kSteps = kIter / kTokens;  // warp steps per iteration
  static_assert(kKvBlockSize % kIter == 0 && kIter % kTokens == 0, "an iteration is whole steps in one KV block");
  const int group_size = shape.n_head / shape.n_head_kv;
  const int n_chunks = group_size / G;
  const int kvh = static_cast<int>(blockIdx.x) / n_chunks, chunk = static_cast<int>(blockIdx.x) % n_chunks;
  const int seq = static_cast<int>(blockIdx.y), split = static_cast<int>(blockIdx.z);
  const int ctx = ctx_lens[seq];
  const int begin = split * shape.split_tokens;
  if (begin >= ctx) return;  // the whole block: stage 2 reads only splits that hold tokens
  const int end = min(ctx, begin + shape.split_tokens);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int token_in_step = lane / kLanes, sub = lane % kLanes;  // this lane's dims: [8 sub, 8 sub + 8)
  const int head0 = kvh * group_size + chunk * G;

  float qv[G][8], m[G], l[G], acc[G][8];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const auto* qp = reinterpret_cast<const uint4*>(q + (static_cast<int64_t>(seq) * shape.n_head + head0 + g) * D);
    unpack8(__ldg(qp + sub), qv[g]);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      qv[g][i] *= q_scale;
      acc[g][i] = 0.0f;
    }
    m[g] = -INFINITY;
    l[g] = 0.0f;
  }

  const int table_row = shape.table_rows != nullptr ? shape.table_rows[seq] : seq;
  const int32_t* table = block_table + static_cast<int64_t>(table_row) * shape.max_blocks;
  // Warp w takes iterations w, w + kWarps, ... of the split; the next
  // iteration's table entry is read while this one's K and V arrive. The
  // iteration start is the same for the whole warp, so the loop (and its
  // shuffles) stays converged; lanes past `end` load nothing.
  constexpr int kStride = kWarps * kIter;
  int j0 = begin + warp * kIter;
  int64_t block = j0 < end ? table[j0 / kKvBlockSize] : 0;
  for (; j0 < end; j0 += kStride) {
    const int64_t next = j0 + kStride < end ? table[(j0 + kStride) / kKvBlockSize] : 0;
    uint4 kraw[kSteps], vraw[kSteps];
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const int j = j0 + s * kTokens + token_in_step;
      kraw[s] = vraw[s] = make_uint4(0, 0, 0, 0);
      if (j < end) {
        const int64_t slot = block * kKvBlockSize + j % kKvBlockSize;
        const int64_t off = (slot * shape.n_head_kv + kvh) * D + 8 * sub;
        kraw[s] = load_kv8<kType>(cache.k, cache.k_scale, off);
        vraw[s] = load_kv8<kType>(cache.v, cache.v_scale, off);
      }
    }
    // Scores of the iteration's tokens (-inf past `end`), then one online-
    // softmax update with their maximum.
    float sc[G][kSteps];
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      float k[8];
      unpack_kv8<kType>(kraw[s], k);
      const bool valid = j0 + s * kTokens + token_in_step < end;
#pragma unroll
      for (int g = 0; g < G; ++g) {
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) dot = fmaf(qv[g][i], k[i], dot);
#pragma unroll
        for (int o = kLanes / 2; o > 0; o /= 2) dot += __shfl_xor_sync(0xFFFFFFFFu, dot, o);
        sc[g][s] = valid ? dot : -INFINITY;
      }
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      float top = m[g];
#pragma unroll
      for (int s = 0; s < kSteps; ++s) top = fmaxf(top, sc[g][s]);
      const float corr = merge_weight(m[g], top);  // 0 while the state is empty
      l[g] *= corr;
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[g][i] *= corr;
      m[g] = top;
#pragma unroll
      for (int s = 0; s < kSteps; ++s) sc[g][s] = merge_weight(sc[g][s], top);  // exp2(score - top), 0 past end
    }
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      float v[8];
      unpack_kv8<kType>(vraw[s], v);
#pragma unroll
      for (int g = 0; g < G; ++g) {
        l[g] += sc[g][s];
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[g][i] = fmaf(sc[g][s], v[i], acc[g][i]);
      }
    }
    block = next;
  }

  // Merge the token groups of the warp (lanes sub, sub + kLanes, ...).
#pragma unroll
  for (int o = 16; o >= kLanes; o /= 2) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const float m_o = __shfl_xor_sync(0xFFFFFFFFu, m[g], o);
      const float l_o = __shfl_xor_sync(0xFFFFFFFFu, l[g], o);
      const float top = fmaxf(m[g], m_o);
      const float wa = merge_weight(m[g], top), wb = merge_weight(m_o, top);
      l[g] = l[g] * wa + l_o * wb;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float a_o = __shfl_xor_sync(0xFFFFFFFFu, acc[g][i], o);
        acc[g][i] = acc[g][i] * wa + a_o * wb;
      }
      m[g] = top;
    }
  }

  // Merge the warps through shared memory and write this split's partials.
  __shared__ float sm_m[kWarps][G], sm_l[kWarps][G];
  __shared__ float sm_acc[kWarps][G][D];
  if (token_in_step == 0) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
#pragma unroll
      for (int i = 0; i < 8; ++i) sm_acc[warp][g][8 * sub + i] = acc[g][i];
      if (sub == 0) {
        sm_m[warp][g] = m[g];
        sm_l[warp][g] = l[g];
      }
    }
  }
  __syncthreads();
  for (int idx = static_cast<int>(threadIdx.x); idx < G * D; idx += kWarps * 32) {
    const int g = idx / D, d = idx % D;
    float top = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) top = fmaxf(top, sm_m[w][g]);
    float a = 0.0f, sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float wt = merge_weight(sm_m[w][g], top);
      a = fmaf(wt, sm_acc[w][g][d], a);
      sum = fmaf(wt, sm_l[w][g], sum);
    }
    const int64_t row = (static_cast<int64_t>(seq) * shape.n_head + head0 + g) * shape.n_splits + split;
    part.acc[row * D + d] = a;
    if (d == 0) {
      part.m[row] = top;
      part.l[row] = sum;
    }
  }
}

// Stage 2: kCombineLanes threads per output vector (8 dims of a row of out
// [n_seq * n_head, D]), each taking every kCombineLanes-th split, so that
// the partials of a long context (128 splits at 32K positions) are read by
// many loads in flight rather than one thread's serial loop; the lanes
// agree on the maximum, then sum their weighted splits and merge the sums
// by shuffles. A block's kCombineVectors results go through shared memory
// to its first warp, where thread i writes vector i of out and group i of
// its quantized bytes (kQuant: q, ds as quantize_activations lays them out;
// the four threads of a 32-block are consecutive lanes).
constexpr int kCombineLanes = 8;
constexpr int kCombineVectors = 32;
constexpr int kCombineThreads = kCombineLanes * kCombineVectors;

template <bool kQuant>
__global__ void __launch_bounds__(kCombineThreads)
    attention_combine_kernel(const int32_t* __restrict__ ctx_lens, AttentionShape shape, AttentionPartials part,
                             uint4* __restrict__ out, uint2* __restrict__ q, float2* __restrict__ ds) {
  wait_then_launch_dependents();
  const int per_row = shape.head_dim / 8;
  const int64_t n_vectors = static_cast<int64_t>(shape.n_seq) * shape.n_head * per_row;
  const int vec = static_cast<int>(threadIdx.x) / kCombineLanes, lane = static_cast<int>(threadIdx.x) % kCombineLanes;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kCombineVectors + vec;
  __shared__ float sv[kCombineVectors][8];
  float num[8] = {}, den = 0.0f;
  // A warp's four vectors are valid or not together (n_vectors is a multiple
  // of per_row, itself of 4), so whole warps take the shuffles below.
  if (i < n_vectors) {
    const int64_t row = i / per_row;
    const int d0 = 8 * static_cast<int>(i % per_row);
    const int ctx = ctx_lens[row / shape.n_head];
    const int n_valid = min(shape.n_splits, (ctx + shape.split_tokens - 1) / shape.split_tokens);
    const int64_t base = row * shape.n_splits;
    float top = -INFINITY;
#pragma unroll 4
    for (int s = lane; s < n_valid; s += kCombineLanes) top = fmaxf(top, part.m[base + s]);
#pragma unroll
    for (int o = kCombineLanes / 2; o > 0; o /= 2) top = fmaxf(top, __shfl_xor_sync(0xFFFFFFFFu, top, o));
#pragma unroll 4
    for (int s = lane; s < n_valid; s += kCombineLanes) {
      const float wt = merge_weight(part.m[base + s], top);
      const auto* acc = reinterpret_cast<const float4*>(part.acc + (base + s) * shape.head_dim + d0);
      const float4 a = acc[0], b = acc[1];
      const float av[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
      for (int k = 0; k < 8; ++k) num[k] = fmaf(wt, av[k], num[k]);
      den = fmaf(wt, part.l[base + s], den);
    }
#pragma unroll
    for (int o = kCombineLanes / 2; o > 0; o /= 2) {
#pragma unroll
      for (int k = 0; k < 8; ++k) num[k] += __shfl_xor_sync(0xFFFFFFFFu, num[k], o);
      den += __shfl_xor_sync(0xFFFFFFFFu, den, o);
    }
  }
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < 8; ++k) sv[vec][k] = den > 0.0f ? num[k] / den : 0.0f;
  }
  __syncthreads();
  if (threadIdx.x >= 32) return;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kCombineVectors + threadIdx.x;
  const bool valid = j < n_vectors;
  float v[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) v[k] = sv[threadIdx.x][k];
  if (valid) {  // the others only take part in the quantizer's shuffles
    const uint4 packed = pack8(v);
    out[j] = packed;
    if (kQuant) unpack8(packed, v);  // quantize the stored (rounded) values
  }
  if (kQuant) quantize8(v, valid, j, q, ds);
}

template <int D, int G>
void launch_split(const KvCacheView& cache, const __nv_bfloat16* q, const int32_t* block_table,
                  const int32_t* ctx_lens, const AttentionShape& shape, float scale,
                  const AttentionPartials& partials, cudaStream_t stream) {
  const int n_chunks = shape.n_head / shape.n_head_kv / G;
  const dim3 grid(static_cast<unsigned>(shape.n_head_kv * n_chunks), static_cast<unsigned>(shape.n_seq),
                  static_cast<unsigned>(shape.n_splits));
  auto launch = [&](auto kernel) {
    launch_kernel(kernel, grid, kWarps * 32, 0, stream, cache, q, block_table, ctx_lens, shape, scale * kLog2e,
                  partials);
  };
  switch (cache.type) {
    case KvType::kF16: return launch(attention_split_kernel<D, G, KvType::kF16>);
    case KvType::kBf16: return launch(attention_split_kernel<D, G, KvType::kBf16>);
    case KvType::kQ8_0: return launch(attention_split_kernel<D, G, KvType::kQ8_0>);
  }
}

// The largest chunk of query heads (at most 8) that divides the group.
int head_chunk(int group_size) {
  for (int g = 8; g > 1; --g) {
    if (group_size % g == 0) return g;
  }
  return 1;
}

template <int D>
void launch_for_dim(const KvCacheView& cache, const __nv_bfloat16* q, const int32_t* block_table,
                    const int32_t* ctx_lens, const AttentionShape& shape, float scale,
                    const AttentionPartials& p, cudaStream_t stream) {
  switch (head_chunk(shape.n_head / shape.n_head_kv)) {
    case 1: return launch_split<D, 1>(cache, q, block_table, ctx_lens, shape, scale, p, stream);
    case 2: return launch_split<D, 2>(cache, q, block_table, ctx_lens, shape, scale, p, stream);
    case 3: return launch_split<D, 3>(cache, q, block_table, ctx_lens, shape, scale, p, stream);
    case 4: return launch_split<D, 4>(cache, q, block_table, ctx_lens, shape, scale, p, stream);
    case 5: return launch_split<D, 5>(cache, q, block_table, ctx_lens, shape, scale, p, stream);
    case 6: return launch_split<D, 6>(cache, q, block_table, ctx_lens, shape, scale, p, stream);
    case 7: return launch_split<D, 7>(cache, q, block_table, ctx_lens, shape, scale, p, stream);
    default: return launch_split<D, 8>(cache, q, block_table, ctx_lens, shape, scale, p, stream);
  }
}

}  // namespace

void launch_decode_attention(const KvCacheView& cache, const __nv_bfloat16* q, const int32_t* block_table,
                             const int32_t* ctx_lens, const AttentionShape& shape, float scale,
                             const AttentionPartials& partials, __nv_bfloat16* out, void* xq,
                             cudaStream_t stream) {
  switch (shape.head_dim) {
    case 64: launch_for_dim<64>(cache, q, block_table, ctx_lens, shape, scale, partials, stream); break;
    case 128: launch_for_dim<128>(cache, q, block_table, ctx_lens, shape, scale, partials, stream); break;
    default: launch_for_dim<256>(cache, q, block_table, ctx_lens, shape, scale, partials, stream); break;
  }
  const int64_t n8 = static_cast<int64_t>(shape.n_seq) * shape.n_head * shape.head_dim / 8;
  const auto blocks = static_cast<unsigned>((n8 + kCombineVectors - 1) / kCombineVectors);
  auto* out8 = reinterpret_cast<uint4*>(out);
  if (xq == nullptr) {
    launch_kernel(attention_combine_kernel<false>, blocks, kCombineThreads, 0, stream, ctx_lens, shape, partials, out8,
                  static_cast<uint2*>(nullptr), static_cast<float2*>(nullptr));
  } else {
    auto* ds = reinterpret_cast<float2*>(static_cast<int8_t*>(xq) + n8 * 8);
    launch_kernel(attention_combine_kernel<true>, blocks, kCombineThreads, 0, stream, ctx_lens, shape, partials, out8,
                  static_cast<uint2*>(xq), ds);
  }
}

}  // namespace cohort::cuda::kernels
