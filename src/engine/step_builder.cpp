#include "engine/step_builder.h"

#include <algorithm>
#include <cassert>

namespace cohort::engine {

StepBuilder::StepBuilder(int n_max_tok, int max_blocks, int block_size)
    : n_max_tok_(n_max_tok), max_blocks_(max_blocks), block_size_(block_size) {
  assert(n_max_tok >= 1 && max_blocks >= 0 && block_size >= 1);
  const auto n = static_cast<size_t>(n_max_tok);
  for (auto* v : {&tokens_, &positions_, &kv_slots_, &seq_index_, &seq_ids_, &context_lens_,
                  &logit_rows_, &embd_rows_}) {
    v->assign(n, 0);
  }
  block_tables_.assign(n * static_cast<size_t>(max_blocks), kv::kNoBlock);
}

// The packed row of `seq`, added (with a copy of its block table) if the
// micro-batch has not seen it. The previous token's row is tried first.
int32_t StepBuilder::packed_row(int32_t seq, int32_t last_row, const kv::BlockManager& blocks) {
  if (last_row >= 0 && seq_ids_[static_cast<size_t>(last_row)] == seq) return last_row;
  for (int32_t s = 0; s < n_seq_; ++s) {
    if (seq_ids_[static_cast<size_t>(s)] == seq) return s;
  }
  const int32_t s = n_seq_++;
  seq_ids_[static_cast<size_t>(s)] = seq;
  const std::span<const kv::BlockId> table = blocks.block_table(seq);
  assert(table.size() <= static_cast<size_t>(max_blocks_));
  std::copy(table.begin(), table.end(),
            block_tables_.begin() + static_cast<ptrdiff_t>(s) * max_blocks_);
  return s;
}

const backend::StepInput& StepBuilder::build(const Batch& batch, int begin, int end,
                                             const kv::BlockManager& blocks) {
  assert(0 <= begin && begin < end && end <= batch.n_tokens() && end - begin <= n_max_tok_);
  const int32_t n_tok = end - begin;
  n_seq_ = 0;
  int32_t n_logits = 0, n_embd = 0;
  int32_t row = -1;
  for (int32_t t = 0; t < n_tok; ++t) {
    const auto i = static_cast<size_t>(begin + t), ti = static_cast<size_t>(t);
    const int32_t pos = batch.positions[i];
    row = packed_row(batch.seq_ids[i], row, blocks);
    tokens_[ti] = batch.tokens[i];
    positions_[ti] = pos;
    seq_index_[ti] = row;
    context_lens_[static_cast<size_t>(row)] = pos + 1;  // a sequence's positions increase
    const int32_t block = block_tables_[static_cast<size_t>(row) * static_cast<size_t>(max_blocks_) +
                                        static_cast<size_t>(pos / block_size_)];
    kv_slots_[ti] = block * block_size_ + pos % block_size_;
    if (batch.want_logits[i]) logit_rows_[static_cast<size_t>(n_logits++)] = t;
    if (batch.want_embd[i]) embd_rows_[static_cast<size_t>(n_embd++)] = t;
  }
  auto first = [](const std::vector<int32_t>& v, int32_t n) {
    return std::span<const int32_t>(v.data(), static_cast<size_t>(n));
  };
  in_.n_tok = n_tok;
  in_.n_seq = n_seq_;
  in_.max_blocks = max_blocks_;
  in_.block_size = block_size_;
  in_.tokens = first(tokens_, n_tok);
  in_.positions = first(positions_, n_tok);
  in_.kv_slots = first(kv_slots_, n_tok);
  in_.seq_index = first(seq_index_, n_tok);
  in_.block_tables = first(block_tables_, n_seq_ * max_blocks_);
  in_.context_lens = first(context_lens_, n_seq_);
  in_.logit_rows = first(logit_rows_, n_logits);
  in_.embd_rows = first(embd_rows_, n_embd);
  return in_;
}

}  // namespace cohort::engine
