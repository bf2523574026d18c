// COHORT_HOST_DEVICE marks inline helpers that the CUDA kernels share with
// the host code: __host__ __device__ under nvcc, nothing elsewhere.
#pragma once

#if defined(__CUDACC__)
#define COHORT_HOST_DEVICE __host__ __device__
#else
#define COHORT_HOST_DEVICE
#endif
