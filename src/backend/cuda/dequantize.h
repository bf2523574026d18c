// Dequantization on the GPU: the block formats of quant/ expanded to F32 in
// device memory, with the same bits as quant::dequantize (the CPU reference;
// the GPU tests compare the two on every type and on whole model files).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "gguf/tensor_type.h"

namespace cohort::cuda {

// The types dequantize() handles: those of quant::is_supported.
bool can_dequantize(gguf::TensorType type);

// dst[0..n) = values of the n elements stored at src; both pointers are
// device memory, src 2-byte aligned. Enqueued on `stream`. Throws
// cohort::Error for an unsupported type or an n that is not a whole number of
// blocks (n == 0 launches nothing).
void dequantize(gguf::TensorType type, const void* src, float* dst, int64_t n,
                cudaStream_t stream);

}  // namespace cohort::cuda
