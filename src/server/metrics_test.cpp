// /metrics text: parsed back line by line as a Prometheus scraper would:
// every sample belongs to a declared family, histograms are cumulative and
// end at +Inf with _count equal to it, the phase gauge marks one phase.
#include "server/metrics.h"

#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace cohort::server {
namespace metrics_test {

struct Exposition {
  std::map<std::string, std::string> types;   // family -> counter | gauge | histogram
  std::map<std::string, double> samples;      // name{labels} -> value
};

// Parses the text exposition format (the subset the server writes).
Exposition parse(const std::string& text) {
  Exposition e;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    EXPECT_FALSE(line.empty());
    if (line.rfind("# TYPE ", 0) == 0) {
      const size_t sp = line.find(' ', 7);
      e.types[line.substr(7, sp - 7)] = line.substr(sp + 1);
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    const size_t sp = line.rfind(' ');
    EXPECT_NE(sp, std::string::npos) << line;
    const std::string name = line.substr(0, sp);
    const std::string family = name.substr(0, name.find('{'));
    std::string base = family;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (base.size() > s.size() && base.compare(base.size() - s.size(), s.size(), s) == 0 &&
          e.types.count(base.substr(0, base.size() - s.size()))) {
        base = base.substr(0, base.size() - s.size());
      }
    }
    EXPECT_TRUE(e.types.count(base)) << "sample without TYPE: " << line;
    EXPECT_TRUE(base.rfind("cohort:", 0) == 0 || base.rfind("llamacpp:", 0) == 0) << line;
    e.samples[name] = std::stod(line.substr(sp + 1));
  }
  return e;
}

ServiceStats stats() {
  ServiceStats s;
  s.prompt_tokens_total = 1234;
  s.generated_tokens_total = 567;
  s.requests_total = 8;
  s.requests_processing = 2;
  s.requests_queued = 3;
  s.requests_blocked_by_phase = 1;
  s.phase = "prefill";
  s.cohort_size = 2;
  s.n_slots = 4;
  s.latency_buckets = {0.05, 0.5, 5};
  s.ttft_counts = {1, 4, 6, 7};
  s.ttft_sum = 3.25;
  s.itl_counts = {10, 20, 20, 20};
  s.itl_sum = 0.75;
  return s;
}

TEST(Metrics, CountersAndGaugesParseBack) {
  const Exposition e = parse(format_metrics(stats()));
  EXPECT_EQ(e.types.at("cohort:prompt_tokens_total"), "counter");
  EXPECT_EQ(e.types.at("cohort:tokens_predicted_total"), "counter");
  EXPECT_EQ(e.types.at("cohort:requests_total"), "counter");
  EXPECT_EQ(e.types.at("cohort:requests_processing"), "gauge");
  EXPECT_EQ(e.samples.at("cohort:prompt_tokens_total"), 1234);
  EXPECT_EQ(e.samples.at("cohort:tokens_predicted_total"), 567);
  EXPECT_EQ(e.samples.at("cohort:requests_total"), 8);
  EXPECT_EQ(e.samples.at("cohort:requests_processing"), 2);
  EXPECT_EQ(e.samples.at("cohort:requests_deferred"), 3);
  EXPECT_EQ(e.samples.at("cohort:requests_blocked_by_phase"), 1);
  EXPECT_EQ(e.samples.at("cohort:cohort_size"), 2);
  EXPECT_EQ(e.samples.at("cohort:n_slots"), 4);
}

