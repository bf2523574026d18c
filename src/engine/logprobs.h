// Log-probabilities of the model's distribution for OpenAI-style `logprobs`:
// the chosen token's and the top-n alternatives'.
//
// They are computed from the ORIGINAL logits of the step (before penalties,
// filters and temperature), in double: log_softmax(logits)[i] =
// logits[i] - max - ln(sum_j exp(logits[j] - max)). NaN logits count as
// -inf; a token with probability 0 has logprob -inf (the HTTP layer decides
// how to print it).
//
// Thread safety: pure functions. compute_logprobs reuses the capacity of
// `top` and does not allocate once it holds n_top entries.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace cohort::engine {

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

// ln(sum_j exp(logits[j])) in double, computed stably.
// REQUIRES: !logits.empty().
double log_sum_exp(std::span<const float> logits);

// The log-softmax of `logits` [n_vocab] at `chosen`; fills `top` with the
// n_top most likely tokens, most likely first (ties: lower id first).
// REQUIRES: 0 <= chosen < n_vocab, n_top >= 0.
float compute_logprobs(std::span<const float> logits, int32_t chosen, int n_top,
                       std::vector<TokenLogprob>& top);

}  // namespace cohort::engine
