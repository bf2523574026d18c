// Block formats of quantized tensors: dequantize, dot product with an F32
// vector, and quantize.
//
// Supported for compute: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q4_K Q5_K Q6_K.
// Results are bit-exact with gguf-py's numpy dequantizers (gguf.quants).
// n is a count of elements and must be a multiple of the type's block size
// (else cohort::Error, as for an unsupported type); n == 0 touches nothing.
// REQUIRES: quantized data aligned to 2 bytes, F32 data and x to 4 (GGUF
// tensor data is, and every block is an even number of bytes).
// Functions are thread-safe (no shared state besides the ISA choice).
#pragma once

#include <cstdint>

#include "gguf/tensor_type.h"

namespace cohort::quant {

using gguf::TensorType;

// Which implementation dot() and dequantize() use. `best` picks AVX2/FMA
// where the CPU has it. Tests force `scalar` to compare the two paths.
enum class Isa { scalar, avx2 };
Isa best_isa();
Isa active_isa();
// Switches the process-wide path; requesting avx2 on a CPU without it throws.
void set_isa(Isa isa);

bool is_supported(TensorType type);    // dequantize() and dot() work
bool can_quantize(TensorType type);    // quantize() works

// dst[0..n) = values of the n elements stored at src.
void dequantize(TensorType type, const void* src, float* dst, int64_t n);

// sum_i value(row, i) * x[i] over n elements, accumulated in F32.
float dot(TensorType type, const void* row, const float* x, int64_t n);

// Encodes n values into blocks of `type` at dst (row_bytes(type, n) bytes).
void quantize(TensorType type, const float* src, void* dst, int64_t n);

}  // namespace cohort::quant
