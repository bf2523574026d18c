// The collectives of GPU ranks of one process over device memory (`-ar
// p2p`): all_reduce_sum is one kernel per rank (p2p_allreduce.h) that writes
// into its peers' receive buffers directly, through peer access between
// GPUs or within one GPU that several ranks share, and may be captured in a
// CUDA graph; outside a capture its launch is fenced (rank_fence.h). Same arithmetic
// and bits as comm::CpuCommunicator and StagedCommunicator on BF16 buffers.
// all_gather reads and writes host buffers (the logits) and is the CPU one.
//
// The ranks find each other's buffers through their group's state
// (group_state.h): each communicator registers its buffers when made; the first
// reduction waits (on the host, once) until every rank has, enables peer
// access to the other GPUs, and fails naming the pair if a GPU cannot reach
// another (then -ar host works).
//
// Ownership: the receive buffers [2][n_ranks][capacity] BF16, the flags and
// the call counters are allocated on the current device when made; calls
// allocate nothing. Thread safety: see comm/communicator.h; the calling
// thread has the stream's device current.
#pragma once

#include <cstdint>
#include <memory>

#include <cuda_runtime_api.h>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/p2p_allreduce.h"
#include "comm/cpu_communicator.h"

namespace cohort::cuda {

class P2pCommunicator final : public comm::Communicator {
 public:
  // capacity: the most elements one reduction has (ranks may differ; the
  // group uses the smallest). REQUIRES: group outlives
  // this object; every rank of the group makes a P2pCommunicator.
  P2pCommunicator(comm::CpuGroup& group, int rank, cudaStream_t stream, int64_t capacity);
  ~P2pCommunicator() override;

  int rank() const override { return host_.rank(); }
  int world_size() const override { return host_.world_size(); }

  // For tests of the token wrap-around: the state of a history whose last
  // call was `last` (every rank must set the same, between calls).
  void set_history(uint32_t last);

 protected:
  // x: BF16 device memory, at most `capacity` elements, a multiple of 8.
  void reduce(comm::Buffer x, comm::Queue queue) override;
  void gather(comm::ConstBuffer send, comm::Buffer recv, std::span<const int64_t> counts, int64_t n_rows,
              comm::Queue queue) override;

 private:
  struct Registry;
  void connect();

  comm::CpuCommunicator host_;
  cudaStream_t stream_;
  int device_ = 0;
  int64_t capacity_;
  DeviceBuffer<__nv_bfloat16> recv_;
  DeviceBuffer<uint32_t> flags_;
  DeviceBuffer<uint32_t> counters_;
  std::shared_ptr<Registry> registry_;
  P2pPeers peers_;
  bool connected_ = false;
};

}  // namespace cohort::cuda
