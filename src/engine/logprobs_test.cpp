// logprobs: log-softmax of the original logits and the top-n alternatives.
#include "engine/logprobs.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace cohort::engine {
namespace logprobs_test {

TEST(Logprobs, ChosenTokenGetsItsLogSoftmax) {
  const std::vector<float> l{1.0f, 2.0f, 3.0f};
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(log_sum_exp(l), lse, 1e-12);
  std::vector<TokenLogprob> top;
  EXPECT_NEAR(compute_logprobs(l, 0, 0, top), 1.0 - lse, 1e-6);
  EXPECT_TRUE(top.empty());
}

TEST(Logprobs, TopNIsMostLikelyFirstWithTiesByLowerId) {
  const std::vector<float> l{0.5f, 3.0f, -1.0f, 3.0f, 2.0f, 0.0f};
  std::vector<TokenLogprob> top;
  const float chosen = compute_logprobs(l, 4, 3, top);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].token, 1);
  EXPECT_EQ(top[1].token, 3);
  EXPECT_EQ(top[2].token, 4);
  EXPECT_FLOAT_EQ(top[2].logprob, chosen);
  EXPECT_FLOAT_EQ(top[0].logprob, top[1].logprob);
  EXPECT_NEAR(top[0].logprob - chosen, 1.0f, 1e-6);
}

TEST(Logprobs, AllTokensSumToOne) {
  std::vector<float> l(50);
  for (size_t i = 0; i < l.size(); ++i) l[i] = std::sin(static_cast<float>(i)) * 5.0f;
  std::vector<TokenLogprob> top;
  compute_logprobs(l, 0, 100, top);  // n_top larger than the vocabulary
  ASSERT_EQ(top.size(), l.size());
  double sum = 0.0;
  for (size_t i = 0; i < top.size(); ++i) {
    sum += std::exp(static_cast<double>(top[i].logprob));
    if (i > 0) {
      EXPECT_GE(top[i - 1].logprob, top[i].logprob);
    }
  }
  EXPECT_NEAR(sum, 1.0, 1e-5);
}

TEST(Logprobs, MaskedAndNanTokensHaveMinusInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> l{0.0f, -inf, NAN, 0.0f};
  std::vector<TokenLogprob> top;
  EXPECT_EQ(compute_logprobs(l, 2, 4, top), -inf);
  EXPECT_NEAR(top[0].logprob, std::log(0.5f), 1e-6);
  EXPECT_EQ(top[3].logprob, -inf);
}

TEST(Logprobs, ReusesTheOutputBuffer) {
  std::vector<TokenLogprob> top;
  top.reserve(8);
  const TokenLogprob* data = top.data();
  compute_logprobs(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}, 0, 8, top);
  EXPECT_EQ(top.data(), data);
  EXPECT_EQ(top[0].token, 8);
}

}  // namespace logprobs_test
}  // namespace cohort::engine