TEST(Metrics, LlamaServersNamesAndMeaningsBesideOurs) {
  ServiceStats s = stats();
  s.prompt_tokens_cached_total = 32;
  s.prompt_seconds_total = 2.0;
  s.prompt_tokens_timed = 500;
  s.predicted_seconds_total = 4.0;
  s.predicted_tokens_timed = 100;
  s.n_decode_total = 40;
  s.n_busy_slots_total = 90;
  s.n_tokens_max = 777;
  const Exposition e = parse(format_metrics(s));
  EXPECT_EQ(e.types.at("llamacpp:prompt_tokens_total"), "counter");
  EXPECT_EQ(e.samples.at("llamacpp:prompt_tokens_total"), 1234);
  EXPECT_EQ(e.samples.at("llamacpp:prompt_tokens_cached_total"), 32);
  EXPECT_EQ(e.samples.at("llamacpp:prompt_seconds_total"), 2.0);
  EXPECT_EQ(e.samples.at("llamacpp:tokens_predicted_total"), 567);
  EXPECT_EQ(e.samples.at("llamacpp:tokens_predicted_seconds_total"), 4.0);
  EXPECT_EQ(e.samples.at("llamacpp:n_decode_total"), 40);
  EXPECT_EQ(e.samples.at("llamacpp:n_tokens_max"), 777);
  EXPECT_EQ(e.types.at("llamacpp:prompt_tokens_seconds"), "gauge");
  EXPECT_EQ(e.samples.at("llamacpp:prompt_tokens_seconds"), 250);   // 500 tokens in 2 s
  EXPECT_EQ(e.samples.at("llamacpp:predicted_tokens_seconds"), 25);  // 100 in 4 s
  EXPECT_EQ(e.samples.at("llamacpp:requests_processing"), 2);
  EXPECT_EQ(e.samples.at("llamacpp:requests_deferred"), 3);
  EXPECT_EQ(e.samples.at("llamacpp:n_busy_slots_per_decode"), 2.25);
  for (const char* name : {"llamacpp:spec_decode_num_draft_tokens_total",
                           "llamacpp:spec_decode_num_accepted_tokens_total", "llamacpp:spec_decode_num_drafts_total"}) {
    EXPECT_EQ(e.types.at(name), "counter");
    EXPECT_EQ(e.samples.at(name), 0);  // nothing is drafted
  }
  // nothing timed yet: rates are 0, not NaN
  const Exposition empty = parse(format_metrics(ServiceStats{}));
  EXPECT_EQ(empty.samples.at("llamacpp:prompt_tokens_seconds"), 0);
  EXPECT_EQ(empty.samples.at("llamacpp:n_busy_slots_per_decode"), 0);
}

TEST(Metrics, PhaseGaugeMarksExactlyTheActivePhase) {
  const Exposition e = parse(format_metrics(stats()));
  EXPECT_EQ(e.types.at("cohort:phase"), "gauge");
  EXPECT_EQ(e.samples.at("cohort:phase{phase=\"idle\"}"), 0);
  EXPECT_EQ(e.samples.at("cohort:phase{phase=\"prefill\"}"), 1);
  EXPECT_EQ(e.samples.at("cohort:phase{phase=\"decode\"}"), 0);
  EXPECT_EQ(e.samples.at("cohort:phase{phase=\"mixed\"}"), 0);
}

TEST(Metrics, HistogramsAreCumulativeAndEndAtTheirCount) {
  const Exposition e = parse(format_metrics(stats()));
  for (const std::string h : {"cohort:time_to_first_token_seconds", "cohort:inter_token_latency_seconds"}) {
    SCOPED_TRACE(h);
    EXPECT_EQ(e.types.at(h), "histogram");
    double previous = 0;
    for (const std::string le : {"0.05", "0.5", "5", "+Inf"}) {
      const double v = e.samples.at(h + "_bucket{le=\"" + le + "\"}");
      EXPECT_GE(v, previous);
      previous = v;
    }
    EXPECT_EQ(e.samples.at(h + "_count"), previous);
  }
  EXPECT_EQ(e.samples.at("cohort:time_to_first_token_seconds_count"), 7);
  EXPECT_DOUBLE_EQ(e.samples.at("cohort:time_to_first_token_seconds_sum"), 3.25);
  EXPECT_DOUBLE_EQ(e.samples.at("cohort:inter_token_latency_seconds_sum"), 0.75);
}

TEST(Metrics, EmptyStatsGiveAnEmptyButValidExposition) {
  ServiceStats s;
  s.phase = "some \"odd\" phase";
  const Exposition e = parse(format_metrics(s));
  EXPECT_EQ(e.samples.at("cohort:time_to_first_token_seconds_count"), 0);
  EXPECT_EQ(e.samples.at("cohort:time_to_first_token_seconds_bucket{le=\"+Inf\"}"), 0);
  EXPECT_EQ(e.samples.at("cohort:phase{phase=\"some \\\"odd\\\" phase\"}"), 1);
}

}  // namespace metrics_test
}  // namespace cohort::server
