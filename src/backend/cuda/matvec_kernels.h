// The matvec launchers of matvec_*.cu, one per weight type; the checks and
// error messages are in matvec.cpp (nvcc does not compile fmt).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/matvec_parts.h"
#include "gguf/tensor_type.h"

namespace cohort::cuda::kernels {

// Enqueues y = x [n_tok, n_in] · Wᵀ for every part (matvec_parts.h) for
// 1 <= n_tok <= 8 (checked by the caller, as are alignment and
// divisibility). y is F32 when f32_out, else BF16.
using MatvecLauncher = void (*)(const MatvecParts& parts, const __nv_bfloat16* x, bool f32_out, int n_tok,
                                int64_t n_in, cudaStream_t stream);

inline constexpr int kMatvecMaxTokens = 8;

// The launcher of `type`, or nullptr for a type without a kernel.
MatvecLauncher matvec_launcher(gguf::TensorType type);

// Per type (defined in the file of that type).
void matvec_f32(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, cudaStream_t);
void matvec_f16(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, cudaStream_t);
void matvec_bf16(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, cudaStream_t);
void matvec_q8_0(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, cudaStream_t);
void matvec_q4_0(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, cudaStream_t);
void matvec_q4_1(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, cudaStream_t);
void matvec_q4_k(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, cudaStream_t);
void matvec_q5_k(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, cudaStream_t);
void matvec_q6_k(const MatvecParts&, const __nv_bfloat16*, bool, int, int64_t, cudaStream_t);

}  // namespace cohort::cuda::kernels
