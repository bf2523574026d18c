// A batch of tokens for one forward step, and its split into micro-batches.
//
// Batch is plain data, one row per token, in four parallel arrays. Tokens of
// different sequences may interleave, but the tokens of any one sequence
// appear in position order (consecutive positions, increasing); the forward
// relies on this, since a token attends to the earlier positions of its
// sequence, which an earlier row or micro-batch has stored in the KV cache.
//
// The decoder runs a batch as consecutive micro-batches of at most -ub rows,
// in order, so the order rule above holds across them as well (see
// engine/step_builder.h, which turns one into the forward's step input).
//
// Logits are produced only for rows with want_logits set; output row j of a
// step's logits belongs to the j-th such row of the batch. Likewise the
// final hidden states (after the output norm, before the output matrix: what
// embeddings are made of) only for rows with want_embd set, row j of a
// step's hidden rows belonging to the j-th such row.
//
// Thread safety: plain data, no internal synchronization.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace cohort::engine {

struct Batch {
  std::vector<int32_t> tokens;       // [n_tokens] token ids
  std::vector<int32_t> positions;    // [n_tokens] position in its sequence, from 0
  std::vector<int32_t> seq_ids;      // [n_tokens] sequence (KV block table) of each row
  std::vector<uint8_t> want_logits;  // [n_tokens] 1: compute logits for this row
  std::vector<uint8_t> want_embd;    // [n_tokens] 1: return this row's final hidden state
  // > 0: each logit row comes back as its best_k (id, logit) pairs, best
  // first (Decoder::best()), instead of every logit: what a sampler whose
  // chain starts with top_k <= best_k needs (Sampler::best_needed). At most
  // backend::kMaxBestLogits.
  int32_t best_k = 0;
  // With best_k > 0, optionally: the tokens each logit row's best may hold
  // (structured output), [n_outputs, mask_words()] words, bit t % 32 of
  // word t / 32 set where token t is allowed (Sampler::write_mask); the rest
  // of the row counts as -inf before the best are selected. Empty: no mask.
  std::vector<uint32_t> token_masks;

  // Words of a row of token_masks for n_vocab logits.
  static int mask_words(int n_vocab) { return (n_vocab + 31) / 32; }

  int n_tokens() const { return static_cast<int>(tokens.size()); }
  int n_outputs() const;       // rows with want_logits set
  int n_embd_outputs() const;  // rows with want_embd set
  bool empty() const { return tokens.empty(); }

  void add(int32_t token, int32_t pos, int32_t seq, bool logits, bool embd = false) {
    tokens.push_back(token);
    positions.push_back(pos);
    seq_ids.push_back(seq);
    want_logits.push_back(logits ? 1 : 0);
    want_embd.push_back(embd ? 1 : 0);
  }
  // Empties the batch and keeps its capacity (no allocation per step).
  void clear();
  void reserve(int n_tokens);
};

// The positions one sequence has in a batch: rows of `seq` hold positions
// first, first + 1, ..., last.
struct SeqSpan {
  int32_t seq = 0;
  int32_t first = 0;
  int32_t last = 0;
};

// Throws cohort::Error naming the row if the arrays differ in length, a token
// is outside [0, n_vocab), a position is negative, or a sequence's positions
// are not consecutive and increasing within the batch. Fills `seqs` with the
// batch's sequences in order of first appearance (its capacity is reused:
// no allocation once it has held as many as the batch has). Cost:
// O(n_tokens * sequences) in the worst case, O(n_tokens) when a sequence's
// rows are adjacent.
void validate(const Batch& batch, int n_vocab, std::vector<SeqSpan>& seqs);
void validate(const Batch& batch, int n_vocab);

}  // namespace cohort::engine
