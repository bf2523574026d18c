// The CPU implementations of the ops the forward pass needs. Activations are
// F32, row-major, one row per token: x [n_tok, n] means x + t * n is token t.
// Every op is the reference for its CUDA twin. Loops over rows or heads run on
// the given ThreadPool; no op allocates.
#pragma once

#include <cstdint>
#include <span>

#include "backend/backend.h"
#include "backend/cpu/llama_numerics.h"
#include "backend/cpu/weight_view.h"
#include "common/thread_pool.h"

namespace cohort::cpu {

// y [n_tok, w.n_out] = x [n_tok, w.n_in] · wᵀ
void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok, float* y);

// The same product on the fast path (matmul_fast.cpp): each row of x is
// quantized once to quant::activation_type(w.type) (8-bit blocks for the
// quantized formats, F16/BF16 for those weights) into `scratch`, then
// integer dot products run in cache-sized tiles of rows x tokens. Results
// differ from matmul() by the activation rounding (a relative error of about
// 0.5% per dot product for 8-bit activations) and are bit-identical for any
// thread count, ISA path and n_tok: a token's row of y does not depend on the
// other tokens of the call.
// REQUIRES: quant::has_vec_dot(w.type); scratch.size() >=
// matmul_fast_scratch_bytes(w, n_tok) (else cohort::Error). x and y must not
// overlap scratch.
void matmul_fast(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok, float* y,
                 std::span<uint8_t> scratch);

// Scratch bytes matmul_fast needs for n_tok activation rows of w.n_in elements
// (0 for F32 weights, whose activations are used as they are).
size_t matmul_fast_scratch_bytes(const WeightView& w, int64_t n_tok);

// The roundings of the elementwise ops: `exact` keeps sums in F64 and uses
// std::exp; `llama` takes llama.cpp's F32 steps (llama_numerics.h), so that
// the fast path rounds activations as it does.
enum class Numerics { exact, llama };

// y [n_tok, n] = x / rms(x) * weight, per row. y may alias x. Numerics::llama
// squares in F32 and takes the mean and the scale in F32, as llama.cpp does.
void rms_norm(ThreadPool& pool, const float* x, const float* weight, int64_t n_tok, int64_t n,
              float eps, float* y, Numerics mode = Numerics::exact);

// x [n_tok, n] += bias [n]
void add_bias(float* x, const float* bias, int64_t n_tok, int64_t n);

// y [n_tok, n] = silu(gate) * up. y may alias gate.
void silu_mul(ThreadPool& pool, const float* gate, const float* up, int64_t n_tok, int64_t n,
              float* y, Numerics mode = Numerics::exact);

// x [n] += y [n]
void add_in_place(float* x, const float* y, int64_t n);

// Rotary position embedding, applied in place to x [n_tok, n_heads, head_dim]
// (only the first n_rot dims of each head rotate). Numerics::llama rotates
// with a fused multiply-add per output, as llama.cpp's build (which
// contracts a*b - c*d) does.
inline constexpr int64_t kMaxRopeDims = 512;
// REQUIRES: p.n_rot even, <= kMaxRopeDims and <= head_dim.
void rope(const backend::RopeParams& p, Numerics numerics, float* x, const int32_t* positions,
          int64_t n_tok, int64_t n_heads, int64_t head_dim);

// out [n] = softmax(x [n]) computed in place. With Numerics::llama the
// denominator adds kSumLanes-term groups (lane sums in F32) in F64, as
// llama.cpp's softmax does.
void softmax_in_place(float* x, int64_t n, Numerics mode = Numerics::exact);

// dst [n] = row `index` of an embedding matrix (dequantized).
void get_row(const WeightView& w, int64_t index, float* dst);

}  // namespace cohort::cpu
