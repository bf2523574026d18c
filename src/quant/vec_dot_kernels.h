// Kernels behind vec_dot.h's dispatch (internal to quant/).
//
// A tile kernel computes y[t * y_stride + r] for r < n_rows, t < n_acts: the
// dot product of weight row r (at rows + r * row_stride) with activation row
// t (at acts + t * act_stride) over n_blocks weight blocks (elements for
// F32/F16/BF16). The *_avx2 kernels are compiled with -mavx2 -mfma -mf16c
// and may only run where the CPU has those features.
//
// The scalar kernels are the definition of every result: they emulate the
// AVX2 register lanes (vec_dot_scalar.cpp explains the order), so that the
// two paths agree bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cohort::quant::kernels {

// Scale and inverse scale of an activation block whose largest magnitude is
// amax (see vec_dot.h), shared by the scalar and AVX2 encoders so that they
// compute the same bits. Below kMinActAmax, 127 / amax would overflow and
// the block encodes as zeros.
inline constexpr float kMinActAmax = 1e-30f;
struct ActScale {
  float d;   // amax / 127: the f16 scale of Q8_0/Q8_1
  float id;  // 127 / amax: the multiplier of x
};
inline ActScale act_scale(float amax) {
  if (!(amax >= kMinActAmax)) return {0.0f, 0.0f};
  return {amax / 127.0f, 127.0f / amax};
}

using ActQuantizeFn = void (*)(const float* x, void* out, int64_t n_blocks);
using TileFn = void (*)(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,
                        size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y,
                        int64_t y_stride);

// Activation encoders (act_quantize.cpp, act_quantize_avx2.cpp): n_blocks
// blocks of the activation type (elements for F16/BF16/F32).
void act_quantize_q8_0_scalar(const float* x, void* out, int64_t n_blocks);
void act_quantize_q8_1_scalar(const float* x, void* out, int64_t n_blocks);
void act_quantize_q8_k_scalar(const float* x, void* out, int64_t n_blocks);
void act_quantize_f16_scalar(const float* x, void* out, int64_t n_blocks);
void act_quantize_bf16_scalar(const float* x, void* out, int64_t n_blocks);
void act_quantize_f32_scalar(const float* x, void* out, int64_t n_blocks);
void act_quantize_q8_0_avx2(const float* x, void* out, int64_t n_blocks);
void act_quantize_q8_1_avx2(const float* x, void* out, int64_t n_blocks);
void act_quantize_q8_k_avx2(const float* x, void* out, int64_t n_blocks);
void act_quantize_f16_avx2(const float* x, void* out, int64_t n_blocks);
void act_quantize_bf16_avx2(const float* x, void* out, int64_t n_blocks);

#define COHORT_TILE_KERNEL(name)                                                            \
  void name(const void* rows, size_t row_stride, int64_t n_rows, const void* acts,          \
            size_t act_stride, int64_t n_acts, int64_t n_blocks, float* y, int64_t y_stride)

// Reference tiles (vec_dot_scalar.cpp).
COHORT_TILE_KERNEL(tile_q4_0_q8_0_scalar);
COHORT_TILE_KERNEL(tile_q4_1_q8_1_scalar);
COHORT_TILE_KERNEL(tile_q8_0_q8_0_scalar);
COHORT_TILE_KERNEL(tile_q4_k_q8_k_scalar);
COHORT_TILE_KERNEL(tile_q4_k_q8_k_batched_scalar);  // Order::batched
COHORT_TILE_KERNEL(tile_q5_k_q8_k_scalar);
COHORT_TILE_KERNEL(tile_q5_k_q8_k_batched_scalar);
COHORT_TILE_KERNEL(tile_q6_k_q8_k_scalar);
COHORT_TILE_KERNEL(tile_q6_k_q8_k_batched_scalar);
COHORT_TILE_KERNEL(tile_f16_f16_scalar);
COHORT_TILE_KERNEL(tile_bf16_bf16_scalar);
COHORT_TILE_KERNEL(tile_f32_f32_scalar);

// AVX2 tiles (vec_dot_avx2.cpp: 32-element blocks and floats; vec_dot_k_avx2.cpp: K formats).
COHORT_TILE_KERNEL(tile_q4_0_q8_0_avx2);
COHORT_TILE_KERNEL(tile_q4_1_q8_1_avx2);
COHORT_TILE_KERNEL(tile_q8_0_q8_0_avx2);
COHORT_TILE_KERNEL(tile_q4_k_q8_k_avx2);
COHORT_TILE_KERNEL(tile_q4_k_q8_k_batched_avx2);  // Order::batched
COHORT_TILE_KERNEL(tile_q5_k_q8_k_avx2);
COHORT_TILE_KERNEL(tile_q5_k_q8_k_batched_avx2);
COHORT_TILE_KERNEL(tile_q6_k_q8_k_avx2);
COHORT_TILE_KERNEL(tile_q6_k_q8_k_batched_avx2);
COHORT_TILE_KERNEL(tile_f16_f16_avx2);
COHORT_TILE_KERNEL(tile_bf16_bf16_avx2);
COHORT_TILE_KERNEL(tile_f32_f32_avx2);

#undef COHORT_TILE_KERNEL

}  // namespace cohort::quant::kernels
