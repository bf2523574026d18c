// The collectives of GPU ranks of one process through memory that every
// rank's kernels reach (`-ar p2p`: each rank's device memory, through peer
// access between GPUs or within one GPU that several ranks share; `-ar
// host`: one shared buffer in pinned host memory mapped into every GPU).
// all_reduce_sum takes the path comm/ar_routing.h gives its size: the small
// path is one kernel per rank (p2p_allreduce.h) that stores its contribution
// and sums; the large path copies the contribution with copy engines between
// a waiting kernel and the summing one; from COHORT_AR_NCCL_MIN_BYTES, NCCL.
// All of them may be captured in a CUDA graph; outside a capture their
// launches are fenced (rank_fence.h). Both memories do the same arithmetic
// and give the same bits as comm::CpuCommunicator on BF16 buffers. all_gather
// reads and writes host buffers (the logits) and is the CPU one.
//
// The ranks find each other's buffers through their group's state
// (group_state.h): each communicator registers its buffers when made; the
// first reduction waits (on the host, once) until every rank has, and then
// either enables peer access to the other GPUs, failing with the pair named
// if a GPU cannot reach another (then -ar host works), or, for host memory,
// the first rank to get there allocates the shared buffer.
//
// Ownership: the receive buffers (two slots of [n_ranks][capacity] BF16 for
// the small path, one for the large), the flags and the call counters are
// allocated when made (host memory: at the first reduction, shared, freed
// with the last rank's communicator); calls allocate nothing. Thread safety:
// see comm/communicator.h; the calling thread has the stream's device current.
#pragma once

#include <cstdint>
#include <memory>

#include <cuda_runtime_api.h>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/p2p_allreduce.h"
#include "comm/ar_routing.h"
#include "comm/cpu_communicator.h"

namespace cohort::cuda {

class NcclCommunicator;

class P2pCommunicator final : public comm::Communicator {
 public:
  enum class Memory : uint8_t { device, host };  // -ar p2p, -ar host

  // capacity: the most elements one reduction has (ranks may differ; the
  // group uses the smallest). REQUIRES: group outlives this object; every
  // rank of the group makes a P2pCommunicator with the same memory and routing.
  P2pCommunicator(comm::CpuGroup& group, int rank, cudaStream_t stream, int64_t capacity, Memory memory,
                  const comm::ArRouting& routing);
  ~P2pCommunicator() override;

  int rank() const override { return host_.rank(); }
  int world_size() const override { return host_.world_size(); }

  // For tests of the token wrap-around: the state of a history whose last
  // call was `last` (collective: every rank sets the same, between calls).
  void set_history(uint32_t last);

 protected:
  // x: BF16 device memory, at most `capacity` elements, a multiple of 8.
  void reduce(comm::Buffer x, comm::Queue queue) override;
  void gather(comm::ConstBuffer send, comm::Buffer recv, std::span<const int64_t> counts, int64_t n_rows,
              comm::Queue queue) override;

 private:
  struct Registry;
  void connect();
  void connect_nccl(bool gpu_repeats);
  void copy_contribution(const __nv_bfloat16* x, int64_t n);
  const char* name() const { return memory_ == Memory::host ? "host" : "p2p"; }

  comm::CpuGroup& group_;
  comm::CpuCommunicator host_;
  cudaStream_t stream_;
  int device_ = 0;
  int64_t capacity_;
  Memory memory_;
  comm::ArRouting routing_;
  DeviceBuffer<__nv_bfloat16> recv_;   // device memory: slots [2][n_ranks][capacity]
  DeviceBuffer<__nv_bfloat16> large_;  // device memory: [n_ranks][capacity]
  DeviceBuffer<uint32_t> flags_;       // device memory: p2p_flag_count(n_ranks)
  DeviceBuffer<uint32_t> counters_;
  std::shared_ptr<Registry> registry_;
  std::unique_ptr<NcclCommunicator> nccl_;  // from COHORT_AR_NCCL_MIN_BYTES, where NCCL can run
  P2pPeers peers_;
  bool connected_ = false;
};

}  // namespace cohort::cuda
