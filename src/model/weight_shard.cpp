#include "model/weight_shard.h"

#include <cassert>

namespace cohort::model {
namespace {

// A matrix of n_rows x n_cols keeping rows `rows`, every column.
MatrixShard by_rows(int64_t n_rows, int64_t n_cols, Range rows) {
  return {n_rows, n_cols, rows, {0, n_cols}};
}

// A matrix of n_rows x n_cols keeping columns `cols` of every row.
MatrixShard by_cols(int64_t n_rows, int64_t n_cols, Range cols) {
  return {n_rows, n_cols, {0, n_rows}, cols};
}

Range scaled(Range r, int64_t by) { return {r.begin * by, r.end * by}; }

}  // namespace

bool MatrixShard::aligned_for(gguf::TensorType type) const {
  const int64_t block = gguf::traits(type).block_size;
  return cols.begin % block == 0 && cols.end % block == 0;
}

size_t MatrixShard::offset_bytes(gguf::TensorType type) const {
  assert(aligned_for(type));
  return static_cast<size_t>(rows.begin) * row_stride_bytes(type) + gguf::row_bytes(type, cols.begin);
}

size_t MatrixShard::row_stride_bytes(gguf::TensorType type) const {
  return gguf::row_bytes(type, n_cols);
}

size_t MatrixShard::shard_row_bytes(gguf::TensorType type) const {
  assert(aligned_for(type));
  return gguf::row_bytes(type, cols.size());
}

LayerShard layer_shard(const ShardPlan& plan, const HParams& hp, int rank) {
  assert(rank >= 0 && rank < plan.n_ranks());
  const RankShard& s = plan.ranks[static_cast<size_t>(rank)];
  const int64_t hd = hp.head_dim;
  const int64_t q_dim = hp.n_head * hd, kv_dim = hp.n_head_kv * hd;
  const Range q_rows = scaled(s.heads, hd), kv_rows = scaled(s.kv_heads, hd);
  LayerShard l;
  l.q = by_rows(q_dim, hp.n_embd, q_rows);
  l.k = by_rows(kv_dim, hp.n_embd, kv_rows);
  l.v = by_rows(kv_dim, hp.n_embd, kv_rows);
  l.o = by_cols(hp.n_embd, q_dim, q_rows);
  l.gate = by_rows(hp.n_ff, hp.n_embd, s.ffn);
  l.up = by_rows(hp.n_ff, hp.n_embd, s.ffn);
  l.down = by_cols(hp.n_embd, hp.n_ff, s.ffn);
  l.q_bias = {q_dim, q_rows};
  l.k_bias = {kv_dim, kv_rows};
  l.v_bias = {kv_dim, kv_rows};
  return l;
}

HeadShard head_shard(const ShardPlan& plan, const HParams& hp, int rank) {
  assert(rank >= 0 && rank < plan.n_ranks());
  const RankShard& s = plan.ranks[static_cast<size_t>(rank)];
  HeadShard h;
  h.output_name = hp.tied_embeddings ? "token_embd.weight" : "output.weight";
  h.output = by_rows(hp.n_vocab, hp.n_embd, s.vocab);
  h.embedding = by_rows(hp.n_vocab, hp.n_embd, {0, hp.n_vocab});
  return h;
}

}  // namespace cohort::model
