// A batch of tokens for one forward step, and its split into micro-batches.
//
// Batch is plain data, one row per token, in four parallel arrays. Tokens of
// different sequences may interleave, but the tokens of any one sequence
// appear in position order (consecutive positions, increasing); the forward
// relies on this, since a token attends to the earlier positions of its
// sequence, which an earlier row or micro-batch has stored in the KV cache.
//
// A micro-batch (UBatch, `-ub`) is a contiguous range of rows: the forward
// runs micro-batches one after another, in order, so the order rule above
// holds across them as well. UBatch is a non-owning view: valid while the
// Batch lives and is not modified.
//
// Logits are produced only for rows with want_logits set; output row j of a
// step's logits belongs to the j-th such row of the batch (output_offset
// places a micro-batch's outputs in the batch's output buffer).
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

  int n_tokens() const { return static_cast<int>(tokens.size()); }
  int n_outputs() const;  // rows with want_logits set
  bool empty() const { return tokens.empty(); }

  void add(int32_t token, int32_t pos, int32_t seq, bool logits) {
    tokens.push_back(token);
    positions.push_back(pos);
    seq_ids.push_back(seq);
    want_logits.push_back(logits ? 1 : 0);
  }
  // Empties the batch and keeps its capacity (no allocation per step).
  void clear();
  void reserve(int n_tokens);
};

// Throws cohort::Error naming the row if the arrays differ in length, a token
// is outside [0, n_vocab), a position is negative, or a sequence's positions
// are not consecutive and increasing within the batch.
void validate(const Batch& batch, int n_vocab);

struct UBatch {
  std::span<const int32_t> tokens;       // [n_tokens]
  std::span<const int32_t> positions;    // [n_tokens]
  std::span<const int32_t> seq_ids;      // [n_tokens]
  std::span<const uint8_t> want_logits;  // [n_tokens]
  int offset = 0;         // index of the first row in the batch
  int output_offset = 0;  // outputs (want_logits rows) of the batch before this one

  int n_tokens() const { return static_cast<int>(tokens.size()); }
  int n_outputs() const;
};

// Rows [begin, end) of `batch` as a view. REQUIRES: 0 <= begin <= end <= n_tokens.
// Its output_offset is found by counting rows, O(begin).
UBatch view(const Batch& batch, int begin, int end);

// Consecutive micro-batches of at most n_ubatch rows, in order, covering the
// batch (none for an empty batch). Throws cohort::Error if n_ubatch < 1.
std::vector<UBatch> split_ubatches(const Batch& batch, int n_ubatch);

}  // namespace cohort::engine
