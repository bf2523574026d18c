// The dequantize kernels of dequantize.cu, one launcher per type; the checks
// and error messages are in dequantize.cpp (nvcc does not compile fmt).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "gguf/tensor_type.h"

namespace cohort::cuda::kernels {

// Enqueues the expansion of n elements (n > 0, whole blocks) from src to dst.
using DequantizeLauncher = void (*)(const void* src, float* dst, int64_t n, cudaStream_t stream);
using DequantizeBf16Launcher = void (*)(const void* src, __nv_bfloat16* dst, int64_t n, cudaStream_t stream);
// Enqueues out[r, :] = row ids[r] of table (rows of row_bytes), r < n_ids.
using GetRowsLauncher = void (*)(const void* table, size_t row_bytes, const int32_t* ids, int64_t n_ids,
                                 int64_t n_cols, __nv_bfloat16* out, int64_t out_stride, cudaStream_t stream);

struct TypeLaunchers {
  DequantizeLauncher f32 = nullptr;
  DequantizeBf16Launcher bf16 = nullptr;
  GetRowsLauncher rows = nullptr;
};

// The launchers of `type`, all null for a type without kernels.
TypeLaunchers type_launchers(gguf::TensorType type);

}  // namespace cohort::cuda::kernels
