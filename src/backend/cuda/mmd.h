// The BF16 tensor-core matmul of dequantized weights (mmd): y = dequant(W) ·
// xᵀ for decode batches, x the BF16 activations as they are. Each thread
// dequantizes its share of a 32-column sub-block of 16 rows once into BF16
// (the types with an offset, Q4_0, Q4_1, Q4_K and Q5_K, as BF16 pairs: dl q
// + nml in one BF16 FMA a pair with dl and nml rounded to BF16; the others
// through F32, rounded once) and multiplies it with every token tile on the
// tensor cores (mma.m16n8k16, F32 accumulation): unlike the int8 mmq
// (mmq.h), no scale work is left per token, so a pass of up to
// kMmdMaxTokens tokens costs little more than one of 8. A block takes 128
// rows; where a launch has too few rows to fill the GPU, a thread-block
// cluster of up to 8 blocks splits K and adds its sums in distributed shared
// memory, in rank order (deterministic; a token's result does not depend on
// the others in the batch). Hopper (sm_90) and later.
//
// Measured on an H200 (docs/PERFORMANCE.md): its time is nearly flat up to
// 16 tokens and grows slowly beyond (Q4_K 4096 -> 14336: 24 us at 8-16
// tokens, 32 at 32, 53 at 64, against mmq's 24 / 39 / 64 and cuBLAS's 89),
// so it takes Q4_K decode steps of 9-64 tokens; below, mmq and the int8
// matvec are faster, and for the other types mmq or cuBLAS still were.
#pragma once

#include <cstdint>
#include <span>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/matvec.h"
#include "backend/cuda/matvec_parts.h"
#include "gguf/tensor_type.h"

namespace cohort::cuda {

// Tokens a pass over W.
inline constexpr int64_t kMmdMaxTokens = 64;

// Q8_0, Q4_0, Q4_1 with n_in a multiple of 128; Q4_K, Q5_K, Q6_K (n_in a
// multiple of 256).
bool can_mmd(gguf::TensorType type, int64_t n_in);

// Whether the backend sends decode steps of n_tok tokens to mmd: where it
// was measured faster than the int8 kernels and cuBLAS (Q4_K from 9
// tokens). COHORT_MMD=1 sends every count from 2 to kMmdMaxTokens, =0 none
// (read once; for comparisons).
bool takes_mmd(gguf::TensorType type, int64_t n_tok, int64_t n_in);

// Blocks a cluster splits K over for `groups` blocks of rows and n_steps K
// steps, where resident[s - 1] clusters of s blocks fit on the GPU at once
// (0: none): the split with the fewest steps a block in all, waves
// (ceil(groups / resident)) times steps a block (ceil(n_steps / s)), the
// smaller split on a tie; at most kMmdMaxSplit and n_steps. (A cluster of 8
// blocks fits 30 times on an H200, so 32 of them took two waves; 7 a
// cluster takes one.) Pure host code.
int mmd_split(int64_t groups, int64_t n_steps, std::span<const int> resident);

// Clusters of `split` blocks of the kernel for n_tok tokens that the
// current device holds at once (cudaOccupancyMaxActiveClusters).
// REQUIRES: can_mmd(type, ...), 1 <= split <= 8.
int mmd_resident_clusters(gguf::TensorType type, int64_t n_tok, int split);

// Forces the split of every launch (0: mmd_split's choice); for comparisons.
void set_mmd_split(int split);

// y_p [n_tok, n_out_p] = dequant(W_p) · xᵀ for every part, all of `type`
// and n_in, x [n_tok, n_in] BF16 (passes of kMmdMaxTokens); n_tok == 0
// launches nothing.
// REQUIRES (else cohort::Error): can_mmd(type, n_in); 1 <= parts.size() <=
//   kMatvecMaxParts; x 16-byte aligned, w as matvec_q8 needs it, y aligned
//   to its element.
void mmd_parts(gguf::TensorType type, std::span<const MatvecPart> parts, const __nv_bfloat16* x, OutType out,
               int64_t n_tok, int64_t n_in, cudaStream_t stream);

// One matrix: mmd_parts() of {w, y, n_out}.
void mmd(gguf::TensorType type, const void* w, const __nv_bfloat16* x, void* y, OutType out, int64_t n_tok,
         int64_t n_in, int64_t n_out, cudaStream_t stream);

}  // namespace cohort::cuda
