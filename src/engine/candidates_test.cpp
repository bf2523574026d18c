// Each filter of the sampler chain on hand-made distributions: exactly the
// expected candidates survive.
#include "engine/candidates.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace cohort::engine {
namespace candidates_test {

Candidates from(const std::vector<float>& logits) {
  Candidates c;
  c.assign(logits);
  return c;
}

std::vector<int32_t> ids(const Candidates& c) {
  std::vector<int32_t> out;
  for (const TokenLogit& t : c.live()) out.push_back(t.id);
  return out;
}

std::vector<int32_t> sorted_ids(const Candidates& c) {
  std::vector<int32_t> out = ids(c);
  std::sort(out.begin(), out.end());
  return out;
}

// Probabilities 0.05, 0.5, 0.15, 0.3 (ids 0..3): sorted order is 1, 3, 2, 0.
std::vector<float> four_tokens() {
  return {std::log(0.05f), std::log(0.5f), std::log(0.15f), std::log(0.3f)};
}

TEST(Candidates, AssignKeepsIdOrderAndTurnsNanIntoMinusInfinity) {
  const Candidates c = from({1.0f, std::nanf(""), -2.0f});
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(c.data[1].logit, -std::numeric_limits<float>::infinity());
  EXPECT_FALSE(c.sorted);
}

TEST(Candidates, TopKKeepsTheKHighestSorted) {
  Candidates c = from({1, 5, 3, 4, 2});
  apply_top_k(c, 2);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 3}));
  EXPECT_TRUE(c.sorted);
  apply_top_k(c, 10);
  EXPECT_EQ(c.size, 2u);
}

TEST(Candidates, TopKBreaksTiesByLowerId) {
  Candidates c = from({2, 7, 7, 1, 7});
  apply_top_k(c, 2);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 2}));
}

TEST(Candidates, TopKZeroIsOff) {
  Candidates c = from({1, 5, 3});
  apply_top_k(c, 0);
  EXPECT_EQ(c.size, 3u);
  EXPECT_FALSE(c.sorted);
}

TEST(Candidates, TopPKeepsTheShortestPrefixReachingP) {
  struct Case {
    float p;
    std::vector<int32_t> kept;
  };
  for (const Case& k : {Case{0.4f, {1}}, Case{0.75f, {1, 3}}, Case{0.85f, {1, 3, 2}},
                        Case{0.99f, {1, 3, 2, 0}}}) {
    Candidates c = from(four_tokens());
    apply_top_p(c, k.p);
    EXPECT_EQ(ids(c), k.kept) << "p = " << k.p;
  }
  Candidates c = from(four_tokens());
  apply_top_p(c, 1.0f);
  EXPECT_EQ(c.size, 4u);
}

TEST(Candidates, TopPUsesTheRemainingCandidatesOnly) {
  Candidates c = from(four_tokens());
  apply_top_k(c, 2);       // 0.5 and 0.3 renormalize to 0.625 and 0.375
  apply_top_p(c, 0.6f);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1}));
}

TEST(Candidates, MinPKeepsTokensAtLeastPTimesTheLikeliest) {
  Candidates c = from(four_tokens());
  apply_min_p(c, 0.2f);  // threshold 0.1: drops 0.05
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 2, 3}));  // order kept
  c = from(four_tokens());
  apply_min_p(c, 0.5f);  // threshold 0.25
  EXPECT_EQ(sorted_ids(c), (std::vector<int32_t>{1, 3}));
  c = from(four_tokens());
  apply_min_p(c, 0.0f);
  EXPECT_EQ(c.size, 4u);
  c = from(four_tokens());
  apply_min_p(c, 1.0f);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1}));
}

TEST(Candidates, TemperatureDividesLogitsOrKeepsTheMaximum) {
  Candidates c = from({1.0f, -2.0f, 4.0f});
  apply_temperature(c, 0.5f);
  EXPECT_FLOAT_EQ(c.data[0].logit, 2.0f);
  EXPECT_FLOAT_EQ(c.data[1].logit, -4.0f);
  EXPECT_FLOAT_EQ(c.data[2].logit, 8.0f);
  c = from({1.0f, -2.0f, 4.0f});
  apply_temperature(c, 0.0f);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{2}));
}

