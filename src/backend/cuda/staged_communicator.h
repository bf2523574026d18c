// The collectives of GPU ranks of one process, staged through the host: the
// first working transport of tensor parallelism on GPUs, and the reference
// the faster ones are checked against.
//
// all_reduce_sum: a rank copies its contribution from the device into a
// pinned host buffer of its own, waits for the copy, and the ranks reduce
// their host copies with comm::CpuCommunicator (BF16 contributions summed in
// rank order in F32: the `host`/`p2p` arithmetic of DESIGN.md, the same bits
// on every rank); then each rank copies the sum back to its device buffer on
// its stream. all_gather reads and writes host buffers (the logits, which
// the backend already brought to the host) and is the CPU one.
//
// Every reduction waits for the stream on the host, so a backend with this
// communicator runs its steps eagerly (BackendOptions::graphs off): it cannot
// be captured in a CUDA graph. Several ranks may share one GPU.
//
// Ownership: the pinned buffer is allocated once (max_elems F32 elements);
// calls allocate nothing. Thread safety: see comm/communicator.h; the
// calling thread must have the stream's device current (the backend's
// begin_step() does that).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "comm/cpu_communicator.h"

namespace cohort::cuda {

class StagedCommunicator final : public comm::Communicator {
 public:
  // REQUIRES: group outlives this object; every rank of the group has a
  // StagedCommunicator. Throws cohort::Error if pinned memory is refused.
  StagedCommunicator(comm::CpuGroup& group, int rank, cudaStream_t stream, size_t max_elems);
  ~StagedCommunicator() override;
  StagedCommunicator(const StagedCommunicator&) = delete;
  StagedCommunicator& operator=(const StagedCommunicator&) = delete;

  int rank() const override { return host_.rank(); }
  int world_size() const override { return host_.world_size(); }

 protected:
  // x: device memory. Throws cohort::Error if it exceeds max_elems.
  void reduce(comm::Buffer x, comm::Queue queue) override;
  // send and recv: host memory.
  void gather(comm::ConstBuffer send, comm::Buffer recv, std::span<const int64_t> counts, int64_t n_rows,
              comm::Queue queue) override;

 private:
  comm::CpuCommunicator host_;
  cudaStream_t stream_;
  void* staging_ = nullptr;  // pinned, capacity_ bytes
  size_t capacity_ = 0;
};

}  // namespace cohort::cuda
