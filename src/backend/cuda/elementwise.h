// Per-token activation ops on the GPU: RMSNorm (optionally fused with the
// residual add), rotary position embedding, SiLU·mul and add. Activations
// are BF16, math is F32 (DESIGN.md, Numerics). All pointers are device
// memory; every op is enqueued on `stream`; n_tok == 0 launches nothing.
// Shape and alignment violations throw cohort::Error.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

namespace cohort::cuda {

// y [n_tok, n] = x / sqrt(mean(x^2) + eps) * weight, per row.
// With `residual` non-null, first x [n_tok, n] = bf16(x + residual) is
// written back (the residual stream) and the norm is taken of that rounded
// sum, exactly as an add followed by a norm. weight [n] is F32.
// With `xq` non-null, y is also written there quantized, the bytes of
// matvec_q8.h's quantize_activations(y, n_tok, n, xq) (one pass fewer
// before a quantized matvec that reads y).
// REQUIRES: n > 0, n % 8 == 0 (n % 32 == 0 with xq); x, residual, y and xq
// 16-byte aligned; y does not overlap residual, and overlaps x only if it
// is x (an in-place norm).
void rms_norm(__nv_bfloat16* x, const __nv_bfloat16* residual, const float* weight, int64_t n_tok,
              int64_t n, float eps, __nv_bfloat16* y, cudaStream_t stream, void* xq = nullptr);

// Rotary position embedding, the arithmetic of backend/cpu rope(): pair p
// (p < n_rot / 2) of each head rotates by angle pos * freq_scale *
// freq_base^(-2p / n_rot) / freq_factors[p] (YaRN-ramped when ext_factor
// != 0), scaled by attn_factor. The pair is (2p, 2p + 1) (llama) or
// (p, p + n_rot / 2) (neox: every family but llama, model/stages.cpp).
struct RopeConfig {
  int64_t n_rot = 0;                    // rotated dims per head (even, <= head_dim)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;              // 1 / linear scaling factor
  bool neox = false;
  const float* freq_factors = nullptr;  // device [n_rot / 2] divisors (llama3 rope_freqs), or null
  float ext_factor = 0.0f;              // YaRN
  float attn_factor = 1.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int64_t n_ctx_orig = 0;
  bool operator==(const RopeConfig&) const = default;
};

// In place on x: token t's heads start at x + t * token_stride and are
// [n_heads, head_dim] contiguous (token_stride >= n_heads * head_dim lets q
// or k be rotated inside a fused QKV row). positions [n_tok] int32.
// REQUIRES: n_tok <= 65535 (one grid row per token).
void rope(const RopeConfig& config, __nv_bfloat16* x, int64_t token_stride, const int32_t* positions,
          int64_t n_tok, int64_t n_heads, int64_t head_dim, cudaStream_t stream);

// y [n] = silu(gate) * up = gate / (1 + exp(-gate)) * up, n elements;
// xq as rms_norm's (the quantization of y as rows of any multiple of 32).
// REQUIRES: n % 8 == 0 (n % 32 == 0 with xq), every pointer 16-byte
// aligned; y may alias gate or up.
void silu_mul(const __nv_bfloat16* gate, const __nv_bfloat16* up, __nv_bfloat16* y, int64_t n,
              cudaStream_t stream, void* xq = nullptr);

// y [n] = a + b, n elements. REQUIRES as silu_mul; y may alias a or b.
void add(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* y, int64_t n,
         cudaStream_t stream);

// x [n_tok, n] += row [n] (F32) in every row: the biases of Qwen2.
// REQUIRES: n % 8 == 0, x and row 16-byte aligned.
void add_row(__nv_bfloat16* x, const float* row, int64_t n_tok, int64_t n, cudaStream_t stream);

}  // namespace cohort::cuda
