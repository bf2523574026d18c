// Token sampling: the parameters of a request and the per-sequence sampler.
//
// The chain is llama.cpp's common sampler default order (common/sampling.cpp),
// without the samplers that are off by default there:
//   grammar -> logit_bias -> penalties -> top_k -> (typical: skipped) -> top_p -> min_p -> temperature -> draw
// so top_p and min_p see the distribution before temperature, as in
// llama.cpp. temp <= 0 is greedy: the argmax of the penalized logits (which
// is what the full chain yields for temp <= 0, since every filter keeps the
// maximum). Each filter's exact rule is in engine/candidates.h.
//
// Structured output: with a grammar (SamplingParams::grammar), the tokens
// it does not allow next get -inf before anything else of the chain, so
// every filter and the draw see only allowed tokens (as llama.cpp applies
// its grammar sampler first in the chain when it is set); accept() advances
// the grammar with each generated token. End-of-generation tokens are
// allowed only where the grammar is complete.
//
// Determinism: each Sampler owns its generator, std::mt19937_64 (whose
// output sequence the C++ standard fixes), and turns one output into a
// uniform double in [0, 1) itself, avoiding the library-specific
// std::uniform_real_distribution. The same seed, logits and accepted
// tokens give the same tokens on every platform, whatever other sequences
// do. Results are not bit-identical to llama.cpp's (different generator).
//
// Speed: where top_k (or greedy) leaves at most kMaxSelectedTopK
// candidates, sample() finds them in one pass over the logits
// (select_top_k) instead of copying and sorting every token; the result is
// the same.
//
// Allocation: the constructor sizes all scratch (candidates [n_vocab], the
// penalty window, a grammar's mask and masked row); sample() and accept()
// do not allocate (beyond the list of changed tokens growing to the
// logit_bias and window sizes once).
// Thread safety: none; one Sampler per sequence, used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "engine/candidates.h"
#include "engine/grammar_matcher.h"

namespace cohort::engine {

inline constexpr uint32_t kRandomSeed = 0xFFFFFFFF;  // LLAMA_DEFAULT_SEED: draw a seed
// The largest top_k whose candidates sample() selects in one pass.
inline constexpr int kMaxSelectedTopK = 1024;

// A value added to one token's logit before anything else of the chain
// (-inf bans the token), as llama.cpp's logit_bias sampler does.
struct TokenBias {
  int32_t token = 0;
  float bias = 0.0f;
};

// Defaults are llama.cpp's (common_params_sampling).
struct SamplingParams {
  float temp = 0.80f;              // <= 0: greedy
  int32_t top_k = 40;              // 0: off
  float top_p = 0.95f;             // (0, 1]; 1: off
  float min_p = 0.05f;             // [0, 1]; 0: off
  float repeat_penalty = 1.00f;    // > 0; 1: off
  float presence_penalty = 0.00f;  // 0: off
  float frequency_penalty = 0.00f; // 0: off
  int32_t repeat_last_n = 64;      // penalty window in tokens; 0: off; -1: context size
  uint32_t seed = kRandomSeed;
  std::vector<TokenBias> logit_bias;  // in order; a token listed twice gets both
  // Structured output: only text this grammar accepts is generated; null: any.
  std::shared_ptr<const Grammar> grammar;

  // Throws cohort::Error naming the first bad field and its value.
  void validate() const;
};

class Sampler {
 public:
  // Validates `params`. n_ctx resolves repeat_last_n = -1.
  // REQUIRES: n_vocab >= 1; n_ctx >= 1 if repeat_last_n == -1; every
  // logit_bias token in [0, n_vocab); a grammar's vocabulary no larger than
  // n_vocab (else cohort::Error).
  Sampler(const SamplingParams& params, int n_vocab, int n_ctx = 0);

  // Picks the next token from `logits` [n_vocab] (not modified). Does not
  // accept it: call accept() with the token actually emitted.
  // Throws cohort::Error if logits.size() != n_vocab or, after the grammar
  // and penalties, the largest logit is not finite (+inf, or all -inf/NaN:
  // for instance a grammar whose only way on is a banned end-of-generation
  // token).
  int32_t sample(std::span<const float> logits);

  // When the chain changes no logit before top_k (no logit_bias, penalties
  // off) and keeps k <= cap candidates there (k = top_k, or 1 when greedy):
  // k, for sample() then depends only on a row's k best logits (by logit,
  // then id). Otherwise 0: it needs the whole row. Under a grammar those are
  // the best k of the row after its mask (write_mask), which the caller
  // applies before it selects them.
  int best_needed(int cap) const;
  // sample() given only a row's best logits, best first (by logit
  // descending, then id ascending; NaN as -inf), as select_top_k and the
  // GPU's best_logits leave them: the same token, the same draw.
  // Throws cohort::Error unless best_needed(best.size()) > 0, or if under a
  // grammar a finite candidate is one the grammar does not allow (the mask
  // was not applied).
  int32_t sample_best(std::span<const TokenLogit> best);
  // Under a grammar, the tokens it allows next as a bitmask over a logits
  // row (GrammarMatcher::write_mask); all ones without one.
  void write_mask(std::span<uint32_t> words);
  bool constrained() const { return grammar_.has_value(); }

  // A generated token: adds it to the penalty window and advances the
  // grammar. Throws cohort::Error, changing nothing, if the grammar does
  // not allow it (a token sample() did not give).
  void accept(int32_t token);
  // A prompt token the caller wants penalized (as llama-server does): the
  // penalty window only; the grammar constrains generated text alone.
  void accept_prompt(int32_t token);

  // The grammar's state, or null without one.
  const GrammarMatcher* grammar() const { return grammar_ ? &*grammar_ : nullptr; }

  // Forgets the accepted tokens, restarts the grammar and the generator from seed().
  void reset();

  const SamplingParams& params() const { return params_; }
  uint32_t seed() const { return seed_; }  // the effective seed (drawn if kRandomSeed)
  int n_vocab() const { return n_vocab_; }
  // The candidates left by the last sample() before the draw (for tests and
  // post-sampling probabilities). Empty after a greedy sample().
  const Candidates& candidates() const { return candidates_; }

 private:
  double next_uniform();  // [0, 1), 53 random bits
  int32_t finish();       // the chain after top_k, on candidates_
  void collect_changed(std::span<const float> logits);
  void remember(int32_t token);  // the penalty window
  std::span<const int32_t> recent() const { return recent_; }

  SamplingParams params_;
  int n_vocab_;
  uint32_t seed_;
  std::mt19937_64 rng_;
  Candidates candidates_;           // scratch, [n_vocab]
  std::vector<int32_t> recent_;     // ring buffer of accepted tokens, [<= window_]
  size_t recent_next_ = 0;          // next slot to overwrite once full
  size_t window_ = 0;               // resolved repeat_last_n
  std::vector<int32_t> penalty_scratch_;  // [window_]
  std::vector<TokenLogit> changed_;       // tokens logit_bias and penalties change, their new logits
  std::vector<uint8_t> skip_;             // [n_vocab] 1 at the tokens of changed_ during sample()
  std::optional<GrammarMatcher> grammar_;  // with params_.grammar
  std::vector<float> masked_;             // [n_vocab] the row with the grammar's mask applied
};

}  // namespace cohort::engine
