#include "backend/cuda/gpu_communicator.h"

#include "backend/cuda/nccl_communicator.h"
#include "backend/cuda/p2p_communicator.h"
#include "common/error.h"

namespace cohort::cuda {

std::unique_ptr<comm::Communicator> make_gpu_communicator(const std::string& transport, comm::CpuGroup& group,
                                                          int rank, cudaStream_t stream, int64_t capacity,
                                                          const comm::ArRouting& routing) {
  using Memory = P2pCommunicator::Memory;
  if (transport == "nccl") return std::make_unique<NcclCommunicator>(group, rank, stream);
  if (transport == "host") return std::make_unique<P2pCommunicator>(group, rank, stream, capacity, Memory::host, routing);
  if (transport == "p2p") return std::make_unique<P2pCommunicator>(group, rank, stream, capacity, Memory::device, routing);
  fail("-ar {}: unknown transport (nccl, host, p2p)", transport);
}

}  // namespace cohort::cuda
