// Kernel launches with programmatic dependent launch (PDL, sm_90): a kernel
// launched by launch_kernel() may start while the kernel before it on the stream
// is still finishing, once that one's blocks have all passed their
// grid_dependency_wait() and called launch_dependents(). So every kernel
// launched here
//   - calls grid_dependency_wait() before it touches any memory another
//     kernel writes (activations, caches, step inputs, outputs), and
//   - calls launch_dependents() right after that wait (not earlier: a chain
//     of kernels launched ahead of their waits would hold multiprocessor
//     slots the running kernel needs).
// What a kernel may do before its wait: compute addresses and read the
// weights, which no kernel writes during a step. The decode matvecs request
// their first weight units there, so the loads of one layer's matrix start
// during the tail of the kernel before it. griddepcontrol.wait returns at
// once where the kernel was launched without the attribute (COHORT_PDL=0,
// or a predecessor that is not ours) and waits for the whole of the
// previous kernel, its memory operations included, where it was.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "backend/cuda/cuda_check.h"

namespace cohort::cuda {

// False where COHORT_PDL=0 (for measuring the difference): plain launches.
bool pdl_enabled();

__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Both at the top of a kernel that reads no weights ahead.
__device__ __forceinline__ void wait_then_launch_dependents() {
  grid_dependency_wait();
  launch_dependents();
}

// kernel<<<grid, block, smem, stream>>>(args...) with the PDL attribute.
template <typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = pdl_enabled() ? 1 : 0;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace cohort::cuda
