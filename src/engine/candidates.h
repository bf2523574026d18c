// The candidate tokens of one sampling step and the filters of the sampler
// chain (kept apart from Sampler so that each filter is tested on
// hand-made distributions).
//
// Semantics follow llama.cpp's samplers (src/llama-sampling.cpp): the same
// keep/drop rules, with min_keep = 1. Differences: probabilities are
// computed in double, and ties in logit are broken by the lower token id, so
// a result never depends on sort stability.
//
// Thread safety: plain data; a Candidates belongs to one sampler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cohort::engine {

struct TokenLogit {
  int32_t id = 0;
  float logit = 0.0f;
};

// A working set, like llama.cpp's llama_token_data_array. Filters shrink
// `size`; data[size, capacity) is scratch.
struct Candidates {
  std::vector<TokenLogit> data;  // [n_vocab]; [0, size) are the candidates
  size_t size = 0;
  bool sorted = false;           // [0, size) by logit descending, then id ascending

  std::span<TokenLogit> live() { return {data.data(), size}; }
  std::span<const TokenLogit> live() const { return {data.data(), size}; }

  // Every token of `logits` [n_vocab], in id order (data[i].id == i); NaN
  // becomes -inf. Allocates only when n_vocab exceeds the capacity.
  void assign(std::span<const float> logits);
};

struct PenaltyParams {
  float repeat = 1.0f;     // > 0; 1 = off
  float frequency = 0.0f;  // subtracted once per occurrence
  float presence = 0.0f;   // subtracted once if present
};

// Whether any penalty is on (repeat != 1, frequency or presence != 0).
inline bool penalties_on(const PenaltyParams& p) {
  return p.repeat != 1.0f || p.frequency != 0.0f || p.presence != 0.0f;
}

// The logit of a token that occurs n > 0 times in the penalty window:
//   (logit <= 0 ? logit * repeat : logit / repeat) - (n * frequency + presence)
float penalized(float logit, size_t n, const PenaltyParams& p);

// For each distinct token t occurring n > 0 times in `recent`:
//   logit[t] = penalized(logit[t], n, p)
// Tokens outside the candidates are ignored. `scratch` avoids allocation
// once its capacity reaches recent.size().
// REQUIRES: c is in id order (straight from assign()).
void apply_penalties(Candidates& c, std::span<const int32_t> recent, const PenaltyParams& p,
                     std::vector<int32_t>& scratch);

// Sorts [0, size) by logit descending, then id ascending.
void sort_candidates(Candidates& c);

// Keeps the k highest (k <= 0: no-op). Leaves the candidates sorted.
void apply_top_k(Candidates& c, int k);

// What assign(logits), changing the logits of the tokens in `changed` to the
// values given there, then apply_top_k(k) leave (the same tokens in the same
// order), in one pass over `logits` that writes nothing but the k kept: a
// token outside `changed` is among the k best only if it is among the k
// best of the unchanged tokens. `skip` [n_vocab] is non-zero exactly at the
// tokens of `changed` (each listed once).
// REQUIRES: k >= 1; logits.size() == skip.size().
void select_top_k(Candidates& c, std::span<const float> logits, int k, std::span<const TokenLogit> changed,
                  std::span<const uint8_t> skip);
// Nucleus: keeps the shortest sorted prefix whose softmax mass is >= p
// (p >= 1: no-op). Sorts.
void apply_top_p(Candidates& c, float p);
// Keeps tokens with probability >= p * max probability, i.e. logit >=
// max_logit + ln(p) (p <= 0: no-op). Keeps the order.
void apply_min_p(Candidates& c, float p);
// t > 0: divides every logit by t. t <= 0: keeps only the highest (greedy).
void apply_temperature(Candidates& c, float t);

// Index in [0, size) of the highest logit (the lowest id among equals).
// REQUIRES: size > 0.
size_t argmax(const Candidates& c);

// Draws from softmax of the candidates' logits with u in [0, 1): returns the
// first index whose cumulative probability exceeds u.
// REQUIRES: size > 0 and a finite maximum logit.
size_t draw(const Candidates& c, double u);

}  // namespace cohort::engine
