// The all-reduce kernels of GPU ranks in one process (`-ar p2p` and `-ar
// host`): every rank's BF16 contribution reaches every rank's receive
// buffer, the rank raises a token per block in every rank's flags, waits for
// every rank's token in its own flags, and sums the contributions in rank
// order in F32: the bits of comm::CpuCommunicator on BF16 buffers.
//
// Where the receive buffers live:
// - p2p: each rank has its own, in device memory; a rank writes into every
//   rank's (a peer's, on another GPU, through peer access).
// - host (`one_buffer`): one buffer and one set of flags that every rank
//   shares, in pinned host memory mapped into every GPU; a rank writes its
//   row once and reads the others' rows across the bus.
//
// How a contribution gets there (comm/ar_routing.h):
// - small path: the reduction kernel's blocks store it (16 bytes per thread
//   and step) into receive slot k % 2;
// - large path: launch_p2p_wait_readers waits until every rank has finished
//   its previous call (the last reader of the large buffers), copy engines
//   copy the contribution into every rank's large buffer (the caller's
//   cudaMemcpyAsync), then the reduction kernel runs with `copied` set: it
//   announces and sums what is there.
//
// Token protocol (DESIGN.md, Tensor parallelism): the slots' buffers and
// flags have two slots. A rank counts its calls in a device counter (so a
// replayed CUDA graph keeps counting), bumped by the last block of a call to
// finish, which also writes the call's token into every rank's `done` word
// for it. Call k uses slot k % 2 and token k (32-bit, compared for
// equality, so it wraps) in every block. A rank writes slot k % 2 of a peer
// for call k only after its own call k - 1 saw the peer's token k - 1, which
// the peer raised after its call k - 2, the last reader of that slot, had
// finished (stream order). Two slots are enough, whatever the sizes of
// consecutive calls (their blocks cut the buffer differently). The large
// buffers have one slot, guarded by the `done` words instead: before call k
// copies, every peer's done word holds k - 1. The token arithmetic lives in
// comm/p2p_protocol.h, where a CPU simulation of the protocol checks it
// across the wrap at 2^32.
//
// All pointers are device memory or mapped host memory; several ranks may
// share one GPU. Enqueued on `stream`; nothing is allocated; the kernels may
// be captured in a graph.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "common/host_device.h"

namespace cohort::cuda {

inline constexpr int kP2pMaxRanks = 8;
inline constexpr int kP2pMaxBlocks = 128;
// counters[0]: calls so far; counters[1]: blocks of the current call done.
inline constexpr int kP2pCounters = 2;

// Elements of a rank's flags: tokens [2 slots][n_ranks][kP2pMaxBlocks], then
// done words [n_ranks] (done[s]: the last call rank s finished).
COHORT_HOST_DEVICE constexpr int64_t p2p_flag_count(int n_ranks) { return (2 * kP2pMaxBlocks + 1) * n_ranks; }
COHORT_HOST_DEVICE constexpr int64_t p2p_done_offset(int n_ranks) { return 2 * kP2pMaxBlocks * n_ranks; }

// What every rank's kernel needs to reach its peers: per rank, its receive
// buffers (slots [2][n_ranks][capacity], large [n_ranks][capacity]) and its
// flags. With one_buffer, every entry is the same shared memory.
struct P2pPeers {
  __nv_bfloat16* recv[kP2pMaxRanks];
  __nv_bfloat16* large[kP2pMaxRanks];
  uint32_t* flags[kP2pMaxRanks];
  int n_ranks = 0;
  bool one_buffer = false;  // -ar host: the buffers and flags are shared host memory
  int64_t capacity = 0;     // elements per (slot, rank)
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
// counters: this rank's [kP2pCounters]. copied: every rank's contribution of
// this call is already in the large buffers (the large path). Returns the
// launch's error. REQUIRES (the caller checks, P2pCommunicator): 0 < n <=
// peers.capacity, n % 8 == 0; x 16-byte aligned.
cudaError_t launch_p2p_all_reduce(const P2pPeers& peers, int rank, uint32_t* counters, __nv_bfloat16* x,
                                  int64_t n, bool copied, cudaStream_t stream);

// The large path's first step: returns (on the stream) once every rank has
// finished the call before this rank's next one. One block.
cudaError_t launch_p2p_wait_readers(const P2pPeers& peers, int rank, const uint32_t* counters, cudaStream_t stream);

}  // namespace cohort::cuda
