#include "backend/cuda/dequantize.h"

#include "backend/cuda/dequantize_kernels.h"
#include "common/error.h"

namespace cohort::cuda {
namespace {

kernels::TypeLaunchers checked(gguf::TensorType type, int64_t n_per_row) {
  const kernels::TypeLaunchers l = kernels::type_launchers(type);
  if (l.f32 == nullptr) fail("cuda: dequantize of tensor type {} is not supported", gguf::type_name(type));
  const int64_t block = gguf::traits(type).block_size;
  if (n_per_row < 0 || n_per_row % block != 0) {
    fail("cuda: {} elements of type {} is not a multiple of its block size {}", n_per_row,
         gguf::type_name(type), block);
  }
  return l;
}

}  // namespace

bool can_dequantize(gguf::TensorType type) { return kernels::type_launchers(type).f32 != nullptr; }

void dequantize(gguf::TensorType type, const void* src, float* dst, int64_t n, cudaStream_t stream) {
  const kernels::TypeLaunchers l = checked(type, n);
  if (n > 0) l.f32(src, dst, n, stream);
}

void dequantize(gguf::TensorType type, const void* src, __nv_bfloat16* dst, int64_t n, cudaStream_t stream) {
  const kernels::TypeLaunchers l = checked(type, n);
  if (n > 0) l.bf16(src, dst, n, stream);
}

void get_rows(gguf::TensorType type, const void* table, size_t row_bytes, const int32_t* ids, int64_t n_ids,
              int64_t n_cols, __nv_bfloat16* out, int64_t out_stride, cudaStream_t stream) {
  const kernels::TypeLaunchers l = checked(type, n_cols);
  if (n_ids < 0 || n_ids > 65535 || out_stride < n_cols) {
    fail("cuda: get_rows of {} rows of {} into rows of {} (at most 65535 rows a call)", n_ids, n_cols,
         out_stride);
  }
  if (n_ids > 0 && n_cols > 0) l.rows(table, row_bytes, ids, n_ids, n_cols, out, out_stride, stream);
}

}  // namespace cohort::cuda
