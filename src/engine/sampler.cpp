#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"

namespace cohort::engine {
namespace {

constexpr float kPosInf = std::numeric_limits<float>::infinity();

template <typename T>
void require(bool ok, const char* field, T value, const char* rule) {
  if (!ok) fail("invalid sampling parameter {} = {}: must be {}", field, value, rule);
}

}  // namespace

void SamplingParams::validate() const {
  require(std::isfinite(temp), "temp", temp, "a finite number");
  require(top_k >= 0, "top_k", top_k, ">= 0 (0 disables it)");
  require(top_p > 0.0f && top_p <= 1.0f, "top_p", top_p, "in (0, 1]");
  require(min_p >= 0.0f && min_p <= 1.0f, "min_p", min_p, "in [0, 1]");
  require(std::isfinite(repeat_penalty) && repeat_penalty > 0.0f, "repeat_penalty",
          repeat_penalty, "> 0 (1 disables it)");
  require(std::isfinite(presence_penalty), "presence_penalty", presence_penalty,
          "a finite number");
  require(std::isfinite(frequency_penalty), "frequency_penalty", frequency_penalty,
          "a finite number");
  require(repeat_last_n >= -1, "repeat_last_n", repeat_last_n,
          ">= -1 (0 disables it, -1 means the context size)");
  for (const TokenBias& b : logit_bias) {
    require(!std::isnan(b.bias) && b.bias != kPosInf, "logit_bias", b.bias, "a number or -inf");
  }
}

Sampler::Sampler(const SamplingParams& params, int n_vocab, int n_ctx)
    : params_(params), n_vocab_(n_vocab) {
  params_.validate();
  if (n_vocab < 1) fail("sampler: n_vocab = {} must be >= 1", n_vocab);
  for (const TokenBias& b : params_.logit_bias) {
    if (b.token < 0 || b.token >= n_vocab) {
      fail("invalid sampling parameter logit_bias: token id {} is outside the vocabulary of {}", b.token, n_vocab);
    }
  }
  if (params_.grammar) {
    if (params_.grammar->n_vocab() > n_vocab)
      fail("sampler: the grammar's vocabulary of {} is larger than the {} logits", params_.grammar->n_vocab(), n_vocab);
    grammar_.emplace(params_.grammar);
    masked_.resize(static_cast<size_t>(n_vocab));
  }
  if (params_.repeat_last_n == -1 && n_ctx < 1)
    fail("sampler: repeat_last_n = -1 needs the context size, got n_ctx = {}", n_ctx);
  window_ = static_cast<size_t>(params_.repeat_last_n == -1 ? n_ctx : params_.repeat_last_n);
  seed_ = params_.seed == kRandomSeed ? std::random_device{}() : params_.seed;
  candidates_.data.reserve(static_cast<size_t>(n_vocab));
  skip_.assign(static_cast<size_t>(n_vocab), 0);
  recent_.reserve(window_);
  penalty_scratch_.reserve(window_);
  reset();
}

void Sampler::reset() {
  rng_.seed(seed_);
  recent_.clear();
  recent_next_ = 0;
  candidates_.size = 0;
  if (grammar_) grammar_->reset();
}

double Sampler::next_uniform() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

void Sampler::accept(int32_t token) {
  if (grammar_ && !grammar_->accept(token)) fail("sampler: the grammar does not allow token {} here", token);
  remember(token);
}

void Sampler::accept_prompt(int32_t token) { remember(token); }

void Sampler::remember(int32_t token) {
  if (window_ == 0) return;
  if (recent_.size() < window_) {
    recent_.push_back(token);
    return;
  }
  recent_[recent_next_] = token;
  recent_next_ = (recent_next_ + 1) % window_;
}

// The tokens the chain changes before top_k (logit_bias, then penalties),
// with their changed logits, and `skip_` marking them.
void Sampler::collect_changed(std::span<const float> logits) {
  changed_.clear();
  // A token already listed can only be one of the first `n_listed` (the
  // penalties' tokens are distinct).
  size_t n_listed = 0;
  auto entry = [&](int32_t token) -> float& {
    if (skip_[static_cast<size_t>(token)] == 0) {
      skip_[static_cast<size_t>(token)] = 1;
      const float raw = logits[static_cast<size_t>(token)];
      changed_.push_back({token, std::isnan(raw) ? -kPosInf : raw});
      return changed_.back().logit;
    }
    return std::find_if(changed_.begin(), changed_.begin() + static_cast<ptrdiff_t>(n_listed),
                        [token](const TokenLogit& t) { return t.id == token; })->logit;
  };
  for (const TokenBias& b : params_.logit_bias) {
    n_listed = changed_.size();  // this bias's token may be any listed so far
    entry(b.token) += b.bias;
  }
  n_listed = changed_.size();
  const PenaltyParams penalties{params_.repeat_penalty, params_.frequency_penalty, params_.presence_penalty};
  if (recent_.empty() || !penalties_on(penalties)) return;
  penalty_scratch_.assign(recent_.begin(), recent_.end());
  std::sort(penalty_scratch_.begin(), penalty_scratch_.end());
  for (size_t i = 0; i < penalty_scratch_.size();) {
    const int32_t token = penalty_scratch_[i];
    size_t n = 1;
    while (i + n < penalty_scratch_.size() && penalty_scratch_[i + n] == token) ++n;
    i += n;
    if (token < 0 || token >= n_vocab_) continue;
    float& logit = entry(token);
    logit = penalized(logit, n, penalties);
  }
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (logits.size() != static_cast<size_t>(n_vocab_))
    fail("sampler: got {} logits for a vocabulary of {}", logits.size(), n_vocab_);
  if (grammar_) {
    if (grammar_->terminated()) fail("sampler: the grammar is complete and ended; nothing may follow");
    masked_.assign(logits.begin(), logits.end());
    grammar_->apply(masked_);
    logits = masked_;
  }
  Candidates& c = candidates_;
  const int k = params_.temp <= 0.0f ? 1 : params_.top_k;
  if (k >= 1 && k <= kMaxSelectedTopK) {
    // Only the k best matter to the rest of the chain: one pass picks them.
    collect_changed(logits);
    select_top_k(c, logits, k, changed_, skip_);
    for (const TokenLogit& t : changed_) skip_[static_cast<size_t>(t.id)] = 0;
  } else {
    c.assign(logits);
    for (const TokenBias& b : params_.logit_bias) c.data[static_cast<size_t>(b.token)].logit += b.bias;
    const PenaltyParams penalties{params_.repeat_penalty, params_.frequency_penalty,
                                  params_.presence_penalty};
    apply_penalties(c, recent(), penalties, penalty_scratch_);
  }
  return finish();
}

int Sampler::best_needed(int cap) const {
  const PenaltyParams penalties{params_.repeat_penalty, params_.frequency_penalty, params_.presence_penalty};
  if (!params_.logit_bias.empty() || (window_ > 0 && penalties_on(penalties))) return 0;
  const int k = params_.temp <= 0.0f ? 1 : params_.top_k;
  return k >= 1 && k <= cap && k <= n_vocab_ ? k : 0;
}

int32_t Sampler::sample_best(std::span<const TokenLogit> best) {
  const int k = best_needed(static_cast<int>(best.size()));
  if (k == 0) fail("sampler: {} best logits do not decide this request's sampling", best.size());
  if (grammar_) {
    if (grammar_->terminated()) fail("sampler: the grammar is complete and ended; nothing may follow");
    for (int i = 0; i < k; ++i) {
      const TokenLogit& t = best[static_cast<size_t>(i)];
      if (std::isfinite(t.logit) && !grammar_->allows(t.id))
        fail("sampler: best logit of token {} is one the grammar does not allow (the row was not masked)", t.id);
    }
  }
  Candidates& c = candidates_;
  c.data.assign(best.begin(), best.begin() + k);
  c.size = static_cast<size_t>(k);
  c.sorted = true;
  return finish();
}

void Sampler::write_mask(std::span<uint32_t> words) {
  if (grammar_) {
    grammar_->write_mask(words);
  } else {
    std::fill(words.begin(), words.end(), 0xFFFFFFFFu);
  }
}

// The chain after top_k, on candidates_.
int32_t Sampler::finish() {
  Candidates& c = candidates_;
  const size_t best = argmax(c);
  if (!std::isfinite(c.data[best].logit))
    fail("sampler: no finite maximum among {} logits (max = {})", n_vocab_, c.data[best].logit);
  if (params_.temp <= 0.0f) {
    const int32_t token = c.data[best].id;
    c.size = 0;
    return token;
  }
  apply_top_k(c, params_.top_k);
  apply_top_p(c, params_.top_p);
  apply_min_p(c, params_.min_p);
  apply_temperature(c, params_.temp);
  // A tiny temperature can overflow the best logit to +inf: that is greedy.
  const size_t top = argmax(c);
  if (!std::isfinite(c.data[top].logit)) return c.data[top].id;
  return c.data[draw(c, next_uniform())].id;
}

}  // namespace cohort::engine
