// Integer dot products of a weight row with an activation row quantized to
// 8 bits, as llama.cpp's CPU backend computes its matmuls: activations are
// encoded once per matmul in the type ggml pairs with the weight type, then
// every dot product runs on integers and applies the block scales in F32.
// This is the fast CPU path; quant.h's dot() (F32 activations) stays the
// reference it is tested against.
//
//   weight        activation   accumulation
//   Q4_0, Q8_0    Q8_0         exact int32 per 4 elements, F32 across blocks
//   Q4_1          Q8_1         as Q8_0, plus the offset term m * s in F32
//   Q4_K Q5_K Q6_K Q8_K        exact int32 per super-block, F32 across them
//   F16           F16          F32 (products of two halves are exact)
//   BF16          BF16         F32 (products of two bfloat16 are exact)
//   F32           F32          F32
//
// Every result is defined as an F32 sum in a fixed order, that of
// llama.cpp's x86 CPU kernel for the weight type (chains of fused
// multiply-adds, in 8 lanes reduced as a tree or in one chain per dot
// product; vec_dot_scalar.cpp spells it out), so the scalar and AVX2 paths
// return the same bits for finite input, and vec_dot_tile() returns the
// same bits as vec_dot() for every (row, activation) pair whatever the tile
// shape. Where llama.cpp's order for a K-quant depends on the batch, there
// are two orders (Order): its repacked Q4_K kernels accumulate differently
// for tokens it takes 4 at a time (its gemm: the ubatch's tokens before the
// last n_tok % 4) than for the others (its gemv), and Q5_K/Q6_K matmuls of
// 8 or more tokens go through its tiled kernel instead of vec_dot.
// vec_dot_tile() takes the order to follow, and a matmul that reproduces
// llama.cpp passes Order::batched for the tokens order_split() names.
//
// The orders are those of llama.cpp built for an AVX-512 CPU (with VNNI and
// BF16), whatever CPU cohort runs on. A llama.cpp built for AVX2 alone sums in
// other orders (32-lane F32 sums, other BF16 pairing, other K-quant and Q4_0
// kernels); those are not followed: llama.cpp's order is a property of how it
// was compiled, not of the CPU, so choosing by the CPU would still miss a
// build like the AVX2 one the tests also compare against, and following both
// would mean a second set of kernels for every weight type. Against such a
// build the logits agree to the fidelity bounds, not bit for bit
// (tests/python/test_forward_reference.py).
//
// Activation quantization (nearest, ties to even, as ggml's SIMD code):
// per block of 32 (Q8_0/Q8_1) or 256 (Q8_K) values, amax = max |x|,
// q = round(x * 127 / amax); Q8_0/Q8_1 store d = amax / 127 as f16, Q8_K
// stores d = 1 / (127 / amax) as f32. Q8_0 and Q8_1 bytes equal those of
// ggml's x86 quantize_row_q8_0/q8_1; Q8_K values d * q equal ggml's, which
// may store both d and q negated (tests/python/test_quant_reference.py).
// Blocks with amax < 1e-30 (where 127 / amax would overflow) encode as
// zeros. NaN or infinite input gives defined but meaningless blocks, which
// may differ between the ISA paths.
//
// n counts elements and must be a multiple of the weight type's block size
// (else cohort::Error, as for an unsupported weight type).
// REQUIRES: weight rows aligned to 2 bytes (F32 to 4), activation rows as
// quantize_activations() writes them, aligned to 4 bytes. Functions are
// thread-safe; the ISA is quant.h's set_isa() choice.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/quant.h"

namespace cohort::quant {

// True where vec_dot() supports `weight` (the table above).
bool has_vec_dot(TensorType weight);

// Which of llama.cpp's kernels a dot product follows where they differ
// (Q4_K, Q5_K, Q6_K; the same bits either way for the other types).
enum class Order {
  single,   // one token (Q4_K repacked gemv, Q5_K/Q6_K vec_dot)
  batched,  // part of a batch (Q4_K repacked gemm, Q5_K/Q6_K tiled matmul)
};

// How many leading tokens of a matmul over n_tok tokens llama.cpp computes
// in Order::batched (the others: Order::single): Q4_K n_tok - n_tok % 4,
// Q5_K/Q6_K n_tok if n_tok >= 8, else (and for the other types) 0.
int64_t order_split(TensorType weight, int64_t n_tok);

// The activation type ggml pairs with `weight` (first table column -> second).
TensorType activation_type(TensorType weight);

// Bytes of one quantized activation row of n elements for `weight`.
size_t activation_row_bytes(TensorType weight, int64_t n);

// Encodes x [n] as activation_type(weight) at out (activation_row_bytes).
void quantize_activations(TensorType weight, const float* x, void* out, int64_t n);

// sum_i w_i * a_i over n elements of a weight row and a quantized activation row.
float vec_dot(TensorType weight, const void* row, const void* act, int64_t n);

// A tile of dot products: for r < n_rows and t < n_acts,
//   y[t * y_stride + r] = vec_dot(weight, rows + r * row_stride, acts + t * act_stride, n)
// bit for bit (with `order`; vec_dot() is Order::single), but computed in register blocks that reuse each loaded weight
// block for several activation rows (n_acts == 1 is a matvec: the rows are
// streamed one by one). Rows and activations of one call should fit in L2
// together (a few hundred KiB) for the reuse to pay. Uses up to 48 KiB of
// stack for block scales converted to F32.
void vec_dot_tile(TensorType weight, const void* rows, size_t row_stride, int64_t n_rows,
                  const void* acts, size_t act_stride, int64_t n_acts, int64_t n, float* y,
                  int64_t y_stride, Order order = Order::single);

}  // namespace cohort::quant
