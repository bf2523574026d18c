#include "engine/logprobs.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace cohort::engine {
namespace {

float clean(float logit) {
  return std::isnan(logit) ? -std::numeric_limits<float>::infinity() : logit;
}

// Heap order that keeps the least likely of the current top-n at the front.
// Compares logits, not logprobs: the order is the same and cheaper.
bool more_likely(const TokenLogprob& a, const TokenLogprob& b) {
  return a.logprob > b.logprob || (a.logprob == b.logprob && a.token < b.token);
}

}  // namespace

double log_sum_exp(std::span<const float> logits) {
  assert(!logits.empty());
  float max = clean(logits[0]);
  for (float l : logits) max = std::max(max, clean(l));
  if (!std::isfinite(max)) return max;
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(clean(l)) - max);
  return max + std::log(sum);
}

float compute_logprobs(std::span<const float> logits, int32_t chosen, int n_top,
                       std::vector<TokenLogprob>& top) {
  assert(chosen >= 0 && static_cast<size_t>(chosen) < logits.size() && n_top >= 0);
  const double lse = log_sum_exp(logits);
  top.clear();
  const size_t n = std::min(static_cast<size_t>(n_top), logits.size());
  // A min-heap (by more_likely) of the n best seen so far, holding raw logits.
  for (size_t i = 0; i < logits.size() && n > 0; ++i) {
    const TokenLogprob t{static_cast<int32_t>(i), clean(logits[i])};
    if (top.size() < n) {
      top.push_back(t);
      std::push_heap(top.begin(), top.end(), more_likely);
    } else if (more_likely(t, top.front())) {
      std::pop_heap(top.begin(), top.end(), more_likely);
      top.back() = t;
      std::push_heap(top.begin(), top.end(), more_likely);
    }
  }
  std::sort_heap(top.begin(), top.end(), more_likely);
  for (TokenLogprob& t : top) t.logprob = static_cast<float>(t.logprob - lse);
  return static_cast<float>(clean(logits[static_cast<size_t>(chosen)]) - lse);
}

}  // namespace cohort::engine
