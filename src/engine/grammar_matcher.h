// The state of one sequence in a Grammar (engine/grammar.h): which tokens
// may come next, and the tokens generated so far.
//
// Allocation: the constructor sizes the mask ([ceil(n_vocab / 32)] words);
// apply() and accept() do not allocate.
// Thread safety: none; one matcher per sequence (the Grammar it walks is
// shared and immutable).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/grammar.h"

namespace cohort::engine {

// Sets to -inf the logits whose bit in `words` (bit t % 32 of word t / 32)
// is clear; logits past 32 * words.size() are left as they are.
void mask_logits(std::span<float> logits, std::span<const uint32_t> words);

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;

  // Sets to -inf the logits [n] of the tokens that cannot come next: those
  // the grammar does not allow here, and every id at or past the grammar's
  // vocabulary (a logits row may be wider than the token list).
  void apply(std::span<float> logits);
  // The same rule as a bitmask over a logits row of 32 * words.size() or
  // fewer tokens: bit t % 32 of words[t / 32] set where token t may come
  // next; every id at or past the grammar's vocabulary clear. What a
  // device applies before it selects a row's best logits (Batch::token_masks).
  void write_mask(std::span<uint32_t> words);
  // Whether `token` may come next (the mask of the last apply(), or a fresh one).
  bool allows(int32_t token);
  // Advances past a generated token. Returns false, changing nothing, if
  // the grammar does not allow it.
  bool accept(int32_t token);
  // The grammar's root is complete (an end-of-generation token may come).
  bool completed() const;
  // An end-of-generation token was accepted: nothing may follow.
  bool terminated() const;
  // Back to the start, as if nothing had been accepted.
  void reset();

  const Grammar& grammar() const { return *grammar_; }

 private:
  void fill_mask();

  struct State;  // xgrammar's matcher
  std::shared_ptr<const Grammar> grammar_;
  std::unique_ptr<State> state_;
  std::vector<int32_t> mask_;  // [ceil(n_vocab / 32)]; bit i % 32 of word i / 32: token i allowed
  bool mask_fresh_ = false;    // mask_ is of the current state
};

}  // namespace cohort::engine
