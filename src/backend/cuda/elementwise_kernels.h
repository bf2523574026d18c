// The launchers of rms_norm.cu, rope.cu and silu_mul.cu; the checks and
// error messages are in elementwise.cpp (nvcc does not compile fmt).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/elementwise.h"

namespace cohort::cuda::kernels {

// Shapes checked by the caller: n_tok > 0, n > 0, n % 8 == 0, aligned; xq
// null, or y's quantized activations (n % 32 == 0).
void launch_rms_norm(__nv_bfloat16* x, const __nv_bfloat16* residual, const float* weight, int64_t n_tok,
                     int64_t n, float eps, __nv_bfloat16* y, void* xq, cudaStream_t stream);

// The per-call constants of rope, worked out on the host.
struct RopeArgs {
  int n_rot = 0;
  float log2_base = 0.0f;      // log2(freq_base)
  float freq_scale = 1.0f;
  bool neox = false;
  const float* freq_factors = nullptr;
  float ext_factor = 0.0f;
  float attn_factor = 1.0f;
  float corr_low = 0.0f, corr_high = 0.0f;  // YaRN ramp, as backend/cpu rope()
};
// The constants of `config` for heads of head_dim; throws cohort::Error
// for a bad n_rot or YaRN without n_ctx_orig (elementwise.cpp).
RopeArgs rope_args(const RopeConfig& config, int64_t head_dim);
void launch_rope(const RopeArgs& args, __nv_bfloat16* x, int64_t token_stride, const int32_t* positions,
                 int64_t n_tok, int64_t n_heads, int64_t head_dim, cudaStream_t stream);

// n > 0, n % 8 == 0, aligned; xq as launch_rms_norm's.
void launch_silu_mul(const __nv_bfloat16* gate, const __nv_bfloat16* up, __nv_bfloat16* y, int64_t n, void* xq,
                     cudaStream_t stream);
void launch_add(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* y, int64_t n,
                cudaStream_t stream);
// n_tok > 0, n > 0, n % 8 == 0, aligned.
void launch_add_row(__nv_bfloat16* x, const float* row, int64_t n_tok, int64_t n, cudaStream_t stream);

}  // namespace cohort::cuda::kernels
