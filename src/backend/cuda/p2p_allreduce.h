// The one-shot all-reduce kernel of GPU ranks in one process (`-ar p2p`):
// every rank writes its BF16 contribution straight into every rank's receive
// buffer, raises a token per block in every rank's flags, waits for every
// rank's token in its own flags, and sums the contributions in rank order in
// F32: the bits of comm::CpuCommunicator on BF16 buffers.
//
// Token protocol (DESIGN.md, Tensor parallelism): the receive buffers and
// flags have two slots. A rank counts its calls in a device counter (so a
// replayed CUDA graph keeps counting), bumped by the last block of a call to
// finish; call k uses slot k % 2 and token k (32-bit, compared for
// equality, so it wraps) in every block. A rank writes slot k % 2 of a peer
// for call k only after its own call k - 1 saw the peer's token k - 1, which
// the peer raised after its call k - 2, the last reader of that slot, had
// finished (stream order). Two slots are enough, whatever the sizes of
// consecutive calls (their blocks cut the buffer differently). The token
// arithmetic lives in comm/p2p_protocol.h, where a CPU simulation of the
// protocol checks it across the wrap at 2^32.
//
// All pointers are device memory (a peer's, on another GPU, needs peer
// access); several ranks may share one GPU. Enqueued on `stream`; nothing is
// allocated; the kernel may be captured in a graph.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

namespace cohort::cuda {

inline constexpr int kP2pMaxRanks = 8;
inline constexpr int kP2pMaxBlocks = 128;
// counters[0]: calls so far; counters[1]: blocks of the current call done.
inline constexpr int kP2pCounters = 2;

// What every rank's kernel needs to reach its peers: per rank, its receive
// buffer [2 slots][n_ranks][capacity] and its flags [2][n_ranks][kP2pMaxBlocks].
struct P2pPeers {
  __nv_bfloat16* recv[kP2pMaxRanks];
  uint32_t* flags[kP2pMaxRanks];
  int n_ranks = 0;
  int64_t capacity = 0;  // elements per (slot, rank)
  // The most blocks a call runs with, the same on every rank. Every rank's
  // blocks wait for their peers', so all of them must fit on a GPU at once:
  // ranks that share a GPU divide kP2pMaxBlocks among them (p2p_max_blocks).
  int max_blocks = kP2pMaxBlocks;
};

// The block budget of each rank when at most `sharing` ranks use one GPU.
int p2p_max_blocks(int sharing);
// The blocks a reduction of n elements runs with (the same on every rank).
int p2p_blocks(int64_t n, int max_blocks);

// x [n] (BF16, in place) = bf16(sum over ranks in rank order of f32(x_r)).
// counters: this rank's [kP2pCounters]. Returns the launch's
// error. REQUIRES (the caller checks, P2pCommunicator): 0 < n <=
// peers.capacity, n % 8 == 0; x 16-byte aligned.
cudaError_t launch_p2p_all_reduce(const P2pPeers& peers, int rank, uint32_t* counters, __nv_bfloat16* x,
                                  int64_t n, cudaStream_t stream);

}  // namespace cohort::cuda
