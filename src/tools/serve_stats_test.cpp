// bench-serve statistics: percentiles as numpy computes them (linear
// interpolation), interval unions, and every figure of compute_stats on a
// small hand-computed set of timelines.
#include "tools/serve_stats.h"

#include <gtest/gtest.h>

namespace cohort::tools {
namespace serve_stats_test {

TEST(Percentile, InterpolatesLinearlyBetweenClosestRanks) {
  const std::vector<double> v = {1, 2, 3, 4};  // numpy.percentile(v, [50, 90, 99])
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_NEAR(percentile(v, 90), 3.7, 1e-12);
  EXPECT_NEAR(percentile(v, 99), 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 4);
  const std::vector<double> w = {10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(percentile(w, 50), 30);
  EXPECT_NEAR(percentile(w, 90), 46, 1e-12);
  EXPECT_NEAR(percentile(w, 99), 49.6, 1e-12);
}

TEST(Percentile, OfOneValueIsThatValue) {
  EXPECT_DOUBLE_EQ(percentile({7}, 50), 7);
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
}

TEST(Summarize, SortsAndSummarises) {
  const Summary s = summarize({50, 10, 40, 20, 30});
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.mean, 30);
  EXPECT_DOUBLE_EQ(s.p50, 30);
  EXPECT_NEAR(s.p90, 46, 1e-12);
  EXPECT_NEAR(s.p99, 49.6, 1e-12);
  EXPECT_DOUBLE_EQ(s.max, 50);
}

TEST(Summarize, OfNothingIsAllZero) {
  const Summary s = summarize({});
  EXPECT_EQ(s.n, 0u);
  EXPECT_EQ(s.mean, 0);
  EXPECT_EQ(s.max, 0);
}

TEST(CoveredTime, IsTheLengthOfTheUnion) {
  EXPECT_DOUBLE_EQ(covered_time({}), 0);
  EXPECT_DOUBLE_EQ(covered_time({{0, 1}, {2, 3}}), 2);
  EXPECT_DOUBLE_EQ(covered_time({{0, 2}, {1, 3}}), 3);
  EXPECT_DOUBLE_EQ(covered_time({{1, 3}, {0, 2}, {5, 6}, {5.5, 5.7}}), 4);
  EXPECT_DOUBLE_EQ(covered_time({{0, 1}, {1, 2}}), 2);
  EXPECT_DOUBLE_EQ(covered_time({{2, 2}, {3, 1}}), 0);  // empty and reversed ones count for nothing
}

RequestTimeline completed(double send, std::vector<double> chunks, double end, int prompt, int cached) {
  RequestTimeline t;
  t.send_s = send;
  t.chunk_s = std::move(chunks);
  t.chunk_tokens.assign(t.chunk_s.size(), 1);
  t.end_s = end;
  t.prompt_tokens = prompt;
  t.cached_tokens = cached;
  t.completion_tokens = static_cast<int>(t.chunk_s.size());
  t.ok = true;
  return t;
}

TEST(ComputeStats, HandComputedFigures) {
  RequestTimeline failed;
  failed.send_s = 0.2;
  failed.end_s = 0.3;
  failed.error = "HTTP status 500";
  const std::vector<RequestTimeline> runs = {completed(0.0, {1.0, 1.1, 1.3}, 1.35, 100, 0), failed,
                                             completed(0.5, {2.0, 2.5}, 2.6, 50, 10)};
  const ServeStats s = compute_stats(runs);
  EXPECT_EQ(s.n_requests, 3);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 1);
  EXPECT_DOUBLE_EQ(s.makespan_s, 2.6);
  EXPECT_NEAR(s.request_throughput, 2 / 2.6, 1e-12);
  EXPECT_EQ(s.input_tokens, 150);
  EXPECT_EQ(s.cached_tokens, 10);
  EXPECT_EQ(s.output_tokens, 5);
  EXPECT_NEAR(s.output_tok_s, 5 / 2.6, 1e-12);
  // TTFT 1000 and 1500 ms
  EXPECT_NEAR(s.ttft_ms.mean, 1250, 1e-9);
  EXPECT_NEAR(s.ttft_ms.p50, 1250, 1e-9);
  EXPECT_NEAR(s.ttft_ms.max, 1500, 1e-9);
  // TPOT: (1.3 - 1.0) / 2 = 150 ms and 0.5 / 1 = 500 ms
  EXPECT_EQ(s.tpot_ms.n, 2u);
  EXPECT_NEAR(s.tpot_ms.mean, 325, 1e-9);
  // ITL: 100, 200 (first request) and 500 ms (second), pooled
  EXPECT_EQ(s.itl_ms.n, 3u);
  EXPECT_NEAR(s.itl_ms.p50, 200, 1e-9);
  EXPECT_NEAR(s.itl_ms.mean, 800.0 / 3, 1e-9);
  EXPECT_NEAR(s.itl_ms.max, 500, 1e-9);
  EXPECT_NEAR(s.e2e_ms.max, 2100, 1e-9);
  // PP: 140 uncached tokens over [0, 2.0]; TG: 3 tokens after the first over 0.3 + 0.5 s
  EXPECT_NEAR(s.pp_busy_s, 2.0, 1e-12);
  EXPECT_NEAR(s.pp_tok_s, 70, 1e-9);
  EXPECT_NEAR(s.tg_busy_s, 0.8, 1e-12);
  EXPECT_NEAR(s.tg_tok_s, 3.75, 1e-9);
  EXPECT_FALSE(s.queue_ms.has_value());
}

TEST(ComputeStats, QueueWaitOnlyWhenTheServerReportsIt) {
  RequestTimeline a = completed(0, {1}, 1, 10, 0), b = completed(0, {2}, 2, 10, 0);
  a.server_queue_ms = 5;
  b.server_queue_ms = 15;
  const ServeStats s = compute_stats({a, b});
  ASSERT_TRUE(s.queue_ms.has_value());
  EXPECT_DOUBLE_EQ(s.queue_ms->mean, 10);
  EXPECT_EQ(s.tpot_ms.n, 0u);  // one token each: no time per output token
}

TEST(ComputeStats, AllFailedGivesZeroRatesNotNaN) {
  RequestTimeline f;
  f.send_s = 0;
  f.end_s = 0;
  const ServeStats s = compute_stats({f});
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.request_throughput, 0);
  EXPECT_EQ(s.pp_tok_s, 0);
  EXPECT_EQ(s.ttft_ms.n, 0u);
}

}  // namespace serve_stats_test
}  // namespace cohort::tools
