// Decode matvec / small-batch matmul on the GPU with the weights in their
// GGUF type: y = x · Wᵀ, every weight block read once for all tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/matvec_parts.h"  // MatvecPart
#include "gguf/tensor_type.h"

namespace cohort::cuda {

// Element type of an activation output.
enum class OutType { bf16, f32 };

// The weight types matvec() handles (the nine of quant::is_supported).
bool can_matvec(gguf::TensorType type);

// y [n_tok, n_out] = x [n_tok, n_in] · Wᵀ, W [n_out, n_in] stored as
// consecutive rows of gguf::row_bytes(type, n_in) bytes (the file's bytes).
// Products and sums in F32; y is BF16 or F32 (`out`). Tokens are taken eight
// at a time (one pass over W per eight); n_tok == 0 or n_out == 0 launches
// nothing. All pointers are device memory; enqueued on `stream`.
// REQUIRES (else cohort::Error): a supported type; n_in > 0 a multiple of 16
//   and of the type's block size; x 16-byte aligned; w 16-byte aligned for
//   F32 F16 BF16 Q4_K Q5_K, 4-byte for Q4_1, 2-byte otherwise; y aligned to
//   its element; x and y do not overlap.
void matvec(gguf::TensorType type, const void* w, const __nv_bfloat16* x, void* y, OutType out,
            int64_t n_tok, int64_t n_in, int64_t n_out, cudaStream_t stream);

// matvec() of each part, all of `type` and n_in with the same x, in one
// launch a pass over the tokens (the q, k and v projections; gate and up).
// REQUIRES (else cohort::Error): as matvec() for every part;
//   1 <= parts.size() <= kMatvecMaxParts; no y overlaps x or another y.
void matvec_parts(gguf::TensorType type, std::span<const MatvecPart> parts, const __nv_bfloat16* x, OutType out,
                  int64_t n_tok, int64_t n_in, cudaStream_t stream);

}  // namespace cohort::cuda
