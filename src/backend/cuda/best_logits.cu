#include "backend/cuda/best_logits.h"

#include <cub/block/block_load.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>

#include "backend/cuda/cuda_check.h"

namespace cohort::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kItems = kBestChunk / kThreads;
// Past a row's end: after every real logit (-inf's key is 0xFF800000).
constexpr uint32_t kPadKey = 0xFFFFFFFFu;
static_assert(kMaxBestK * 16 <= kBestChunk, "a chunk keeps at most a sixteenth of itself");

// Ascending keys are descending logits; NaN sorts as -inf and -0 as +0.
__device__ __forceinline__ uint32_t sort_key(float f) {
  if (isnan(f)) f = -INFINITY;
  if (f == 0.0f) f = 0.0f;
  const uint32_t b = __float_as_uint(f);
  const uint32_t ascending = (b & 0x80000000u) != 0 ? ~b : b | 0x80000000u;
  return ~ascending;
}

__device__ __forceinline__ float key_logit(uint32_t key) {
  const uint32_t ascending = ~key;
  return __uint_as_float((ascending & 0x80000000u) != 0 ? ascending & 0x7FFFFFFFu : ~ascending);
}

// One chunk of one row: the logits (first round) or the keys and ids a
// previous round kept. Writes the chunk's best k as keys and ids, or as
// BestLogit where this is the row's only chunk (`out`).
template <bool kFromLogits>
__global__ void __launch_bounds__(kThreads) best_chunk_kernel(const float* __restrict__ logits,
                                                              const uint32_t* __restrict__ masks,
                                                              const uint32_t* __restrict__ in_keys,
                                                              const int32_t* __restrict__ in_ids, int64_t n, int k,
                                                              uint32_t* __restrict__ out_keys,
                                                              int32_t* __restrict__ out_ids, BestLogit* __restrict__ out) {
  using Sort = cub::BlockRadixSort<uint32_t, kThreads, kItems, int32_t>;
  using Reduce = cub::BlockReduce<uint64_t, kThreads>;
  using LoadF = cub::BlockLoad<float, kThreads, kItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using LoadU = cub::BlockLoad<uint32_t, kThreads, kItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using LoadI = cub::BlockLoad<int32_t, kThreads, kItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  __shared__ union {
    typename Sort::TempStorage sort;
    typename Reduce::TempStorage reduce;
    typename LoadF::TempStorage load_f;
    typename LoadU::TempStorage load_u;
    typename LoadI::TempStorage load_i;
  } smem;

  const int64_t row = blockIdx.y;
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kBestChunk;
  const int valid = static_cast<int>(n - begin < kBestChunk ? n - begin : kBestChunk);
  // Blocked arrangement: thread t holds elements [t * kItems, (t + 1) * kItems)
  // of the chunk, so rank order among equal keys is input order.
  uint32_t keys[kItems];
  int32_t ids[kItems];
  if constexpr (kFromLogits) {
    float v[kItems];
    LoadF(smem.load_f).Load(logits + row * n + begin, v, valid, -INFINITY);
    // A thread's kItems (16) elements start at a multiple of 16: half a mask word.
    static_assert(kItems == 16 && kBestChunk % 32 == 0, "a thread's elements lie in one mask word");
    uint32_t allowed = 0xFFFFFFFFu;
    if (masks != nullptr && threadIdx.x * kItems < valid) {
      const int64_t words = (n + 31) / 32;
      allowed = masks[row * words + (begin + threadIdx.x * kItems) / 32] >> ((threadIdx.x * kItems) % 32);
    }
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int e = threadIdx.x * kItems + i;
      const float f = ((allowed >> i) & 1u) != 0 ? v[i] : -INFINITY;
      keys[i] = e < valid ? sort_key(f) : kPadKey;
      ids[i] = static_cast<int32_t>(begin + e);
    }
  } else {
    LoadU(smem.load_u).Load(in_keys + row * n + begin, keys, valid, kPadKey);
    __syncthreads();
    LoadI(smem.load_i).Load(in_ids + row * n + begin, ids, valid, -1);
  }
  __syncthreads();

  const bool last = gridDim.x == 1;
  const int64_t at = (row * gridDim.x + blockIdx.x) * k;  // this chunk's k in the round's output
  if (k == 1) {
    uint64_t best = ~uint64_t{0};
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      best = min(best, static_cast<uint64_t>(keys[i]) << 32 | static_cast<uint32_t>(ids[i]));
    }
    best = Reduce(smem.reduce).Reduce(best, [](uint64_t a, uint64_t b) { return min(a, b); });
    if (threadIdx.x != 0) return;
    const auto key = static_cast<uint32_t>(best >> 32);
    const auto id = static_cast<int32_t>(static_cast<uint32_t>(best));
    if (last) {
      out[row] = {id, key_logit(key)};
    } else {
      out_keys[at] = key;
      out_ids[at] = id;
    }
    return;
  }
  Sort(smem.sort).Sort(keys, ids);
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int rank = threadIdx.x * kItems + i;
    if (rank >= k) break;
    if (last) {
      out[row * k + rank] = {ids[i], key_logit(keys[i])};
    } else {
      out_keys[at + rank] = keys[i];
      out_ids[at + rank] = ids[i];
    }
  }
}

int64_t chunks_of(int64_t n) { return (n + kBestChunk - 1) / kBestChunk; }

}  // namespace

size_t best_logits_scratch_bytes(int64_t n_rows, int64_t n, int k) {
  const int64_t chunks = chunks_of(n);
  if (chunks <= 1) return 0;
  // Two rounds' survivors (keys and ids), the first round's the most.
  return 2 * static_cast<size_t>(n_rows * chunks * k) * (sizeof(uint32_t) + sizeof(int32_t));
}

namespace kernels {

void launch_best_logits(const float* logits, int64_t n_rows, int64_t n, int k, void* scratch, BestLogit* out,
                        cudaStream_t stream, const uint32_t* masks) {
  const size_t half = best_logits_scratch_bytes(n_rows, n, k) / 2;
  auto* base = static_cast<uint8_t*>(scratch);
  const size_t n_pairs = half / (sizeof(uint32_t) + sizeof(int32_t));
  uint32_t* keys[2] = {reinterpret_cast<uint32_t*>(base), reinterpret_cast<uint32_t*>(base + half)};
  int32_t* ids[2] = {reinterpret_cast<int32_t*>(base + n_pairs * sizeof(uint32_t)),
                     reinterpret_cast<int32_t*>(base + half + n_pairs * sizeof(uint32_t))};
  int64_t chunks = chunks_of(n);
  best_chunk_kernel<true><<<dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(n_rows)), kThreads, 0, stream>>>(
      logits, masks, nullptr, nullptr, n, k, keys[0], ids[0], out);
  CUDA_CHECK(cudaGetLastError());
  for (int in = 0; chunks > 1; in ^= 1) {
    const int64_t n_in = chunks * k;
    chunks = chunks_of(n_in);
    best_chunk_kernel<false><<<dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(n_rows)), kThreads, 0, stream>>>(
        nullptr, nullptr, keys[in], ids[in], n_in, k, keys[in ^ 1], ids[in ^ 1], out);
    CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace kernels
}  // namespace cohort::cuda
