#include "backend/cuda/elementwise.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "backend/cuda/elementwise_kernels.h"
#include "common/error.h"

namespace cohort::cuda {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void require_vectors(const char* op, int64_t n, std::initializer_list<const void*> pointers) {
  if (n < 0 || n % 8 != 0) fail("cuda: {} of {} elements: needs a non-negative multiple of 8", op, n);
  for (const void* p : pointers) {
    if (p != nullptr && !aligned16(p)) fail("cuda: {}: every pointer must be 16-byte aligned", op);
  }
}

// Rows quantized for matvec_q8 are whole 32-blocks.
void require_quantizable(const char* op, int64_t n) {
  if (n % 32 != 0) fail("cuda: {} quantizing rows of {} elements: needs a multiple of 32", op, n);
}

// As backend/cpu's yarn_corr_dim.
float yarn_corr_dim(int64_t n_rot, int64_t n_ctx_orig, float n_rotations, float base) {
  return static_cast<float>(n_rot) *
         std::log(static_cast<float>(n_ctx_orig) / (n_rotations * 2.0f * std::numbers::pi_v<float>)) /
         (2.0f * std::log(base));
}

}  // namespace

void rms_norm(__nv_bfloat16* x, const __nv_bfloat16* residual, const float* weight, int64_t n_tok,
              int64_t n, float eps, __nv_bfloat16* y, cudaStream_t stream, void* xq) {
  if (n <= 0 || weight == nullptr) fail("cuda: rms_norm of rows of {} elements (or no weight)", n);
  require_vectors("rms_norm", n, {x, residual, weight, y, xq});
  if (xq != nullptr) require_quantizable("rms_norm", n);
  if (n_tok < 0 || n_tok > INT32_MAX) fail("cuda: rms_norm of {} rows", n_tok);
  if (n_tok > 0) kernels::launch_rms_norm(x, residual, weight, n_tok, n, eps, y, xq, stream);
}

kernels::RopeArgs kernels::rope_args(const RopeConfig& c, int64_t head_dim) {
  if (c.n_rot <= 0 || c.n_rot % 2 != 0 || c.n_rot > head_dim) {
    fail("cuda: rope n_rot {} must be even, positive and at most head_dim {}", c.n_rot, head_dim);
  }
  if (c.ext_factor != 0.0f && c.n_ctx_orig <= 0) fail("cuda: rope YaRN needs n_ctx_orig > 0");
  kernels::RopeArgs a;
  a.n_rot = static_cast<int>(c.n_rot);
  a.log2_base = std::log2(c.freq_base);
  a.freq_scale = c.freq_scale;
  a.neox = c.neox;
  a.freq_factors = c.freq_factors;
  a.ext_factor = c.ext_factor;
  a.attn_factor = c.attn_factor;
  if (c.ext_factor != 0.0f) {
    a.corr_low = std::max(0.0f, std::floor(yarn_corr_dim(c.n_rot, c.n_ctx_orig, c.beta_fast, c.freq_base)));
    a.corr_high = std::min(static_cast<float>(c.n_rot - 1),
                           std::ceil(yarn_corr_dim(c.n_rot, c.n_ctx_orig, c.beta_slow, c.freq_base)));
  }
  return a;
}

void rope(const RopeConfig& c, __nv_bfloat16* x, int64_t token_stride, const int32_t* positions,
          int64_t n_tok, int64_t n_heads, int64_t head_dim, cudaStream_t stream) {
  const kernels::RopeArgs a = kernels::rope_args(c, head_dim);
  if (n_heads <= 0 || token_stride < n_heads * head_dim || n_tok < 0 || n_tok > 65535) {
    fail("cuda: rope of {} tokens of {} heads x {} (token stride {}): bad shape", n_tok, n_heads, head_dim,
         token_stride);
  }
  if (n_tok == 0) return;
  kernels::launch_rope(a, x, token_stride, positions, n_tok, n_heads, head_dim, stream);
}

void silu_mul(const __nv_bfloat16* gate, const __nv_bfloat16* up, __nv_bfloat16* y, int64_t n,
              cudaStream_t stream, void* xq) {
  require_vectors("silu_mul", n, {gate, up, y, xq});
  if (xq != nullptr) require_quantizable("silu_mul", n);
  if (n > 0) kernels::launch_silu_mul(gate, up, y, n, xq, stream);
}

void add(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* y, int64_t n, cudaStream_t stream) {
  require_vectors("add", n, {a, b, y});
  if (n > 0) kernels::launch_add(a, b, y, n, stream);
}

void add_row(__nv_bfloat16* x, const float* row, int64_t n_tok, int64_t n, cudaStream_t stream) {
  require_vectors("add_row", n, {x, row});
  if (row == nullptr || n_tok < 0) fail("cuda: add_row of {} rows without a row to add", n_tok);
  if (n_tok > 0 && n > 0) kernels::launch_add_row(x, row, n_tok, n, stream);
}

}  // namespace cohort::cuda
