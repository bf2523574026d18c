// bench-serve workloads: arrival times (fixed, Poisson, all at once), length
// distributions, the random workload, made-up prompts, and scenario files
// (good ones, and bad ones refused with a message naming the fault).
#include "tools/serve_workload.h"

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/error.h"

namespace cohort::tools {
namespace serve_workload_test {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ArrivalTimes, FixedRateIsEvenlySpacedFromZero) {
  std::mt19937_64 rng(1);
  const std::vector<double> at = arrival_times(5, 4.0, Arrival::fixed, rng);
  ASSERT_EQ(at.size(), 5u);
  for (size_t i = 0; i < at.size(); ++i) EXPECT_NEAR(at[i], 0.25 * static_cast<double>(i), 1e-12);
}

TEST(ArrivalTimes, InfiniteRateSendsEverythingAtZero) {
  std::mt19937_64 rng(1);
  for (Arrival a : {Arrival::fixed, Arrival::poisson}) {
    for (double t : arrival_times(4, kInf, a, rng)) EXPECT_EQ(t, 0);
  }
}

TEST(ArrivalTimes, PoissonIsRepeatableForASeedAndHasExponentialGaps) {
  std::mt19937_64 a(42), b(42), c(43);
  const std::vector<double> x = arrival_times(20001, 2.0, Arrival::poisson, a);
  EXPECT_EQ(x, arrival_times(20001, 2.0, Arrival::poisson, b));
  EXPECT_NE(x, arrival_times(20001, 2.0, Arrival::poisson, c));
  EXPECT_EQ(x[0], 0);
  double sum = 0, sum_sq = 0;
  for (size_t i = 1; i < x.size(); ++i) {
    const double gap = x[i] - x[i - 1];
    ASSERT_GE(gap, 0);
    sum += gap;
    sum_sq += gap * gap;
  }
  const double n = static_cast<double>(x.size() - 1);
  const double mean = sum / n, sd = std::sqrt(sum_sq / n - mean * mean);
  EXPECT_NEAR(mean, 0.5, 0.5 * 0.03);  // 1 / rate
  EXPECT_NEAR(sd, 0.5, 0.5 * 0.05);    // an exponential's deviation equals its mean
}

TEST(SampleLengths, UniformOverTheRangeRatio) {
  std::mt19937_64 rng(7);
  const std::vector<int> v = sample_lengths(20000, 100, 0.5, rng);
  std::set<int> seen(v.begin(), v.end());
  EXPECT_EQ(*seen.begin(), 50);
  EXPECT_EQ(*seen.rbegin(), 150);
  EXPECT_EQ(seen.size(), 101u);  // every integer in [50, 150] drawn
  double sum = 0;
  for (int x : v) sum += x;
  EXPECT_NEAR(sum / static_cast<double>(v.size()), 100, 1.0);
}

TEST(SampleLengths, RatioZeroIsConstantAndLengthsStayPositive) {
  std::mt19937_64 rng(7);
  for (int x : sample_lengths(50, 37, 0.0, rng)) EXPECT_EQ(x, 37);
  for (int x : sample_lengths(50, 1, 0.9, rng)) EXPECT_EQ(x, 1);
}

TEST(RandomWorkload, IsRepeatableForASeed) {
  RandomWorkload w;
  w.num_prompts = 8;
  w.request_rate = 3;
  w.seed = 5;
  w.input_len = 64;
  w.output_len = 16;
  w.range_ratio = 0.25;
  const std::vector<RequestSpec> a = random_workload(w), b = random_workload(w);
  ASSERT_EQ(a.size(), 8u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, fmt::format("r{}", i));
    EXPECT_EQ(a[i].at_s, b[i].at_s);
    EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
    EXPECT_GE(a[i].prompt_tokens, 48);
    EXPECT_LE(a[i].prompt_tokens, 80);
    EXPECT_GE(a[i].max_tokens, 12);
    EXPECT_LE(a[i].max_tokens, 20);
    EXPECT_TRUE(a[i].prompt.empty());
  }
}

TEST(RandomWorkload, BadSettingsNameTheFlag) {
  RandomWorkload w;
  w.request_rate = kInf;
  w.num_prompts = 0;
  EXPECT_THROW(
      try { validate(w); } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--num-prompts"), std::string::npos);
        throw;
      },
      Error);
  w.num_prompts = 1;
  w.range_ratio = 1.0;
  EXPECT_THROW(validate(w), Error);
  w.range_ratio = 0;
  w.request_rate = 0;
  EXPECT_THROW(validate(w), Error);
}

TEST(ParseArrival, KnowsFixedAndPoisson) {
  EXPECT_EQ(parse_arrival("fixed"), Arrival::fixed);
  EXPECT_EQ(parse_arrival("poisson"), Arrival::poisson);
  EXPECT_THROW(parse_arrival("gamma"), Error);
}