TEST(Candidates, PenaltiesFollowLlamaCpp) {
  // repeat divides positive logits and multiplies non-positive ones; then
  // frequency * count + presence is subtracted.
  Candidates c = from({2.0f, -2.0f, 1.0f, 0.0f, 0.5f});
  const std::vector<int32_t> recent{0, 1, 0, 3, 99, -1};  // 99 and -1 are ignored
  std::vector<int32_t> scratch;
  apply_penalties(c, recent, PenaltyParams{2.0f, 0.5f, 0.25f}, scratch);
  EXPECT_FLOAT_EQ(c.data[0].logit, 2.0f / 2 - (2 * 0.5f + 0.25f));
  EXPECT_FLOAT_EQ(c.data[1].logit, -2.0f * 2 - (0.5f + 0.25f));
  EXPECT_FLOAT_EQ(c.data[2].logit, 1.0f);  // not recent
  EXPECT_FLOAT_EQ(c.data[3].logit, 0.0f * 2 - 0.75f);
  EXPECT_FLOAT_EQ(c.data[4].logit, 0.5f);
}

TEST(Candidates, NeutralPenaltiesChangeNothing) {
  Candidates c = from({2.0f, -2.0f});
  std::vector<int32_t> scratch;
  apply_penalties(c, std::vector<int32_t>{0, 1}, PenaltyParams{}, scratch);
  EXPECT_EQ(c.data[0].logit, 2.0f);
  EXPECT_EQ(c.data[1].logit, -2.0f);
}

TEST(Candidates, ArgmaxPrefersTheLowerIdAmongEquals) {
  EXPECT_EQ(argmax(from({1, 3, 0, 3})), 1u);
}

TEST(Candidates, DrawWalksTheCumulativeDistribution) {
  const Candidates c = from(four_tokens());  // id order: 0.05, 0.5, 0.15, 0.3
  EXPECT_EQ(draw(c, 0.0), 0u);
  EXPECT_EQ(draw(c, 0.04), 0u);
  EXPECT_EQ(draw(c, 0.06), 1u);
  EXPECT_EQ(draw(c, 0.56), 2u);
  EXPECT_EQ(draw(c, 0.71), 3u);
  EXPECT_EQ(draw(c, 0.999999), 3u);
  const Candidates masked = from({-std::numeric_limits<float>::infinity(), 0.0f});
  EXPECT_EQ(draw(masked, 0.0), 1u);
}

// The reference of select_top_k: every token copied, the changes written
// over it, then apply_top_k.
Candidates top_k_of_all(const std::vector<float>& logits, int k, const std::vector<TokenLogit>& changed) {
  Candidates c = from(logits);
  for (const TokenLogit& t : changed) c.data[static_cast<size_t>(t.id)].logit = t.logit;
  apply_top_k(c, k);
  return c;
}

// Random logits with many ties (values on a coarse grid), NaN and -inf.
std::vector<float> tied_logits(size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> grid(-20, 20), kind(0, 49);
  std::vector<float> l(n);
  for (float& x : l) {
    const int k = kind(rng);
    x = k == 0 ? std::nanf("") : k == 1 ? -std::numeric_limits<float>::infinity() : 0.25f * static_cast<float>(grid(rng));
  }
  return l;
}

TEST(Candidates, SelectTopKEqualsTopKOfEveryTokenWithTheChanges) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const size_t n = 1 + rng() % 300;
    const std::vector<float> logits = tied_logits(n, rng);
    // A few distinct changed tokens: raised, lowered, banned.
    std::vector<TokenLogit> changed;
    std::vector<uint8_t> skip(n, 0);
    for (size_t i = 0; i < rng() % 6; ++i) {
      const auto id = static_cast<int32_t>(rng() % n);
      if (skip[static_cast<size_t>(id)] != 0) continue;
      skip[static_cast<size_t>(id)] = 1;
      const float delta[] = {3.0f, -2.0f, -std::numeric_limits<float>::infinity(), 0.0f};
      const float raw = std::isnan(logits[static_cast<size_t>(id)]) ? -std::numeric_limits<float>::infinity()
                                                                   : logits[static_cast<size_t>(id)];
      changed.push_back({id, raw + delta[rng() % 4]});
    }
    for (int k : {1, 2, 5, 40, 1000}) {
      Candidates got;
      select_top_k(got, logits, k, changed, skip);
      const Candidates want = top_k_of_all(logits, k, changed);
      ASSERT_EQ(ids(got), ids(want)) << "trial " << trial << " k " << k;
      for (size_t i = 0; i < got.size; ++i) {
        ASSERT_EQ(got.data[i].logit, want.data[i].logit) << "trial " << trial << " k " << k;
      }
      ASSERT_TRUE(got.sorted);
    }
  }
}

TEST(Candidates, SelectTopKSkipsEveryTokenMarked) {
  const std::vector<float> logits = {5.0f, 4.0f, 3.0f};
  const std::vector<uint8_t> skip = {1, 1, 1};
  Candidates c;
  select_top_k(c, logits, 2, {}, skip);
  EXPECT_EQ(c.size, 0u);
  const std::vector<TokenLogit> changed = {{1, 0.5f}};
  select_top_k(c, logits, 2, changed, skip);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1}));
}

}  // namespace candidates_test
}  // namespace cohort::engine
