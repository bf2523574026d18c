#include "engine/candidates.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace cohort::engine {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Total order: higher logit first, then lower id.
bool before(const TokenLogit& a, const TokenLogit& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

float max_logit(const Candidates& c) {
  return c.data[argmax(c)].logit;
}

// Sum of exp(logit - max) over the candidates, in double.
double exp_sum(const Candidates& c, float max) {
  double sum = 0.0;
  for (const TokenLogit& t : c.live()) sum += std::exp(static_cast<double>(t.logit) - max);
  return sum;
}

}  // namespace

void Candidates::assign(std::span<const float> logits) {
  data.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    data[i].id = static_cast<int32_t>(i);
    data[i].logit = std::isnan(logits[i]) ? kNegInf : logits[i];
  }
  size = logits.size();
  sorted = false;
}

float penalized(float logit, size_t n, const PenaltyParams& p) {
  logit = logit <= 0.0f ? logit * p.repeat : logit / p.repeat;
  return logit - (static_cast<float>(n) * p.frequency + p.presence);
}

void apply_penalties(Candidates& c, std::span<const int32_t> recent, const PenaltyParams& p,
                     std::vector<int32_t>& scratch) {
  if (recent.empty() || !penalties_on(p)) return;
  assert(!c.sorted);
  scratch.assign(recent.begin(), recent.end());
  std::sort(scratch.begin(), scratch.end());
  for (size_t i = 0; i < scratch.size();) {
    const int32_t token = scratch[i];
    size_t n = 1;
    while (i + n < scratch.size() && scratch[i + n] == token) ++n;
    i += n;
    if (token < 0 || static_cast<size_t>(token) >= c.size) continue;
    TokenLogit& t = c.data[static_cast<size_t>(token)];
    assert(t.id == token);
    t.logit = penalized(t.logit, n, p);
  }
}

void sort_candidates(Candidates& c) {
  if (c.sorted) return;
  std::sort(c.data.begin(), c.data.begin() + static_cast<ptrdiff_t>(c.size), before);
  c.sorted = true;
}

void apply_top_k(Candidates& c, int k) {
  if (k <= 0) return;
  const size_t n = std::min(static_cast<size_t>(k), c.size);
  if (!c.sorted) {
    const auto first = c.data.begin();
    std::partial_sort(first, first + static_cast<ptrdiff_t>(n),
                      first + static_cast<ptrdiff_t>(c.size), before);
    c.sorted = true;
  }
  c.size = n;
}

void select_top_k(Candidates& c, std::span<const float> logits, int k, std::span<const TokenLogit> changed,
                  std::span<const uint8_t> skip) {
  assert(k >= 1 && logits.size() == skip.size());
  const size_t n = std::min(static_cast<size_t>(k), logits.size());
  // A heap of the best n unchanged tokens so far, the worst on top. Tokens
  // come in id order, so a later token equal in logit to the worst kept
  // never displaces it: only a strictly higher logit does (NaN never).
  std::vector<TokenLogit>& d = c.data;
  d.clear();
  size_t i = 0;
  for (; i < logits.size() && d.size() < n; ++i) {
    if (skip[i] != 0) continue;
    d.push_back({static_cast<int32_t>(i), std::isnan(logits[i]) ? kNegInf : logits[i]});
    std::push_heap(d.begin(), d.end(), before);
  }
  float worst = d.empty() ? kNegInf : d.front().logit;
  auto consider = [&](size_t j) {
    if (!(logits[j] > worst) || skip[j] != 0) return;
    std::pop_heap(d.begin(), d.end(), before);
    d.back() = {static_cast<int32_t>(j), logits[j]};
    std::push_heap(d.begin(), d.end(), before);
    worst = d.front().logit;
  };
  // Most runs of tokens hold none better than the worst kept: their maximum
  // rules them out. It is taken in 8 lanes (elementwise, which the compiler
  // vectorizes; a float max reduction it would not), and NaN never wins it.
  constexpr size_t kRun = 32, kLanes = 8;
  for (; i + kRun <= logits.size(); i += kRun) {
    float lane[kLanes];
    std::fill(lane, lane + kLanes, kNegInf);
    for (size_t j = 0; j < kRun; j += kLanes) {
      for (size_t l = 0; l < kLanes; ++l) lane[l] = logits[i + j + l] > lane[l] ? logits[i + j + l] : lane[l];
    }
    float top = kNegInf;
    for (float v : lane) top = v > top ? v : top;
    if (!(top > worst)) continue;
    for (size_t j = i; j < i + kRun; ++j) consider(j);
  }
  for (; i < logits.size(); ++i) consider(i);
  d.insert(d.end(), changed.begin(), changed.end());
  const size_t kept = std::min(n, d.size());
  std::partial_sort(d.begin(), d.begin() + static_cast<ptrdiff_t>(kept), d.end(), before);
  c.size = kept;
  c.sorted = true;
}

void apply_top_p(Candidates& c, float p) {
  if (p >= 1.0f || c.size == 0) return;
  sort_candidates(c);
  const float max = c.data[0].logit;
  const double sum = exp_sum(c, max);
  double cum = 0.0;
  for (size_t i = 0; i < c.size; ++i) {
    cum += std::exp(static_cast<double>(c.data[i].logit) - max) / sum;
    if (cum >= p) {
      c.size = i + 1;
      return;
    }
  }
}

void apply_min_p(Candidates& c, float p) {
  if (p <= 0.0f || c.size == 0) return;
  const float threshold = max_logit(c) + std::log(p);
  size_t n_kept = 0;  // in-place, order-preserving compaction
  for (size_t i = 0; i < c.size; ++i)
    if (c.data[i].logit >= threshold) c.data[n_kept++] = c.data[i];
  c.size = n_kept;
}

void apply_temperature(Candidates& c, float t) {
  if (c.size == 0) return;
  if (t <= 0.0f) {
    std::swap(c.data[0], c.data[argmax(c)]);
    c.size = 1;
    c.sorted = true;
    return;
  }
  for (TokenLogit& tl : c.live()) tl.logit /= t;
}

size_t argmax(const Candidates& c) {
  assert(c.size > 0);
  if (c.sorted) return 0;
  size_t best = 0;
  for (size_t i = 1; i < c.size; ++i)
    if (before(c.data[i], c.data[best])) best = i;
  return best;
}

size_t draw(const Candidates& c, double u) {
  assert(c.size > 0);
  const float max = max_logit(c);
  assert(std::isfinite(max));
  const double target = u * exp_sum(c, max);
  double cum = 0.0;
  for (size_t i = 0; i < c.size; ++i) {
    cum += std::exp(static_cast<double>(c.data[i].logit) - max);
    if (cum > target) return i;
  }
  return argmax(c);  // rounding left target at the very end: take the likeliest
}

}  // namespace cohort::engine
