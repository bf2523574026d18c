#include "backend/cuda/gemm.h"

#include <algorithm>

#include "backend/cuda/cublas_library.h"
#include "backend/cuda/dequantize.h"
#include "common/error.h"

namespace cohort::cuda {
namespace {

constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;  // cuBLAS's recommendation for Hopper

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    fail("cuBLAS: {} failed: {} ({})", what, cublas().status_name(status), cublas().status_string(status));
  }
}

cublasHandle_t as_handle(void* h) { return static_cast<cublasHandle_t>(h); }

}  // namespace

Gemm::Gemm(cudaStream_t stream, int64_t scratch_elems)
    : stream_(stream), scratch_(static_cast<size_t>(scratch_elems)), workspace_(kCublasWorkspaceBytes) {
  cublasHandle_t h = nullptr;
  check(cublas().create(&h), "cublasCreate");
  handle_ = h;
  check(cublas().set_stream(h, stream_), "cublasSetStream");
  check(cublas().set_workspace(h, workspace_.data(), workspace_.size()), "cublasSetWorkspace");
}

Gemm::~Gemm() {
  if (handle_ != nullptr) (void)cublas().destroy(as_handle(handle_));
}

void Gemm::gemm(const __nv_bfloat16* w, int64_t n_rows, int64_t n_in, const __nv_bfloat16* x, int64_t n_tok,
                void* y, int64_t ldy, OutType out) {
  // Row-major y [n_tok, ldy] is column-major yᵀ [ldy, n_tok]: yᵀ = W · xᵀ,
  // where row-major W [n_rows, n_in] is column-major Wᵀ (so op T) and
  // row-major x is column-major xᵀ.
  const float alpha = 1.0f, beta = 0.0f;
  check(cublas().gemm_ex(as_handle(handle_), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n_rows),
                     static_cast<int>(n_tok), static_cast<int>(n_in), &alpha, w, CUDA_R_16BF,
                     static_cast<int>(n_in), x, CUDA_R_16BF, static_cast<int>(n_in), &beta, y,
                     out == OutType::f32 ? CUDA_R_32F : CUDA_R_16BF, static_cast<int>(ldy),
                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
}

void Gemm::run(gguf::TensorType type, const void* w, int64_t n_out, int64_t n_in, const __nv_bfloat16* x,
               int64_t n_tok, void* y, OutType out) {
  if (n_tok <= 0 || n_out <= 0) return;
  if (n_in <= 0 || n_in > static_cast<int64_t>(scratch_.size()) || n_out > INT32_MAX || n_tok > INT32_MAX) {
    fail("cuda: gemm of [{}, {}] weights by {} tokens exceeds the scratch of {} elements", n_out, n_in, n_tok,
         scratch_.size());
  }
  if (type == gguf::TensorType::BF16) {
    gemm(static_cast<const __nv_bfloat16*>(w), n_out, n_in, x, n_tok, y, n_out, out);
    return;
  }
  const size_t row_bytes = gguf::row_bytes(type, n_in);
  const size_t y_elem = out == OutType::f32 ? 4 : 2;
  const int64_t chunk = std::min(n_out, static_cast<int64_t>(scratch_.size()) / n_in);
  for (int64_t r = 0; r < n_out; r += chunk) {
    const int64_t n = std::min(chunk, n_out - r);
    dequantize(type, static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * row_bytes, scratch_.data(),
               n * n_in, stream_);
    gemm(scratch_.data(), n, n_in, x, n_tok, static_cast<uint8_t*>(y) + static_cast<size_t>(r) * y_elem, n_out,
         out);
  }
}

}  // namespace cohort::cuda
