// Portable encoders of activation rows for the integer dot products (see
// vec_dot.h for the rounding rule). act_quantize_avx2.cpp computes the same
// bytes for finite input: every step here is one IEEE operation that the
// AVX2 code performs the same way (max is exact in any order; round_clamp
// rounds ties to even, as vcvtps2dq does).
#include <cmath>
#include <cstring>

#include "common/half.h"
#include "quant/blocks.h"
#include "quant/quantize_util.h"
#include "quant/vec_dot_kernels.h"

namespace cohort::quant::kernels {
namespace {

float amax_of(const float* x, int n) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  return amax;
}

// q[i] = round(x[i] * id) for n values; returns sum q.
int encode(const float* x, float id, int n, int8_t* q) {
  int sum = 0;
  for (int i = 0; i < n; ++i) {
    q[i] = static_cast<int8_t>(round_clamp(x[i] * id, -127, 127));
    sum += q[i];
  }
  return sum;
}

}  // namespace

void act_quantize_q8_0_scalar(const float* x, void* out, int64_t n_blocks) {
  auto* b = static_cast<BlockQ8_0*>(out);
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQK) {
    const ActScale s = act_scale(amax_of(x, kQK));
    b[ib].d = f32_to_f16(s.d);
    encode(x, s.id, kQK, b[ib].qs);
  }
}

void act_quantize_q8_1_scalar(const float* x, void* out, int64_t n_blocks) {
  auto* b = static_cast<BlockQ8_1*>(out);
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQK) {
    const ActScale s = act_scale(amax_of(x, kQK));
    const int sum = encode(x, s.id, kQK, b[ib].qs);
    b[ib].d = f32_to_f16(s.d);
    b[ib].s = f32_to_f16(s.d * static_cast<float>(sum));
  }
}

void act_quantize_q8_k_scalar(const float* x, void* out, int64_t n_blocks) {
  auto* b = static_cast<BlockQ8_K*>(out);
  for (int64_t ib = 0; ib < n_blocks; ++ib, x += kQKK) {
    // d = 1 / id rather than amax / 127, as ggml's quantize_row_q8_K: the
    // scale then undoes exactly the multiplier that made q.
    const float id = act_scale(amax_of(x, kQKK)).id;
    b[ib].d = id != 0.0f ? 1.0f / id : 0.0f;
    for (int j = 0; j < kQKK / 16; ++j) {
      b[ib].bsums[j] = static_cast<int16_t>(encode(x + 16 * j, id, 16, b[ib].qs + 16 * j));
    }
  }
}

void act_quantize_f16_scalar(const float* x, void* out, int64_t n_blocks) {
  auto* h = static_cast<uint16_t*>(out);
  for (int64_t i = 0; i < n_blocks; ++i) h[i] = f32_to_f16(x[i]);
}

void act_quantize_bf16_scalar(const float* x, void* out, int64_t n_blocks) {
  auto* h = static_cast<uint16_t*>(out);
  for (int64_t i = 0; i < n_blocks; ++i) h[i] = f32_to_bf16(x[i]);
}

void act_quantize_f32_scalar(const float* x, void* out, int64_t n_blocks) {
  if (n_blocks > 0) std::memcpy(out, x, static_cast<size_t>(n_blocks) * sizeof(float));
}

}  // namespace cohort::quant::kernels
