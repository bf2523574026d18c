// The int8 tensor-core matmul of quantized weights (mmq): y = dequant(W) ·
// xqᵀ for decode batches of several tokens, with xq matvec_q8.h's int8
// activations. Each 32-column sub-block of 16 rows meets 8 tokens in one
// mma.m16n8k32 (exact int32 sums); the weights' sub-block scales and the
// activations' block scales are applied to those sums in F32 (DESIGN.md,
// Numerics: F32 accumulation). W is read once for up to kMmqMaxTokens
// tokens, as the matvec reads it once for 8, but the products cost the
// tensor cores instead of a quarter dp4a per weight and token. Memory-bound
// up to about 8 tokens; beyond, its time grows with the tokens, and from 33
// dequantization and cuBLAS are faster (mmq_range), so a pass takes at most
// 32 (mmq_impl.cuh).
#pragma once

#include <cstdint>
#include <span>

#include <cuda_runtime_api.h>

#include "backend/cuda/matvec.h"
#include "backend/cuda/matvec_parts.h"
#include "gguf/tensor_type.h"

namespace cohort::cuda {

// Tokens a pass over W.
inline constexpr int64_t kMmqMaxTokens = 32;
// The most tokens mmq_range() may send to mmq (in passes of kMmqMaxTokens).
inline constexpr int64_t kMmqMaxRoutedTokens = 64;

// Q8_0, Q4_0, Q4_1 with n_in a multiple of 128; Q4_K, Q5_K, Q6_K (n_in a
// multiple of 256, as their blocks).
bool can_mmq(gguf::TensorType type, int64_t n_in);

// The token counts at which mmq is the fastest decode matmul of `type`
// weights with n_in columns: from `min`, below which the matvec
// (matvec_q8.h) is faster, to `max`, beyond which dequantization and cuBLAS
// (gemm.h) are. Measured on an H200 with cuda_kernel_bench and `cohort
// bench --npl` (docs/PERFORMANCE.md): the K-quants from 5 tokens, Q8_0,
// Q4_0 and Q4_1 (whose 2-byte-aligned blocks are loaded a word at a time)
// from 9; cuBLAS from 33 (Q4_1: 17; Q4_0 with staged activations was
// faster than cuBLAS up to 32, Q4_1 not measured apart; at 64, two passes
// lost to cuBLAS: Q4_K decode of 64 sequences 3,833 against 4,730 t/s).
// {1, 0} (no count) where
// !can_mmq(type, n_in). COHORT_MMQ_MIN_TOKENS overrides `min`, and
// COHORT_MMQ_MAX_TOKENS `max` up to kMmqMaxRoutedTokens (read once; for
// measuring the kernels against each other in one build).
struct MmqRange {
  int64_t min = 1, max = 0;
};
MmqRange mmq_range(gguf::TensorType type, int64_t n_in);

// The kernel either reads a warp's activations from device memory (L1 and
// L2: every block reads them all) or stages each K step of them in shared
// memory with cp.async, a step ahead of its use. `measured` stages where
// that was faster on an H200 (cuda_kernel_bench, Q4_K and Q8_0): one token
// tile (up to 8 tokens) and three or four, not two. COHORT_MMQ_STAGE=0 or 1
// sets never or always (read once); set_mmq_staging() what follows (tests,
// the kernel bench).
enum class MmqStaging { measured, never, always };
MmqStaging mmq_staging();
void set_mmq_staging(MmqStaging s);

// matvec_q8_parts() (matvec_q8.h) on the tensor cores: every part, all of
// `type` and n_in, times the same xq of n_tok tokens (passes of
// kMmqMaxTokens); n_tok == 0 launches nothing.
// REQUIRES (else cohort::Error): can_mmq(type, n_in); 1 <= parts.size() <=
//   kMatvecMaxParts; xq 16-byte aligned, w as matvec_q8 needs it, y
//   aligned to its element.
void mmq_parts(gguf::TensorType type, std::span<const MatvecPart> parts, const void* xq, OutType out, int64_t n_tok,
               int64_t n_in, cudaStream_t stream);

// One matrix: mmq_parts() of {w, y, n_out}.
void mmq(gguf::TensorType type, const void* w, const void* xq, void* y, OutType out, int64_t n_tok, int64_t n_in,
         int64_t n_out, cudaStream_t stream);

}  // namespace cohort::cuda
