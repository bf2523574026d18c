// fenced_launch: how a rank launches a kernel that waits on the GPU for the
// other ranks' kernels (the p2p reduction, NCCL's collectives).
//
// Such a kernel spins until every peer has launched its own. Meanwhile a
// peer's host thread may make a CUDA call that waits for the device to go
// idle (cuBLASLt loads a kernel at its first use, and that load waits; so do
// lazily loaded modules and cudaFree): it never returns, never launches its
// kernel, and both ranks wait for ever. Two host barriers around the launch
// rule that out: between them the ranks only launch, so whenever a rank does
// anything else, every such kernel on the device has all its peers launched
// and finishes.
//
// A stream that is being captured runs nothing, so a captured launch needs no
// fence; replaying the graph meets no host at all. A graph's kernels are
// loaded by the eager first step of its key (StepGraphs), so a capture loads
// nothing while a peer replays.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cuda/cuda_check.h"
#include "comm/cpu_communicator.h"

namespace cohort::cuda {

// REQUIRES: every rank of `ranks`' group calls it alike, on its own thread.
template <class Launch>
void fenced_launch(comm::CpuCommunicator& ranks, cudaStream_t stream, Launch&& launch) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  const bool fenced = capture == cudaStreamCaptureStatusNone;
  if (fenced) ranks.barrier();
  launch();
  if (fenced) ranks.barrier();
}

}  // namespace cohort::cuda
