#include "engine/grammar_matcher.h"

#include <algorithm>
#include <limits>

#include "engine/grammar_internal.h"

namespace cohort::engine {

struct GrammarMatcher::State {
  explicit State(const xgrammar::CompiledGrammar& g) : matcher(g) {}
  xgrammar::GrammarMatcher matcher;
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)),
      state_(std::make_unique<State>(grammar_->compiled().grammar)),
      mask_(static_cast<size_t>(xgrammar::GetBitmaskSize(grammar_->n_vocab()))) {}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

void GrammarMatcher::fill_mask() {
  if (mask_fresh_) return;
  if (terminated()) {  // nothing may follow (and the engine refuses to be asked)
    std::fill(mask_.begin(), mask_.end(), 0);
    mask_fresh_ = true;
    return;
  }
  int64_t shape[1] = {static_cast<int64_t>(mask_.size())};
  DLTensor t{mask_.data(), DLDevice{kDLCPU, 0}, 1, xgrammar::GetBitmaskDLType(), shape, nullptr, 0};
  state_->matcher.FillNextTokenBitmask(&t);
  mask_fresh_ = true;
}

bool GrammarMatcher::allows(int32_t token) {
  if (token < 0 || token >= grammar_->n_vocab()) return false;
  fill_mask();
  const auto word = static_cast<uint32_t>(mask_[static_cast<size_t>(token) / 32]);
  return ((word >> (static_cast<uint32_t>(token) % 32)) & 1u) != 0;
}

void mask_logits(std::span<float> logits, std::span<const uint32_t> words) {
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  for (size_t w = 0; w < words.size(); ++w) {
    const uint32_t word = words[w];
    if (word == 0xFFFFFFFFu) continue;  // most words of a permissive state
    const size_t end = std::min(logits.size(), (w + 1) * 32);
    for (size_t i = w * 32; i < end; ++i) {
      if (((word >> (i % 32)) & 1u) == 0) logits[i] = kMinusInf;
    }
  }
}

void GrammarMatcher::apply(std::span<float> logits) {
  fill_mask();
  const size_t n_grammar = std::min(logits.size(), static_cast<size_t>(grammar_->n_vocab()));
  // xgrammar's words are int32; the same bits read unsigned.
  mask_logits(logits.first(n_grammar), {reinterpret_cast<const uint32_t*>(mask_.data()), mask_.size()});
  for (size_t i = n_grammar; i < logits.size(); ++i) logits[i] = -std::numeric_limits<float>::infinity();
}

void GrammarMatcher::write_mask(std::span<uint32_t> words) {
  fill_mask();
  const size_t n_grammar = static_cast<size_t>(grammar_->n_vocab());
  for (size_t w = 0; w < words.size(); ++w) {
    uint32_t word = w < mask_.size() ? static_cast<uint32_t>(mask_[w]) : 0u;
    if ((w + 1) * 32 > n_grammar) {  // the word holding the vocabulary's end, or past it
      const size_t kept = n_grammar > w * 32 ? n_grammar - w * 32 : 0;
      word &= kept >= 32 ? 0xFFFFFFFFu : (uint32_t{1} << kept) - 1u;
    }
    words[w] = word;
  }
}

bool GrammarMatcher::accept(int32_t token) {
  if (token < 0 || token >= grammar_->n_vocab()) return false;
  if (!state_->matcher.AcceptToken(token)) return false;
  mask_fresh_ = false;
  return true;
}

bool GrammarMatcher::completed() const { return state_->matcher.IsCompleted(); }

bool GrammarMatcher::terminated() const { return state_->matcher.IsTerminated(); }

void GrammarMatcher::reset() {
  state_->matcher.Reset();
  mask_fresh_ = false;
}

}  // namespace cohort::engine
