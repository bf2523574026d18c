// The one place a GPU rank's transport (-ar) becomes a communicator: the
// backend's ranks, `cohort ar-bench` and the communicator tests all make
// theirs here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <cuda_runtime.h>

#include "comm/ar_routing.h"
#include "comm/communicator.h"
#include "comm/cpu_communicator.h"

namespace cohort::cuda {

// The communicator of rank `rank` of `group` for transport `transport`
// (nccl, host or p2p), reducing buffers of up to `capacity` elements on
// `stream`; host and p2p route reductions by size as `routing` says
// (COHORT_AR_CE_MIN_BYTES and COHORT_AR_NCCL_MIN_BYTES unless given). Throws
// cohort::Error naming the transports for another name, and naming the
// variable for a routing variable that is not a size.
// REQUIRES: group outlives the communicator; the stream's device is current.
std::unique_ptr<comm::Communicator> make_gpu_communicator(const std::string& transport, comm::CpuGroup& group,
                                                          int rank, cudaStream_t stream, int64_t capacity,
                                                          const comm::ArRouting& routing = comm::ar_routing_from_env());

}  // namespace cohort::cuda