TEST(PromptMaker, UncalibratedUsesOneWordPerToken) {
  PromptMaker m;
  std::mt19937_64 rng(3);
  const std::string p = m.make(5, rng);
  std::istringstream words(p);
  std::string w;
  int n = 0;
  while (words >> w) ++n;
  EXPECT_EQ(n, 5);
  EXPECT_EQ(p.front(), ' ');  // every word after a space: the same token as mid-text
}

TEST(PromptMaker, CalibratedLeavesRoomForAddedTokensAndUsesOnlyKeptWords) {
  PromptMaker m;
  m.calibrate({"alpha", "beta"}, 1);
  std::mt19937_64 a(9), b(9);
  const std::string p = m.make(6, a);
  EXPECT_EQ(p, m.make(6, b));
  std::istringstream words(p);
  std::string w;
  int n = 0;
  while (words >> w) {
    EXPECT_TRUE(w == "alpha" || w == "beta") << w;
    ++n;
  }
  EXPECT_EQ(n, 5);
}

TEST(Scenario, ParsesAListSortedByArrival) {
  const auto specs = parse_scenario(
      R"([{"name": "late", "at": 2.0, "prompt_tokens": 2000, "max_tokens": 4},
          {"at": 0, "prompt": "Hello", "max_tokens": 200}])",
      "s.json");
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "r1");
  EXPECT_EQ(specs[0].prompt, "Hello");
  EXPECT_EQ(specs[0].max_tokens, 200);
  EXPECT_EQ(specs[1].name, "late");
  EXPECT_DOUBLE_EQ(specs[1].at_s, 2.0);
  EXPECT_EQ(specs[1].prompt_tokens, 2000);
  EXPECT_TRUE(specs[1].prompt.empty());
}

TEST(Scenario, ParsesAnObjectWithADescription) {
  const auto specs =
      parse_scenario(R"({"description": "x", "requests": [{"at": 0, "prompt_tokens": 5, "max_tokens": 1}]})", "s");
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].prompt_tokens, 5);
}

// The error message of parsing `text`, or "" if it parsed.
std::string scenario_error(const std::string& text) {
  try {
    parse_scenario(text, "bad.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Scenario, BadFilesAreRefusedWithAMessageNamingTheFault) {
  auto has = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos;
  };
  std::string e = scenario_error("[{");
  EXPECT_TRUE(has(e, "bad.json") && has(e, "not valid JSON")) << e;
  e = scenario_error("[]");
  EXPECT_TRUE(has(e, "empty")) << e;
  e = scenario_error(R"({"a": 1})");
  EXPECT_TRUE(has(e, "unknown top-level field 'a'")) << e;
  e = scenario_error("42");
  EXPECT_TRUE(has(e, "expected a list")) << e;
  e = scenario_error(R"([{"prompt_tokens": 5, "max_tokens": 1}])");
  EXPECT_TRUE(has(e, "request 0") && has(e, "'at'")) << e;
  e = scenario_error(R"([{"at": 0, "prompt_tokens": 5, "max_tokens": 1},
                         {"at": -1, "prompt_tokens": 5, "max_tokens": 1}])");
  EXPECT_TRUE(has(e, "request 1") && has(e, "'at' must be >= 0")) << e;
  e = scenario_error(R"([{"at": 0, "prompt": "x", "prompt_tokens": 5, "max_tokens": 1}])");
  EXPECT_TRUE(has(e, "exactly one of 'prompt_tokens' and 'prompt'")) << e;
  e = scenario_error(R"([{"at": 0, "max_tokens": 1}])");
  EXPECT_TRUE(has(e, "exactly one of")) << e;
  e = scenario_error(R"([{"at": 0, "prompt_tokens": 5}])");
  EXPECT_TRUE(has(e, "'max_tokens' is required")) << e;
  e = scenario_error(R"([{"at": 0, "prompt_tokens": 5, "max_tokens": 0}])");
  EXPECT_TRUE(has(e, "'max_tokens' must be between 1")) << e;
  e = scenario_error(R"([{"at": 0, "prompt_tokens": "5", "max_tokens": 1}])");
  EXPECT_TRUE(has(e, "'prompt_tokens' must be an integer")) << e;
  e = scenario_error(R"([{"at": 0, "prompt_tokens": 5, "max_token": 1}])");
  EXPECT_TRUE(has(e, "unknown field 'max_token'")) << e;
  e = scenario_error(R"([{"at": "soon", "prompt_tokens": 5, "max_tokens": 1}])");
  EXPECT_TRUE(has(e, "'at' must be a number")) << e;
  e = scenario_error(R"([[1]])");
  EXPECT_TRUE(has(e, "request 0: must be an object")) << e;
}

TEST(Scenario, MissingFileIsAnError) {
  EXPECT_THROW(load_scenario("/nonexistent/scenario.json"), Error);
}

}  // namespace serve_workload_test
}  // namespace cohort::tools
