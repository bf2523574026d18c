#include "backend/cuda/cuda_check.h"

#include "common/error.h"

namespace cohort::cuda {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  fail("CUDA: {} failed: {} ({}) at {}:{}", call, cudaGetErrorString(status),
       cudaGetErrorName(status), file, line);
}

}  // namespace cohort::cuda
