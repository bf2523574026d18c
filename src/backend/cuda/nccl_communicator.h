// The collectives of GPU ranks of one process through NCCL (`-ar nccl`):
// all_reduce_sum is ncclAllReduce in place, in the buffer's type; NCCL picks
// its own algorithm and summation order, so the result may differ from the
// host/p2p bits in the last place (DESIGN.md). all_gather reads and writes
// host buffers (the logits) and is the CPU one.
//
// NCCL runs one rank per GPU: the ranks' devices must differ (the decoder's
// options refuse -dev lists that repeat a GPU with -ar nccl). The ranks share
// one unique id through their group's state; each joins the NCCL
// communicator at its first reduction, on its own thread (ncclCommInitRank
// waits for every rank, so the ranks cannot join one after another from the
// thread that makes them). Launches outside a capture are fenced
// (rank_fence.h); NCCL's kernels may be captured in CUDA graphs.
//
// Ownership: the NCCL communicator, released (aborted, after the stream has
// drained, which waits for no peer) when this object goes. Thread safety:
// see comm/communicator.h; the calling thread has the stream's device current.
#pragma once

#include <memory>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "comm/cpu_communicator.h"

namespace cohort::cuda {

class NcclCommunicator final : public comm::Communicator {
 public:
  // REQUIRES: group outlives this object; every rank of the group makes an
  // NcclCommunicator. Throws cohort::Error if NCCL cannot be loaded.
  NcclCommunicator(comm::CpuGroup& group, int rank, cudaStream_t stream);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return host_.rank(); }
  int world_size() const override { return host_.world_size(); }

 protected:
  void reduce(comm::Buffer x, comm::Queue queue) override;
  void gather(comm::ConstBuffer send, comm::Buffer recv, std::span<const int64_t> counts, int64_t n_rows,
              comm::Queue queue) override;

 private:
  comm::CpuCommunicator host_;
  cudaStream_t stream_;
  std::shared_ptr<ncclUniqueId> id_;  // the group's
  ncclComm_t comm_ = nullptr;         // joined at the first reduction
};

}  // namespace cohort::cuda
