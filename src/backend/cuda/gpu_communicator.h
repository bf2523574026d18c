// The one place a GPU rank's transport (-ar) becomes a communicator: the
// backend's ranks, `cohort ar-bench` and the communicator tests all make
// theirs here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <cuda_runtime.h>

#include "comm/communicator.h"
#include "comm/cpu_communicator.h"

namespace cohort::cuda {

// The communicator of rank `rank` of `group` for transport `transport`
// (nccl, host or p2p), reducing buffers of up to `capacity` elements on
// `stream`. Throws cohort::Error naming the transports for another name.
// REQUIRES: group outlives the communicator; the stream's device is current.
std::unique_ptr<comm::Communicator> make_gpu_communicator(const std::string& transport, comm::CpuGroup& group,
                                                          int rank, cudaStream_t stream, int64_t capacity);

}  // namespace cohort::cuda
