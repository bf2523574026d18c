// One micro-batch as the forward pass and the backend read it: plain data,
// prepared on the host by the engine (engine::StepBuffers) from a batch and
// the block manager's tables. Nothing in the forward asks the block manager
// anything; everything about the paged KV layout that attention needs is here.
//
// The spans point into buffers that the decoder allocates once, at their
// largest size (-ub tokens, -c context), and never moves: only the counts and
// the contents change from step to step, so that a device backend can copy
// them to fixed device buffers and replay a captured step.
//
// Rows: token t of the micro-batch is row t of every [n_tok] array and of
// the activations. A token's sequence is a row of the packed block tables,
// in order of first appearance in the micro-batch.
#pragma once

#include <cstdint>
#include <span>

#include "kv/block_copy.h"

namespace cohort::backend {

struct RopeParams;

// The most best logits a step may ask for a row (StepInput::best_k).
inline constexpr int kMaxBestLogits = 64;

struct StepInput {
  int32_t n_tok = 0;                    // tokens of this micro-batch
  int32_t n_seq = 0;                    // distinct sequences among them
  int32_t max_blocks = 0;               // row length of block_tables (capacity, not n used)
  int32_t block_size = 0;               // tokens per KV block
  std::span<const int32_t> tokens;        // [n_tok] token ids
  std::span<const int32_t> positions;     // [n_tok] position of each token in its sequence
  std::span<const int32_t> kv_slots;      // [n_tok] KV row of each token: block * block_size + offset
  std::span<const int32_t> seq_index;     // [n_tok] row of the token's sequence in block_tables
  std::span<const int32_t> block_tables;  // [n_seq, max_blocks] block ids; past a table's end: unused
  std::span<const int32_t> context_lens;  // [n_seq] positions held after this step (last + 1)
  std::span<const int32_t> logit_rows;    // [n_logits] rows that want logits, increasing
  std::span<const int32_t> embd_rows;     // [n_embd_rows] rows that want their final hidden state
                                          //   (embeddings), increasing
  // > 0, for a backend that selects_best(): the logits output row i holds,
  // from its start, the row's best_k (id int32, logit float) pairs by logit
  // descending then id ascending (NaN as -inf), instead of its logits.
  int32_t best_k = 0;
  // With best_k > 0, optionally: [n_logits, (n_vocab + 31) / 32] words,
  // bit t % 32 of word t / 32 set where logit row i may select token t; the
  // others count as -inf (structured output's mask). Empty: none.
  std::span<const uint32_t> token_masks;
  // KV rows to copy, in order, before the step writes any (copy-on-write of
  // a prompt's partly reused block; kv::BlockManager::take_copies). Only the
  // first micro-batch of a step carries them; begin_step performs them.
  std::span<const kv::BlockCopy> kv_copies;
  // KV rows a context shift moves (kv::BlockManager::take_moves), performed
  // before kv_copies: the end of each round in kv_moves, and the keys'
  // rotary embedding (set where kv_moves is not empty). Only the first
  // micro-batch of a step carries them.
  std::span<const kv::RowMove> kv_moves;
  std::span<const int32_t> kv_move_rounds;
  const RopeParams* kv_rope = nullptr;

  int32_t n_logits() const { return static_cast<int32_t>(logit_rows.size()); }
  int32_t n_embd_rows() const { return static_cast<int32_t>(embd_rows.size()); }
  // The block table of row s. REQUIRES: 0 <= s < n_seq.
  std::span<const int32_t> block_table(int32_t s) const {
    return block_tables.subspan(static_cast<size_t>(s) * static_cast<size_t>(max_blocks),
                                static_cast<size_t>(max_blocks));
  }
};

}  // namespace cohort::backend
