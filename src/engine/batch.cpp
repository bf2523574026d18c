#include "engine/batch.h"

#include <algorithm>

#include "backend/step_input.h"
#include "common/error.h"

namespace cohort::engine {
namespace {

int count_outputs(std::span<const uint8_t> want_logits) {
  return static_cast<int>(std::count_if(want_logits.begin(), want_logits.end(),
                                        [](uint8_t w) { return w != 0; }));
}

}  // namespace

int Batch::n_outputs() const { return count_outputs(want_logits); }
int Batch::n_embd_outputs() const { return count_outputs(want_embd); }

void Batch::clear() {
  tokens.clear();
  positions.clear();
  seq_ids.clear();
  want_logits.clear();
  want_embd.clear();
  best_k = 0;
  token_masks.clear();
}

void Batch::reserve(int n_tokens) {
  const auto n = static_cast<size_t>(std::max(n_tokens, 0));
  tokens.reserve(n);
  positions.reserve(n);
  seq_ids.reserve(n);
  want_logits.reserve(n);
  want_embd.reserve(n);
}

void validate(const Batch& batch, int n_vocab, std::vector<SeqSpan>& seqs) {
  const size_t n = batch.tokens.size();
  if (batch.positions.size() != n || batch.seq_ids.size() != n || batch.want_logits.size() != n ||
      batch.want_embd.size() != n)
    fail("batch: arrays differ in length (tokens {}, positions {}, seq_ids {}, want_logits {}, want_embd {})",
         n, batch.positions.size(), batch.seq_ids.size(), batch.want_logits.size(), batch.want_embd.size());
  if (batch.best_k < 0 || batch.best_k > backend::kMaxBestLogits || batch.best_k > n_vocab)
    fail("batch: best_k = {} is outside [0, {}]", batch.best_k, std::min(backend::kMaxBestLogits, n_vocab));
  if (!batch.token_masks.empty()) {
    const size_t want = static_cast<size_t>(batch.n_outputs()) * static_cast<size_t>(Batch::mask_words(n_vocab));
    if (batch.best_k == 0) fail("batch: token masks without best_k");
    if (batch.token_masks.size() != want)
      fail("batch: {} token-mask words for {} logit rows of {} tokens (want {})", batch.token_masks.size(),
           batch.n_outputs(), n_vocab, want);
  }
  seqs.clear();
  size_t hit = 0;  // the span of the previous row: rows of one sequence are usually adjacent
  for (size_t i = 0; i < n; ++i) {
    const int32_t token = batch.tokens[i];
    const int32_t pos = batch.positions[i];
    const int32_t seq = batch.seq_ids[i];
    if (token < 0 || token >= n_vocab)
      fail("batch: row {}: token {} is outside the vocabulary [0, {})", i, token, n_vocab);
    if (pos < 0) fail("batch: row {}: position {} is negative", i, pos);
    if (hit >= seqs.size() || seqs[hit].seq != seq) {
      hit = 0;
      while (hit < seqs.size() && seqs[hit].seq != seq) ++hit;
      if (hit == seqs.size()) {
        seqs.push_back({seq, pos, pos});
        continue;
      }
    }
    SeqSpan& s = seqs[hit];
    if (pos != s.last + 1)
      fail("batch: row {}: sequence {} has position {} after {}", i, seq, pos, s.last);
    s.last = pos;
  }
}

void validate(const Batch& batch, int n_vocab) {
  std::vector<SeqSpan> seqs;
  validate(batch, n_vocab, seqs);
}

}  // namespace cohort::engine
