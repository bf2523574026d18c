// Host input preparation: one micro-batch (rows of a Batch) and the block
// manager's tables become the forward's plain-data backend::StepInput.
//
// The builder owns the step's buffers, allocated once at construction for
// the largest micro-batch (-ub tokens) and the longest block table (every
// block of the cache, from -c); build() only rewrites their contents, so
// their addresses hold for the builder's life (what a device backend needs
// to capture a step and replay it). Sequences are packed in order of first
// appearance: the k-th distinct sequence of the micro-batch is row k of the
// block tables.
//
// Thread safety: none; the decoder's thread owns it.
#pragma once

#include <vector>

#include "backend/step_input.h"
#include "engine/batch.h"
#include "kv/block_manager.h"

namespace cohort::engine {

class StepBuilder {
 public:
  // REQUIRES: n_max_tok >= 1, max_blocks >= 0, block_size >= 1.
  StepBuilder(int n_max_tok, int max_blocks, int block_size);

  // The step input of rows [begin, end) of `batch`, valid until the next
  // build(). REQUIRES: 0 <= begin < end <= batch.n_tokens(), end - begin <=
  // n_max_tok; every row's sequence is in `blocks` with room for its
  // position (the decoder checks both before the first micro-batch).
  const backend::StepInput& build(const Batch& batch, int begin, int end,
                                  const kv::BlockManager& blocks);

 private:
  int32_t packed_row(int32_t seq, int32_t last_row, const kv::BlockManager& blocks);

  int n_max_tok_;
  int max_blocks_;
  int block_size_;
  int32_t n_seq_ = 0;
  std::vector<int32_t> tokens_;        // [n_max_tok]
  std::vector<int32_t> positions_;     // [n_max_tok]
  std::vector<int32_t> kv_slots_;      // [n_max_tok] block * block_size + offset
  std::vector<int32_t> seq_index_;     // [n_max_tok] packed sequence row of each token
  std::vector<int32_t> seq_ids_;       // [n_max_tok] kv::SeqId of each packed row
  std::vector<int32_t> block_tables_;  // [n_max_tok, max_blocks] packed block tables
  std::vector<int32_t> context_lens_;  // [n_max_tok] per packed row: last position + 1
  std::vector<int32_t> logit_rows_;    // [n_max_tok] rows that want logits
  std::vector<int32_t> embd_rows_;     // [n_max_tok] rows that want their hidden state
  backend::StepInput in_;
};

}  // namespace cohort::engine
