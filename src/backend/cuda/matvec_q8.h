// Decode matvec with int8 activations: x is quantized to int8 in blocks of
// 32 (quantize_activations), then every weight block is multiplied with
// __dp4a (four int8 products and their sum in one instruction) and the
// block scales are applied once per 32 (16 for Q6_K) products in F32. At
// one token that is about 1.2 (Q8_0) to 3 (Q6_K) instructions per weight
// instead of matvec.h's ~8 (decode to F32, FMA with BF16), and each extra
// token adds ~0.5 per weight (a quarter dp4a, its share of the x loads and
// the scale FMAs) rather than ~2.
//
// xq layout, for n_tok rows of n_in (n_in a multiple of 32), nb = n_in / 32:
//   bytes [0, n_tok * n_in)       int8 q: row t at t * n_in, column c at +c
//                                 (rows contiguous: lanes read 16-byte runs)
//   then n_tok * nb float2 {d, s} block b of row t at index t * nb + b:
//                                 d = max|x| / 127 over the block (0 for an
//                                 all-zero block), q = rint(x / d) in
//                                 [-127, 127], s = d * sum(q) (what the
//                                 offsets of Q4_0, Q4_1 and the K-quant mins
//                                 multiply)
// so x ≈ d * q. The float2 array starts 8-byte aligned (n_tok * n_in is a
// multiple of 32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/matvec.h"
#include "gguf/tensor_type.h"

namespace cohort::cuda {

// Bytes of the quantized activations of n_tok rows of n_in (a multiple of
// 32): n_tok * n_in * (1 + 8 / 32).
size_t q8_activation_bytes(int64_t n_tok, int64_t n_in);

// xq = x [n_tok, n_in] (BF16, 16-byte aligned) quantized as above; xq
// 16-byte aligned, q8_activation_bytes(n_tok, n_in) bytes. Enqueued on
// `stream`. REQUIRES (else cohort::Error): n_in > 0 a multiple of 32.
void quantize_activations(const __nv_bfloat16* x, int64_t n_tok, int64_t n_in, void* xq,
                          cudaStream_t stream);

// The host reference of quantize_activations, on BF16 bits, with the same
// F32 arithmetic (the device output equals it byte for byte).
void quantize_activations_host(const uint16_t* x, int64_t n_tok, int64_t n_in, void* xq);

// Which kernel: the fastest for the shape (shared_where_it_fits: the
// tensor-core matmul of mmq.h at the token counts of its mmq_range(); else
// the matvec with a copy of x in each block's shared memory from 5 tokens a
// pass on, where x fits there, matvec_q8_impl.cuh), or the matvec reading x
// from device memory always (global: the other kernel, also the one for
// fewer tokens and for x too large for shared memory; chosen explicitly by
// tests and benchmarks).
enum class Q8XSource { shared_where_it_fits, global };

// Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K.
bool can_matvec_q8(gguf::TensorType type);

// y [n_tok, n_out] = dequant(W) · xqᵀ with xq = quantize_activations(x)
// of all n_tok rows, W [n_out, n_in] as in matvec.h. Integer products,
// F32 scales and sums; y BF16 or F32 (`out`). Tokens are taken eight at a
// time (one pass over W per eight); n_tok == 0 or n_out == 0 launches
// nothing. Device pointers; enqueued on `stream`.
// REQUIRES (else cohort::Error): can_matvec_q8(type); n_in > 0 a multiple of
//   the type's block size (32, or 256 for the K-quants); xq 16-byte aligned;
//   w 16-byte aligned for Q4_K Q5_K, 4-byte for Q4_1, 2-byte otherwise; y
//   aligned to its element.
void matvec_q8(gguf::TensorType type, const void* w, const void* xq, void* y, OutType out,
               int64_t n_tok, int64_t n_in, int64_t n_out, cudaStream_t stream,
               Q8XSource x_source = Q8XSource::shared_where_it_fits);

// matvec_q8() of each part (matvec_parts.h), all of `type` and n_in with the
// same xq, in one launch a pass over the tokens.
// REQUIRES (else cohort::Error): as matvec_q8() for every part;
//   1 <= parts.size() <= kMatvecMaxParts.
void matvec_q8_parts(gguf::TensorType type, std::span<const MatvecPart> parts, const void* xq, OutType out,
                     int64_t n_tok, int64_t n_in, cudaStream_t stream,
                     Q8XSource x_source = Q8XSource::shared_where_it_fits);

// The checks shared by matvec_q8_parts and mmq_parts (`op` names the
// caller in the message): n_in whole blocks of `type`, 1 to
// kMatvecMaxParts parts, n_tok and every n_out >= 0, xq, w and y aligned.
void check_q8_parts(gguf::TensorType type, std::span<const MatvecPart> parts, const void* xq, OutType out,
                    int64_t n_tok, int64_t n_in, std::string_view op);

}  // namespace cohort::cuda
