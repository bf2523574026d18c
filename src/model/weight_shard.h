// The part of each weight tensor that one tensor-parallel rank holds, derived
// from a ShardPlan: plain data for the weight binder to turn into views.
//
// A matrix is stored as llama.cpp stores it: n_rows rows (outputs, ggml ne[1])
// of n_cols elements (inputs, ggml ne[0], contiguous, in blocks of the type).
// A rank keeps rows [rows.begin, rows.end) and, of each of them, the elements
// [cols.begin, cols.end). A row shard (cols whole) is one contiguous span of
// the tensor; a column shard (rows whole) is strided: consecutive rows of the
// shard are still row_stride_bytes() apart, the full row's size.
//
//   matrix         full shape [n_rows, n_cols]          split
//   q              [n_head * hd,    n_embd]            rows: query heads
//   k, v           [n_head_kv * hd, n_embd]            rows: KV heads
//   o              [n_embd,         n_head * hd]       cols: query heads
//   gate, up       [n_ff,           n_embd]            rows: FFN columns
//   down           [n_embd,         n_ff]              cols: FFN columns
//   output         [n_vocab,        n_embd]            rows: vocabulary
//   embedding      [n_vocab,        n_embd]            whole (every rank looks tokens up)
//   q/k/v bias     [n_head * hd] / [n_head_kv * hd]    like the rows of q/k/v
//
// Norm weights (attention, FFN, output, Qwen3 Q/K norms) are replicated and
// not listed. The partial outputs of o and down are summed over ranks.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "gguf/tensor_type.h"
#include "model/hparams.h"
#include "model/shard_plan.h"

namespace cohort::model {

struct MatrixShard {
  int64_t n_rows = 0;  // of the full matrix
  int64_t n_cols = 0;  // of the full matrix: the row stride in elements
  Range rows;          // rows this rank keeps
  Range cols;          // elements of each kept row this rank keeps

  bool whole() const { return rows.size() == n_rows && cols.size() == n_cols; }
  // Whether both column bounds fall on block boundaries of `type` (then the
  // byte arithmetic below is exact).
  bool aligned_for(gguf::TensorType type) const;
  // Bytes from the tensor's first byte to the shard's first element.
  // REQUIRES: aligned_for(type).
  size_t offset_bytes(gguf::TensorType type) const;
  // Bytes between the starts of consecutive rows (of the full matrix).
  size_t row_stride_bytes(gguf::TensorType type) const;
  // Bytes of one row of the shard. REQUIRES: aligned_for(type).
  size_t shard_row_bytes(gguf::TensorType type) const;
};

struct VectorShard {
  int64_t n = 0;  // elements of the full vector
  Range range;    // elements this rank keeps
};

struct LayerShard {
  MatrixShard q, k, v, o;
  MatrixShard gate, up, down;
  VectorShard q_bias, k_bias, v_bias;  // Qwen2's; the others have no biases
};

struct HeadShard {
  std::string output_name;  // "output.weight", or "token_embd.weight" when tied
  MatrixShard output;       // vocabulary rows of the output head
  MatrixShard embedding;    // token_embd for the lookup: whole on every rank
};

// REQUIRES: plan made from hp; 0 <= rank < plan.n_ranks().
LayerShard layer_shard(const ShardPlan& plan, const HParams& hp, int rank);
HeadShard head_shard(const ShardPlan& plan, const HParams& hp, int rank);

}  // namespace cohort::model
