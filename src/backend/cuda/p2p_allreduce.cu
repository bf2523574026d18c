#include "backend/cuda/p2p_allreduce.h"

#include <algorithm>

#include "comm/p2p_protocol.h"

namespace cohort::cuda {
namespace {

constexpr int kThreads = 512;
// Elements a block takes at least: below it, fewer blocks (each block's
// token round trip costs about as much as moving 8 KiB).
constexpr int64_t kMinPerBlock = 4096;

__device__ uint32_t load_volatile(const uint32_t* p) { return *static_cast<const volatile uint32_t*>(p); }
__device__ void store_volatile(uint32_t* p, uint32_t v) { *static_cast<volatile uint32_t*>(p) = v; }

// 8 BF16 of a receive buffer, written by another rank in this call: from L2
// (__ldcg), where a peer's writes into this GPU's memory land (L1 may hold
// this slot's contents of two calls ago); from host memory afresh (__ldcv),
// since no cache of this GPU sees a write that came over the bus.
__device__ uint4 load_received(const __nv_bfloat16* p, bool host) {
  const auto* v = reinterpret_cast<const uint4*>(p);
  return host ? __ldcv(v) : __ldcg(v);
}

__global__ void __launch_bounds__(kThreads) p2p_all_reduce_kernel(P2pPeers peers, int rank, uint32_t* counters,
                                                                   __nv_bfloat16* x, int64_t n, int64_t per_block,
                                                                   bool copied) {
  const int b = blockIdx.x;
  __shared__ uint32_t token;
  if (threadIdx.x == 0) token = comm::p2p_next_token(counters[0]);
  __syncthreads();
  const uint32_t k = token;
  const int slot = comm::p2p_slot(k);
  const int64_t begin = b * per_block, end = min(n, begin + per_block);
  const int R = peers.n_ranks;
  const int64_t cap = peers.capacity;
  // The buffers this rank writes into: every rank's, or the one they share.
  const int targets = peers.one_buffer ? 1 : R;
  // 1. My chunk into every rank's receive buffer, slot `slot`, row `rank`
  //    (16 bytes per thread and step), unless the copy engines brought it.
  for (int s = 0; s < targets && !copied; ++s) {
    __nv_bfloat16* dst = peers.recv[s] + (static_cast<int64_t>(slot) * R + rank) * cap;
    for (int64_t i = begin + 8 * threadIdx.x; i < end; i += 8 * kThreads) {
      *reinterpret_cast<uint4*>(dst + i) = *reinterpret_cast<const uint4*>(x + i);
    }
  }
  __threadfence_system();  // each thread's writes before the token that announces them
  __syncthreads();
  if (threadIdx.x < targets) {
    store_volatile(peers.flags[threadIdx.x] + (slot * R + rank) * kP2pMaxBlocks + b, k);
  }
  // 2. Every rank's token for this block in my flags.
  if (threadIdx.x < R) {
    const uint32_t* f = peers.flags[rank] + (slot * R + threadIdx.x) * kP2pMaxBlocks + b;
    while (!comm::p2p_announces(load_volatile(f), k)) {
    }
    __threadfence_system();
  }
  __syncthreads();
  // 3. The sum in rank order.
  const __nv_bfloat16* mine = copied ? peers.large[rank] : peers.recv[rank] + static_cast<int64_t>(slot) * R * cap;
  for (int64_t i = begin + 8 * threadIdx.x; i < end; i += 8 * kThreads) {
    float acc[8];
    const uint4 v0 = load_received(mine + i, peers.one_buffer);
    const __nv_bfloat16* h0 = reinterpret_cast<const __nv_bfloat16*>(&v0);
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] = __bfloat162float(h0[j]);
    for (int s = 1; s < R; ++s) {
      const uint4 v = load_received(mine + s * cap + i, peers.one_buffer);
      const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(&v);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j] += __bfloat162float(h[j]);
    }
    uint4 out;
    __nv_bfloat16* o = reinterpret_cast<__nv_bfloat16*>(&out);
#pragma unroll
    for (int j = 0; j < 8; ++j) o[j] = __float2bfloat16_rn(acc[j]);
    *reinterpret_cast<uint4*>(x + i) = out;
  }
  // The last block of the call to finish counts the call (every block has
  // read counters[0] by then: each reads it before it arrives here) and tells
  // every rank that this rank has read its buffers for call k.
  __syncthreads();
  if (threadIdx.x == 0 && atomicAdd(&counters[1], 1u) == gridDim.x - 1) {
    counters[1] = 0;
    counters[0] = k;
    for (int s = 0; s < targets; ++s) store_volatile(peers.flags[s] + p2p_done_offset(R) + rank, k);
  }
}

// Thread s waits until rank s has finished this rank's previous call.
__global__ void p2p_wait_readers_kernel(P2pPeers peers, int rank, const uint32_t* counters) {
  const int s = threadIdx.x;
  if (s >= peers.n_ranks || s == rank) return;
  const uint32_t last = counters[0];
  const uint32_t* done = peers.flags[rank] + p2p_done_offset(peers.n_ranks) + s;
  while (load_volatile(done) != last) {
  }
  __threadfence_system();  // the peer's reads before the copies that follow
}

}  // namespace

int p2p_max_blocks(int sharing) { return std::max(8, kP2pMaxBlocks / std::max(1, sharing)); }

int p2p_blocks(int64_t n, int max_blocks) {
  return static_cast<int>(std::clamp<int64_t>((n + kMinPerBlock - 1) / kMinPerBlock, 1, max_blocks));
}

cudaError_t launch_p2p_all_reduce(const P2pPeers& peers, int rank, uint32_t* counters, __nv_bfloat16* x, int64_t n,
                                  bool copied, cudaStream_t stream) {
  const int blocks = p2p_blocks(n, peers.max_blocks);
  const int64_t per_block = (n / 8 + blocks - 1) / blocks * 8;
  p2p_all_reduce_kernel<<<blocks, kThreads, 0, stream>>>(peers, rank, counters, x, n, per_block, copied);
  return cudaGetLastError();
}

cudaError_t launch_p2p_wait_readers(const P2pPeers& peers, int rank, const uint32_t* counters, cudaStream_t stream) {
  p2p_wait_readers_kernel<<<1, kP2pMaxRanks, 0, stream>>>(peers, rank, counters);
  return cudaGetLastError();
}

}  // namespace cohort::cuda
