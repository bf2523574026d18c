// Prefill matmuls on cuBLAS: y = x · Wᵀ for micro-batches too large for the
// matvec kernels. The operands are BF16 with F32 accumulation (DESIGN.md,
// Numerics): BF16 weights are read in place; every other type is first
// dequantized to BF16, a chunk of rows at a time, into a scratch buffer
// allocated once, so no call allocates.
//
// Ownership: a Gemm owns its cuBLAS handle, its cuBLAS workspace and the
// scratch, and enqueues everything on the stream it was made for.
// Thread safety: one thread drives it.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/matvec.h"
#include "gguf/tensor_type.h"

namespace cohort::cuda {

class Gemm {
 public:
  // scratch_elems: BF16 elements of the dequantization scratch (at least one
  // row of the widest matrix). Throws cohort::Error if cuBLAS cannot start.
  Gemm(cudaStream_t stream, int64_t scratch_elems);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // y [n_tok, n_out] (rows of n_out elements, BF16 or F32) = x [n_tok, n_in]
  // BF16 · Wᵀ, W [n_out, n_in] in its file type (rows of gguf::row_bytes).
  // REQUIRES (else cohort::Error): a type cuda::dequantize handles, n_in
  // whole blocks and no longer than the scratch; device pointers.
  void run(gguf::TensorType type, const void* w, int64_t n_out, int64_t n_in, const __nv_bfloat16* x,
           int64_t n_tok, void* y, OutType out);

 private:
  void gemm(const __nv_bfloat16* w, int64_t n_rows, int64_t n_in, const __nv_bfloat16* x, int64_t n_tok,
            void* y, int64_t ldy, OutType out);

  cudaStream_t stream_;
  void* handle_ = nullptr;  // cublasHandle_t
  DeviceBuffer<__nv_bfloat16> scratch_;
  DeviceBuffer<uint8_t> workspace_;  // cuBLAS's, set once so that calls can be captured in a graph
};

}  // namespace cohort::cuda
