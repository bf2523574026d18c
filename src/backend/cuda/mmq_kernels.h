// The launchers of mmq_*.cu; the checks and error messages are in mmq.cpp
// (nvcc does not compile fmt).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>
#include <vector_types.h>

#include "backend/cuda/matvec_parts.h"
#include "gguf/tensor_type.h"

namespace cohort::cuda::kernels {

// y = W · x of every part for 1 <= n_tok <= kMmqMaxTokens tokens: q
// [n_tok, n_in] int8 and ds [n_tok, n_in / 32] {d, s} (matvec_q8.h's xq,
// offset to the first token). y F32 when f32_out, else BF16.
using MmqLauncher = void (*)(const MatvecParts& parts, const int8_t* q, const float2* ds, bool f32_out, int n_tok,
                             int64_t n_in, cudaStream_t stream);

inline constexpr int kMmqMaxTokens = 32;

// mmq.h's staging: whether a launch of nt token tiles stages its
// activations, `measured` holding bit nt - 1 where that is faster.
bool mmq_staged(int nt, unsigned measured);

// The launcher of `type` and its step (columns n_in must be a multiple of),
// or {nullptr, 0}.
struct MmqType {
  MmqLauncher run = nullptr;
  int step_elems = 0;
};
MmqType mmq_type(gguf::TensorType type);

void mmq_q8_0(const MatvecParts&, const int8_t*, const float2*, bool, int, int64_t, cudaStream_t);
void mmq_q4_0(const MatvecParts&, const int8_t*, const float2*, bool, int, int64_t, cudaStream_t);
void mmq_q4_1(const MatvecParts&, const int8_t*, const float2*, bool, int, int64_t, cudaStream_t);
void mmq_q4_k(const MatvecParts&, const int8_t*, const float2*, bool, int, int64_t, cudaStream_t);
void mmq_q5_k(const MatvecParts&, const int8_t*, const float2*, bool, int, int64_t, cudaStream_t);
void mmq_q6_k(const MatvecParts&, const int8_t*, const float2*, bool, int, int64_t, cudaStream_t);

}  // namespace cohort::cuda::kernels
