// Each filter of the sampler chain on hand-made distributions: exactly the
// expected candidates survive.
#include "engine/candidates.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace cohort::engine {
namespace {

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

}  // namespace
}  // namespace cohort::engine
