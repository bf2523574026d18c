// Dequantization on the GPU: the block formats of quant/ expanded to F32 in
// device memory, with the same bits as quant::dequantize (the CPU reference;
// the GPU tests compare the two on every type and on whole model files).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
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
// The same values rounded to BF16 (the GEMM operands of a prefill).
void dequantize(gguf::TensorType type, const void* src, __nv_bfloat16* dst, int64_t n,
                cudaStream_t stream);

// out [n_ids, n_cols] (rows out_stride elements apart) = rows ids[0..n_ids)
// of `table`, rows of row_bytes bytes in `type`, as BF16: embedding lookups
// and the gather of the rows that want logits. ids is device memory.
// REQUIRES (else cohort::Error): n_cols whole blocks; n_ids <= 65535; every
// id a row of the table (not checked on the device).
void get_rows(gguf::TensorType type, const void* table, size_t row_bytes, const int32_t* ids, int64_t n_ids,
              int64_t n_cols, __nv_bfloat16* out, int64_t out_stride, cudaStream_t stream);

}  // namespace cohort::cuda
