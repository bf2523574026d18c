// matmul_fast: activations quantized once, then integer dot products in tiles
// (the quant/vec_dot.h kernels), as llama.cpp's CPU backend does.
//
// Work split:
//   1. quantize: one activation row per token, tokens spread over the pool;
//   2. n_tok == 1: a matvec, rows spread over the pool, each thread streaming
//      its rows one by one (the fastest way through a matrix that comes from
//      memory, see quant/vec_dot_avx2.cpp);
//      n_tok > 1: rows spread over the pool, each thread walking its rows in
//      blocks of kRowBlock; one vec_dot_tile call takes a row block against
//      all tokens, so each weight block is unpacked once per 4 tokens and
//      the block's rows stay in L1 while the tokens stream from L2.
// The tile shapes change nothing in the arithmetic of a (row, token) pair
// (see vec_dot.h), so results do not depend on the thread count; they do not
// depend on n_tok either, except where llama.cpp's own kernels do (K-quants:
// the tokens quant::order_split() names take the order of its batch
// kernels), so that a ubatch gives llama.cpp's bits.
#include <algorithm>
#include <cstdint>

#include "backend/cpu/ops.h"
#include "common/error.h"
#include "quant/vec_dot.h"

namespace cohort::cpu {
namespace {

using gguf::TensorType;

// Activation rows start on cache lines.
constexpr size_t kRowAlign = 64;
// Rows per tile call when n_tok > 1: 32 rows of 576 Q4_1 weights are 11 KiB,
// of 1536 weights 30 KiB (L1 is 32 KiB on the cores this was tuned on).
// 16, 64 and 128 measured the same within the noise of a shared machine
// (+-10%, SmolLM2-135M shapes at 128 tokens).
constexpr int64_t kRowBlock = 32;
// Rows per parallel_for grain of a matvec: enough to make a split worth a
// thread's start-up, few enough to balance 2-16 threads on 192+ rows.
constexpr int64_t kMatvecGrain = 16;

size_t act_stride(const WeightView& w) {
  const size_t bytes = quant::activation_row_bytes(w.type, w.n_in);
  return (bytes + kRowAlign - 1) / kRowAlign * kRowAlign;
}

// Everything the parallel loops read; the lambdas capture one pointer to it,
// small enough for std::function to store without allocating.
struct Job {
  const WeightView* w;
  const float* x;
  int64_t n_tok;
  float* y;
  uint8_t* acts;        // quantized rows (null for F32 weights: x is used)
  const uint8_t* act;   // rows the dot products read
  size_t stride;        // bytes between them
};

void quantize_rows(const Job& j, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    quant::quantize_activations(j.w->type, j.x + t * j.w->n_in, j.acts + static_cast<size_t>(t) * j.stride,
                                j.w->n_in);
  }
}

// y[t][r] for rows [r0, r1) and all tokens.
void compute_rows(const Job& j, int64_t r0, int64_t r1) {
  const WeightView& w = *j.w;
  const int64_t block = j.n_tok == 1 ? r1 - r0 : kRowBlock;
  const int64_t split = quant::order_split(w.type, j.n_tok);
  for (int64_t r = r0; r < r1; r += block) {
    const int64_t nr = std::min(block, r1 - r);
    if (split > 0) {
      quant::vec_dot_tile(w.type, w.row(r), w.row_bytes, nr, j.act, j.stride, split, w.n_in,
                          j.y + r, w.n_out, quant::Order::batched);
    }
    if (split < j.n_tok) {
      quant::vec_dot_tile(w.type, w.row(r), w.row_bytes, nr, j.act + static_cast<size_t>(split) * j.stride,
                          j.stride, j.n_tok - split, w.n_in, j.y + split * w.n_out + r, w.n_out);
    }
  }
}

}  // namespace

size_t matmul_fast_scratch_bytes(const WeightView& w, int64_t n_tok) {
  if (w.type == TensorType::F32 || n_tok <= 0) return 0;
  return static_cast<size_t>(n_tok) * act_stride(w) + kRowAlign - 1;
}

void matmul_fast(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok, float* y,
                 std::span<uint8_t> scratch) {
  if (!quant::has_vec_dot(w.type)) {
    fail("matmul_fast: no integer dot product for weight type {}", gguf::type_name(w.type));
  }
  if (n_tok <= 0 || w.n_out <= 0) return;
  const size_t need = matmul_fast_scratch_bytes(w, n_tok);
  if (scratch.size() < need) {
    fail("matmul_fast: scratch of {} bytes is too small, {} needed for {} tokens of {} x {} {}",
         scratch.size(), need, n_tok, w.n_out, w.n_in, gguf::type_name(w.type));
  }
  Job job{&w, x, n_tok, y, nullptr, nullptr, 0};
  if (w.type == TensorType::F32) {
    job.act = reinterpret_cast<const uint8_t*>(x);
    job.stride = static_cast<size_t>(w.n_in) * sizeof(float);
  } else {
    const auto base = reinterpret_cast<uintptr_t>(scratch.data());
    job.acts = scratch.data() + ((kRowAlign - base % kRowAlign) % kRowAlign);
    job.act = job.acts;
    job.stride = act_stride(w);
    pool.parallel_for(n_tok, [j = &job](int64_t t0, int64_t t1, int) { quantize_rows(*j, t0, t1); });
  }
  pool.parallel_for(w.n_out, [j = &job](int64_t r0, int64_t r1, int) { compute_rows(*j, r0, r1); },
                    n_tok == 1 ? kMatvecGrain : kRowBlock);
}

}  // namespace cohort::cpu
