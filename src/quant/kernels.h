// Per-type kernels behind quant.h's dispatch (internal to quant/).
//
// Every kernel works on whole blocks: `n_blocks` blocks of the type, i.e.
// n_blocks elements for F32/F16/BF16. The *_avx2 kernels live in *_avx2.cpp
// files compiled with -mavx2 -mfma -mf16c and may only run where the CPU has
// those features (quant.cpp checks before choosing them).
//
// All quant/ sources are compiled with -ffp-contract=off: the dequantizers
// must round exactly as numpy does (one rounding per written operation), and
// the dot kernels spell out their fused multiply-adds explicitly.
#pragma once

#include <cstdint>

namespace cohort::quant::kernels {

using DequantizeFn = void (*)(const void* src, float* dst, int64_t n_blocks);
using DotFn = float (*)(const void* row, const float* x, int64_t n_blocks);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t n_blocks);

// Portable reference kernels (dequantize.cpp, dot.cpp).
void dequantize_f32_scalar(const void* src, float* dst, int64_t n_blocks);
void dequantize_f16_scalar(const void* src, float* dst, int64_t n_blocks);
void dequantize_bf16_scalar(const void* src, float* dst, int64_t n_blocks);
void dequantize_q8_0_scalar(const void* src, float* dst, int64_t n_blocks);
void dequantize_q4_0_scalar(const void* src, float* dst, int64_t n_blocks);
void dequantize_q4_1_scalar(const void* src, float* dst, int64_t n_blocks);
void dequantize_q4_k_scalar(const void* src, float* dst, int64_t n_blocks);
void dequantize_q5_k_scalar(const void* src, float* dst, int64_t n_blocks);
void dequantize_q6_k_scalar(const void* src, float* dst, int64_t n_blocks);
float dot_f32_scalar(const void* row, const float* x, int64_t n_blocks);
float dot_f16_scalar(const void* row, const float* x, int64_t n_blocks);
float dot_bf16_scalar(const void* row, const float* x, int64_t n_blocks);
float dot_q8_0_scalar(const void* row, const float* x, int64_t n_blocks);
float dot_q4_0_scalar(const void* row, const float* x, int64_t n_blocks);
float dot_q4_1_scalar(const void* row, const float* x, int64_t n_blocks);
float dot_q4_k_scalar(const void* row, const float* x, int64_t n_blocks);
float dot_q5_k_scalar(const void* row, const float* x, int64_t n_blocks);
float dot_q6_k_scalar(const void* row, const float* x, int64_t n_blocks);

// AVX2/FMA/F16C kernels (dequantize_avx2.cpp, dot_avx2.cpp).
void dequantize_f32_avx2(const void* src, float* dst, int64_t n_blocks);
void dequantize_f16_avx2(const void* src, float* dst, int64_t n_blocks);
void dequantize_bf16_avx2(const void* src, float* dst, int64_t n_blocks);
void dequantize_q8_0_avx2(const void* src, float* dst, int64_t n_blocks);
void dequantize_q4_0_avx2(const void* src, float* dst, int64_t n_blocks);
void dequantize_q4_1_avx2(const void* src, float* dst, int64_t n_blocks);
void dequantize_q4_k_avx2(const void* src, float* dst, int64_t n_blocks);
void dequantize_q5_k_avx2(const void* src, float* dst, int64_t n_blocks);
void dequantize_q6_k_avx2(const void* src, float* dst, int64_t n_blocks);
float dot_f32_avx2(const void* row, const float* x, int64_t n_blocks);
float dot_f16_avx2(const void* row, const float* x, int64_t n_blocks);
float dot_bf16_avx2(const void* row, const float* x, int64_t n_blocks);
float dot_q8_0_avx2(const void* row, const float* x, int64_t n_blocks);
float dot_q4_0_avx2(const void* row, const float* x, int64_t n_blocks);
float dot_q4_1_avx2(const void* row, const float* x, int64_t n_blocks);
float dot_q4_k_avx2(const void* row, const float* x, int64_t n_blocks);
float dot_q5_k_avx2(const void* row, const float* x, int64_t n_blocks);
float dot_q6_k_avx2(const void* row, const float* x, int64_t n_blocks);

// Encoders (quantize.cpp, quantize_k.cpp); portable code only.
void quantize_f32(const float* src, void* dst, int64_t n_blocks);
void quantize_f16(const float* src, void* dst, int64_t n_blocks);
void quantize_bf16(const float* src, void* dst, int64_t n_blocks);
void quantize_q8_0(const float* src, void* dst, int64_t n_blocks);
void quantize_q4_0(const float* src, void* dst, int64_t n_blocks);
void quantize_q4_1(const float* src, void* dst, int64_t n_blocks);
void quantize_q4_k(const float* src, void* dst, int64_t n_blocks);
void quantize_q5_k(const float* src, void* dst, int64_t n_blocks);
void quantize_q6_k(const float* src, void* dst, int64_t n_blocks);

}  // namespace cohort::quant::kernels
