#include "engine/batch.h"

#include <algorithm>
#include <cassert>
#include <unordered_map>

#include "common/error.h"

namespace cohort::engine {
namespace {

int count_outputs(std::span<const uint8_t> want_logits) {
  return static_cast<int>(std::count_if(want_logits.begin(), want_logits.end(),
                                        [](uint8_t w) { return w != 0; }));
}

UBatch make_view(const Batch& batch, int begin, int end, int output_offset) {
  assert(0 <= begin && begin <= end && end <= batch.n_tokens());
  const auto b = static_cast<size_t>(begin);
  const auto n = static_cast<size_t>(end - begin);
  UBatch u;
  u.tokens = std::span(batch.tokens).subspan(b, n);
  u.positions = std::span(batch.positions).subspan(b, n);
  u.seq_ids = std::span(batch.seq_ids).subspan(b, n);
  u.want_logits = std::span(batch.want_logits).subspan(b, n);
  u.offset = begin;
  u.output_offset = output_offset;
  return u;
}

}  // namespace

int Batch::n_outputs() const { return count_outputs(want_logits); }

void Batch::clear() {
  tokens.clear();
  positions.clear();
  seq_ids.clear();
  want_logits.clear();
}

void Batch::reserve(int n_tokens) {
  const auto n = static_cast<size_t>(std::max(n_tokens, 0));
  tokens.reserve(n);
  positions.reserve(n);
  seq_ids.reserve(n);
  want_logits.reserve(n);
}

void validate(const Batch& batch, int n_vocab) {
  const size_t n = batch.tokens.size();
  if (batch.positions.size() != n || batch.seq_ids.size() != n || batch.want_logits.size() != n)
    fail("batch: arrays differ in length (tokens {}, positions {}, seq_ids {}, want_logits {})",
         n, batch.positions.size(), batch.seq_ids.size(), batch.want_logits.size());
  std::unordered_map<int32_t, int32_t> last_pos;  // sequence -> last position seen
  for (size_t i = 0; i < n; ++i) {
    const int32_t token = batch.tokens[i];
    const int32_t pos = batch.positions[i];
    const int32_t seq = batch.seq_ids[i];
    if (token < 0 || token >= n_vocab)
      fail("batch: row {}: token {} is outside the vocabulary [0, {})", i, token, n_vocab);
    if (pos < 0) fail("batch: row {}: position {} is negative", i, pos);
    auto [it, first] = last_pos.try_emplace(seq, pos);
    if (!first && pos != it->second + 1)
      fail("batch: row {}: sequence {} has position {} after {}", i, seq, pos, it->second);
    it->second = pos;
  }
}

int UBatch::n_outputs() const { return count_outputs(want_logits); }

UBatch view(const Batch& batch, int begin, int end) {
  assert(0 <= begin && begin <= end && end <= batch.n_tokens());
  return make_view(batch, begin, end,
                   count_outputs(std::span(batch.want_logits).first(static_cast<size_t>(begin))));
}

std::vector<UBatch> split_ubatches(const Batch& batch, int n_ubatch) {
  if (n_ubatch < 1) fail("n_ubatch = {} must be >= 1", n_ubatch);
  std::vector<UBatch> out;
  const int n = batch.n_tokens();
  out.reserve(static_cast<size_t>((n + n_ubatch - 1) / n_ubatch));
  int n_outputs = 0;
  for (int begin = 0; begin < n; begin += n_ubatch) {
    UBatch u = make_view(batch, begin, std::min(begin + n_ubatch, n), n_outputs);
    n_outputs += u.n_outputs();
    out.push_back(u);
  }
  return out;
}

}  // namespace cohort::engine
