// The launchers of matvec_q8_*.cu; the checks and error messages are in
// matvec_q8.cpp (nvcc does not compile fmt).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <vector_types.h>

#include "gguf/tensor_type.h"

namespace cohort::cuda::kernels {

// y [n_tok, n_out] = W · x for 1 <= n_tok <= 8 tokens: q [n_tok, n_in]
// int8 and ds [n_tok, n_in / 32] {d, s} (the two parts of matvec_q8.h's
// xq, already offset to the first token). y F32 when f32_out, else BF16.
using MatvecQ8Launcher = void (*)(const void* w, const int8_t* q, const float2* ds, void* y,
                                  bool f32_out, int n_tok, int64_t n_in, int64_t n_out,
                                  cudaStream_t stream);

inline constexpr int kMatvecQ8MaxTokens = 8;

// The launcher of `type`, or nullptr.
MatvecQ8Launcher matvec_q8_launcher(gguf::TensorType type);

void matvec_q8_q8_0(const void*, const int8_t*, const float2*, void*, bool, int, int64_t, int64_t, cudaStream_t);
void matvec_q8_q4_0(const void*, const int8_t*, const float2*, void*, bool, int, int64_t, int64_t, cudaStream_t);
void matvec_q8_q4_1(const void*, const int8_t*, const float2*, void*, bool, int, int64_t, int64_t, cudaStream_t);
void matvec_q8_q4_k(const void*, const int8_t*, const float2*, void*, bool, int, int64_t, int64_t, cudaStream_t);
void matvec_q8_q5_k(const void*, const int8_t*, const float2*, void*, bool, int, int64_t, int64_t, cudaStream_t);
void matvec_q8_q6_k(const void*, const int8_t*, const float2*, void*, bool, int, int64_t, int64_t, cudaStream_t);

// Enqueues the activation quantizer: x [n_tok, n_in] -> q, ds.
void quantize_activations_q8(const __nv_bfloat16* x, int64_t n_tok, int64_t n_in, int8_t* q,
                             float2* ds, cudaStream_t stream);

}  // namespace cohort::cuda::kernels
