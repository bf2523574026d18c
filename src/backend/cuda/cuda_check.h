// CUDA_CHECK(call): a failed CUDA runtime call becomes a cohort::Error that
// names the call, the CUDA error and where it was made (DESIGN.md, Errors).
// Usable in .cu files: nothing here pulls in fmt, which nvcc cannot compile.
#pragma once

#include <cuda_runtime_api.h>

namespace cohort::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);

}  // namespace cohort::cuda

#define CUDA_CHECK(call)                                                                \
  do {                                                                                  \
    const cudaError_t cohort_cuda_status_ = (call);                                     \
    if (cohort_cuda_status_ != cudaSuccess) {                                           \
      ::cohort::cuda::throw_cuda_error(cohort_cuda_status_, #call, __FILE__, __LINE__); \
    }                                                                                   \
  } while (0)
