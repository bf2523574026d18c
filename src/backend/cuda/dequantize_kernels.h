// The dequantize kernels of dequantize.cu, one launcher per type; the checks
// and error messages are in dequantize.cpp (nvcc does not compile fmt).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "gguf/tensor_type.h"

namespace cohort::cuda::kernels {

// Enqueues the expansion of n elements (n > 0, whole blocks) from src to dst.
using DequantizeLauncher = void (*)(const void* src, float* dst, int64_t n, cudaStream_t stream);

// The launcher of `type`, or nullptr for a type without a kernel.
DequantizeLauncher dequantize_launcher(gguf::TensorType type);

}  // namespace cohort::cuda::kernels
