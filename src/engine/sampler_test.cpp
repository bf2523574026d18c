// Sampler: parameters and their validation, greedy decoding, determinism per
// seed, the penalty window, and that seeded draws follow the softmax.
#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"

namespace cohort::engine {
namespace sampler_test {

std::vector<float> random_logits(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> l(static_cast<size_t>(n));
  for (float& x : l) x = normal(rng);
  return l;
}

int32_t argmax_of(const std::vector<float>& l) {
  return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
}

SamplingParams plain(float temp, uint32_t seed = 1234) {
  SamplingParams p;
  p.temp = temp;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

std::string validation_error(const SamplingParams& p) {
  try {
    p.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SamplingParams, DefaultsAreLlamaCppsAndValid) {
  const SamplingParams p;
  EXPECT_FLOAT_EQ(p.temp, 0.8f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.top_p, 0.95f);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.repeat_penalty, 1.0f);
  EXPECT_FLOAT_EQ(p.presence_penalty, 0.0f);
  EXPECT_FLOAT_EQ(p.frequency_penalty, 0.0f);
  EXPECT_EQ(p.repeat_last_n, 64);
  EXPECT_EQ(validation_error(p), "");
}

TEST(SamplingParams, ValidateNamesTheBadField) {
  struct Case {
    void (*set)(SamplingParams&);
    const char* field;
  };
  const Case cases[] = {
      {[](SamplingParams& p) { p.top_k = -1; }, "top_k = -1"},
      {[](SamplingParams& p) { p.top_p = 0.0f; }, "top_p = 0"},
      {[](SamplingParams& p) { p.top_p = 1.5f; }, "top_p = 1.5"},
      {[](SamplingParams& p) { p.min_p = -0.1f; }, "min_p"},
      {[](SamplingParams& p) { p.min_p = 2.0f; }, "min_p"},
      {[](SamplingParams& p) { p.temp = std::nanf(""); }, "temp"},
      {[](SamplingParams& p) { p.repeat_penalty = 0.0f; }, "repeat_penalty"},
      {[](SamplingParams& p) { p.presence_penalty = INFINITY; }, "presence_penalty"},
      {[](SamplingParams& p) { p.frequency_penalty = NAN; }, "frequency_penalty"},
      {[](SamplingParams& p) { p.repeat_last_n = -2; }, "repeat_last_n = -2"},
  };
  for (const Case& c : cases) {
    SamplingParams p;
    c.set(p);
    EXPECT_NE(validation_error(p).find(c.field), std::string::npos) << validation_error(p);
    EXPECT_THROW(Sampler(p, 10), Error);
  }
  SamplingParams edge;
  edge.temp = -1.0f;
  edge.top_k = 0;
  edge.top_p = 1.0f;
  edge.min_p = 0.0f;
  edge.repeat_last_n = -1;
  EXPECT_EQ(validation_error(edge), "");
  EXPECT_THROW(Sampler(edge, 10), Error);  // -1 needs the context size
  EXPECT_NO_THROW(Sampler(edge, 10, 4096));
}

TEST(Sampler, GreedyIsArgmax) {
  for (float temp : {0.0f, -1.0f}) {
    Sampler s(plain(temp), 1000);
    for (uint32_t i = 0; i < 20; ++i) {
      const auto l = random_logits(1000, i);
      EXPECT_EQ(s.sample(l), argmax_of(l));
    }
  }
}

TEST(Sampler, LogitBiasBansOrRaisesATokenBeforeTheChain) {
  const auto l = random_logits(1000, 3);
  const int32_t best = argmax_of(l);
  SamplingParams p = plain(0.0f);
  p.logit_bias = {{best, -std::numeric_limits<float>::infinity()}};
  std::vector<float> without = l;
  without[static_cast<size_t>(best)] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(Sampler(p, 1000).sample(l), argmax_of(without));
  const int32_t worst = static_cast<int32_t>(std::min_element(l.begin(), l.end()) - l.begin());
  p.logit_bias = {{worst, 100.0f}};
  EXPECT_EQ(Sampler(p, 1000).sample(l), worst);
  p.temp = 1.0f;  // the whole chain sees the biased logits: top-k keeps the raised token
  p.top_k = 1;
  EXPECT_EQ(Sampler(p, 1000).sample(l), worst);
  p.logit_bias = {{1000, 1.0f}};
  EXPECT_THROW(Sampler(p, 1000), Error);
  p.logit_bias = {{0, std::numeric_limits<float>::infinity()}};
  EXPECT_THROW(Sampler(p, 1000), Error);
}

TEST(Sampler, GreedyDefaultChainIsArgmax) {
  SamplingParams p;  // top_k, top_p, min_p on
  p.temp = 0.0f;
  Sampler s(p, 500);
  const auto l = random_logits(500, 7);
  EXPECT_EQ(s.sample(l), argmax_of(l));
}

TEST(Sampler, TinyTemperatureEqualsGreedy) {
  Sampler s(plain(1e-6f), 1000);
  for (uint32_t i = 0; i < 20; ++i) {
    const auto l = random_logits(1000, 100 + i);
    EXPECT_EQ(s.sample(l), argmax_of(l));
  }
  Sampler tiny(plain(1e-38f), 3);
  EXPECT_EQ(tiny.sample(std::vector<float>{1.0f, 30.0f, 2.0f}), 1);
}

TEST(Sampler, RepeatPenaltyAppliesToTheLastNAcceptedTokens) {
  SamplingParams p = plain(0.0f);
  p.repeat_penalty = 4.0f;
  p.repeat_last_n = 2;
  Sampler s(p, 4);
  const std::vector<float> l{3.0f, 2.0f, 1.0f, 0.5f};
  EXPECT_EQ(s.sample(l), 0);
  s.accept(0);
  EXPECT_EQ(s.sample(l), 1);  // 3 / 4 < 2
  s.accept(1);
  EXPECT_EQ(s.sample(l), 2);  // 0.75, 0.5, 1
  s.accept(2);                // window is now {1, 2}: 0 is no longer penalized
  EXPECT_EQ(s.sample(l), 0);
  s.reset();
  EXPECT_EQ(s.sample(l), 0);
}

TEST(Sampler, SameSeedSameTokensWhateverElseRuns) {
  const SamplingParams p = [] {
    SamplingParams q;
    q.seed = 42;
    q.repeat_penalty = 1.1f;
    return q;
  }();
  Sampler a(p, 300), b(p, 300), other(plain(1.0f, 42), 300);
  std::vector<int32_t> ta, tb;
  for (uint32_t i = 0; i < 200; ++i) {
    const auto l = random_logits(300, i % 7);
    ta.push_back(a.sample(l));
    a.accept(ta.back());
    other.accept(other.sample(l));  // interleaved use of another sampler
    other.accept(other.sample(l));
    tb.push_back(b.sample(l));
    b.accept(tb.back());
  }
  EXPECT_EQ(ta, tb);
  a.reset();
  for (uint32_t i = 0; i < 5; ++i) {
    const int32_t t = a.sample(random_logits(300, i % 7));
    EXPECT_EQ(t, ta[i]);
    a.accept(t);
  }
}

TEST(Sampler, DifferentSeedsDiffer) {
  Sampler a(plain(1.0f, 1), 300), b(plain(1.0f, 2), 300);
  const auto l = random_logits(300, 3);
  int n_same = 0;
  for (int i = 0; i < 100; ++i) n_same += a.sample(l) == b.sample(l) ? 1 : 0;
  EXPECT_LT(n_same, 50);
}

TEST(Sampler, RandomSeedIsDrawnAndReported) {
  SamplingParams p;
  EXPECT_EQ(p.seed, kRandomSeed);
  Sampler s(p, 10);
  EXPECT_NE(s.seed(), kRandomSeed);
}

// Pearson's chi-square of `n` seeded draws against softmax(logits / temp)
// restricted to `allowed` (other tokens must never be drawn).
double chi_square(Sampler& s, const std::vector<float>& logits, float temp,
                  const std::vector<int32_t>& allowed, int n) {
  std::vector<int> count(logits.size(), 0);
  for (int i = 0; i < n; ++i) ++count[static_cast<size_t>(s.sample(logits))];
  double z = 0.0;
  for (int32_t t : allowed)
    z += std::exp(static_cast<double>(logits[static_cast<size_t>(t)]) / temp);
  double chi2 = 0.0;
  int n_seen = 0;
  for (int32_t t : allowed) {
    const double expected =
        n * std::exp(static_cast<double>(logits[static_cast<size_t>(t)]) / temp) / z;
    const double d = count[static_cast<size_t>(t)] - expected;
    chi2 += d * d / expected;
    n_seen += count[static_cast<size_t>(t)];
  }
  EXPECT_EQ(n_seen, n) << "a filtered-out token was drawn";
  return chi2;
}

TEST(Sampler, SeededDrawsFollowTheSoftmax) {
  const std::vector<float> l{1.0f, 0.5f, 0.0f, -0.5f, 2.0f, -1.0f};
  // 5 degrees of freedom: P(chi2 > 20.5) = 0.001. The seed is fixed, so the
  // outcome is too; the bound is what a correct sampler meets for almost any seed.
  Sampler s(plain(1.0f, 7), 6);
  EXPECT_LT(chi_square(s, l, 1.0f, {0, 1, 2, 3, 4, 5}, 60000), 20.5);
  Sampler hot(plain(2.5f, 8), 6);
  EXPECT_LT(chi_square(hot, l, 2.5f, {0, 1, 2, 3, 4, 5}, 60000), 20.5);
}

TEST(Sampler, SeededDrawsFollowTheFilteredSoftmax) {
  const std::vector<float> l{1.0f, 0.5f, 0.0f, -0.5f, 2.0f, -1.0f};
  SamplingParams p = plain(0.7f, 9);
  p.top_k = 3;  // ids 4, 0, 1 remain: 2 degrees of freedom, P(chi2 > 13.8) = 0.001
  Sampler s(p, 6);
  EXPECT_LT(chi_square(s, l, 0.7f, {4, 0, 1}, 60000), 13.8);
}

std::vector<int32_t> kept_after_default_chain(const std::vector<float>& probs) {
  std::vector<float> l;
  for (float p : probs) l.push_back(std::log(p));
  Sampler s(SamplingParams{}, static_cast<int>(l.size()));
  const int32_t t = s.sample(l);
  std::vector<int32_t> kept;
  for (const TokenLogit& c : s.candidates().live()) kept.push_back(c.id);
  EXPECT_NE(std::find(kept.begin(), kept.end(), t), kept.end());
  return kept;
}

TEST(Sampler, DefaultChainAppliesTopPThenMinP) {
  // top_p 0.95 keeps 0.5 + 0.3 + 0.16; min_p 0.05 (threshold 0.025) keeps them.
  EXPECT_EQ(kept_after_default_chain({0.03f, 0.5f, 0.01f, 0.3f, 0.16f}),
            (std::vector<int32_t>{1, 3, 4}));
  // top_p keeps 0.9 + 0.04 + 0.03; min_p (threshold 0.045) then keeps 0.9 only.
  EXPECT_EQ(kept_after_default_chain({0.02f, 0.04f, 0.9f, 0.01f, 0.03f}),
            (std::vector<int32_t>{2}));
}

TEST(Sampler, RejectsLogitsItCannotSampleFrom) {
  Sampler s(plain(1.0f), 3);
  EXPECT_THROW(s.sample(std::vector<float>{1.0f, 2.0f}), Error);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_THROW(s.sample(std::vector<float>{-inf, NAN, -inf}), Error);
  EXPECT_THROW(s.sample(std::vector<float>{0.0f, inf, 1.0f}), Error);
  EXPECT_EQ(s.sample(std::vector<float>{NAN, -inf, 0.0f}), 2);
}

// The chain of sampler.h written out from the filters over every token (the
// way sample() runs where top_k is off): the reference for the one-pass
// selection sample() uses where top_k is on.
class ReferenceChain {
 public:
  ReferenceChain(const SamplingParams& p, int n_vocab) : p_(p), rng_(p.seed), n_vocab_(n_vocab) {}

  int32_t sample(const std::vector<float>& logits) {
    Candidates c;
    c.assign(logits);
    for (const TokenBias& b : p_.logit_bias) c.data[static_cast<size_t>(b.token)].logit += b.bias;
    std::vector<int32_t> scratch;
    const std::vector<int32_t> window(recent_.end() - std::min<ptrdiff_t>(recent_.size(), p_.repeat_last_n),
                                      recent_.end());
    apply_penalties(c, window, {p_.repeat_penalty, p_.frequency_penalty, p_.presence_penalty}, scratch);
    if (p_.temp <= 0.0f) return c.data[argmax(c)].id;
    apply_top_k(c, p_.top_k);
    apply_top_p(c, p_.top_p);
    apply_min_p(c, p_.min_p);
    apply_temperature(c, p_.temp);
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    return c.data[draw(c, u)].id;
  }
  void accept(int32_t t) { recent_.push_back(t); }

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
  int n_vocab_;
  std::vector<int32_t> recent_;
};

TEST(Sampler, TopKSelectionGivesTheTokensOfTheWholeChain) {
  std::mt19937 rng(11);
  const int n_vocab = 500;
  for (int trial = 0; trial < 60; ++trial) {
    SamplingParams p;
    p.seed = 100 + static_cast<uint32_t>(trial);
    p.temp = trial % 5 == 0 ? 0.0f : 0.5f + 0.1f * static_cast<float>(trial % 7);
    p.top_k = std::vector<int>{1, 3, 40, 499, 500, 1024}[static_cast<size_t>(trial) % 6];
    p.top_p = trial % 3 == 0 ? 1.0f : 0.9f;
    p.min_p = trial % 4 == 0 ? 0.0f : 0.05f;
    if (trial % 2 == 1) {  // penalties over a window of 16
      p.repeat_penalty = 1.3f;
      p.frequency_penalty = 0.2f;
      p.presence_penalty = 0.1f;
      p.repeat_last_n = 16;
    }
    if (trial % 3 != 2) {  // biases: a ban, a raise, one token twice
      p.logit_bias = {{7, -std::numeric_limits<float>::infinity()}, {9, 4.0f}, {9, -1.5f}, {11, 2.0f}};
    }
    Sampler s(p, n_vocab);
    ReferenceChain ref(p, n_vocab);
    for (int step = 0; step < 40; ++step) {
      // Coarse values: ties are common, and a raised or penalized token
      // often crosses the k-th place.
      std::vector<float> l(static_cast<size_t>(n_vocab));
      std::uniform_int_distribution<int> grid(-12, 12);
      for (float& x : l) x = 0.5f * static_cast<float>(grid(rng));
      const int32_t want = ref.sample(l);
      const int32_t got = s.sample(l);
      ASSERT_EQ(got, want) << "trial " << trial << " step " << step;
      s.accept(got);
      ref.accept(want);
    }
  }
}

// A row's best logits (as the GPU selects them) decide the same tokens and
// draws as the whole row, for every chain that changes no logit before
// top_k; any other chain asks for the whole row.
TEST(Sampler, TheBestLogitsOfARowSampleAsTheWholeRow) {
  std::mt19937 rng(12);
  const int n_vocab = 700;
  const std::vector<uint8_t> skip(n_vocab, 0);
  for (int trial = 0; trial < 40; ++trial) {
    SamplingParams p;
    p.seed = 300 + static_cast<uint32_t>(trial);
    p.temp = trial % 4 == 0 ? 0.0f : 0.4f + 0.15f * static_cast<float>(trial % 5);
    p.top_k = std::vector<int>{1, 2, 40, 64}[static_cast<size_t>(trial) % 4];
    p.top_p = trial % 3 == 0 ? 1.0f : 0.9f;
    p.min_p = trial % 2 == 0 ? 0.0f : 0.05f;
    Sampler whole(p, n_vocab), best(p, n_vocab);
    const int k = best.best_needed(64);
    ASSERT_EQ(k, p.temp <= 0.0f ? 1 : p.top_k);
    Candidates c;
    for (int step = 0; step < 30; ++step) {
      std::vector<float> l(static_cast<size_t>(n_vocab));
      std::uniform_int_distribution<int> grid(-12, 12);
      for (float& x : l) x = 0.5f * static_cast<float>(grid(rng));
      l[static_cast<size_t>(step * 7)] = std::numeric_limits<float>::quiet_NaN();
      select_top_k(c, l, 64, {}, skip);
      const int32_t want = whole.sample(l);
      const int32_t got = best.sample_best(c.live());
      ASSERT_EQ(got, want) << "trial " << trial << " step " << step;
      whole.accept(want);
      best.accept(got);
    }
  }
  SamplingParams p;
  EXPECT_EQ(Sampler(p, n_vocab).best_needed(64), 40);
  EXPECT_EQ(Sampler(p, n_vocab).best_needed(32), 0);  // top_k 40 > 32
  p.top_k = 0;
  EXPECT_EQ(Sampler(p, n_vocab).best_needed(64), 0);  // every token is a candidate
  p.temp = 0.0f;
  EXPECT_EQ(Sampler(p, n_vocab).best_needed(64), 1);  // greedy
  p.logit_bias = {{3, 1.0f}};
  EXPECT_EQ(Sampler(p, n_vocab).best_needed(64), 0);
  p.logit_bias.clear();
  p.repeat_penalty = 1.1f;
  EXPECT_EQ(Sampler(p, n_vocab).best_needed(64), 0);
  p.repeat_last_n = 0;  // no window: no penalty
  EXPECT_EQ(Sampler(p, n_vocab).best_needed(64), 1);
  Sampler s(SamplingParams{}, n_vocab);
  const std::vector<TokenLogit> eight(8);
  EXPECT_THROW(s.sample_best(eight), Error);  // top_k 40 needs 40
}

}  // namespace sampler_test
}  // namespace cohort::engine
