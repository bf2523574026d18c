#include "server/metrics.h"

#include <cstdint>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "sched/batch_plan.h"

namespace cohort::server {
namespace {


void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP cohort:{} {}\n# TYPE cohort:{} {}\n", name, help, name, type);
}

template <typename T>
void metric(std::string& out, std::string_view name, std::string_view type, std::string_view help, T value) {
  header(out, name, type, help);
  out += fmt::format("cohort:{} {}\n", name, value);
}

// A label value with \, " and newline escaped.
std::string label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void phase_gauge(std::string& out, const std::string& phase) {
  header(out, "phase", "gauge", "Scheduling phase: 1 for the active one (idle, prefill, decode, mixed).");
  bool known = false;
  for (sched::Phase id : sched::kPhases) {
    const std::string_view p = sched::phase_label(id);
    known = known || p == phase;
    out += fmt::format("cohort:phase{{phase=\"{}\"}} {}\n", p, p == phase ? 1 : 0);
  }
  if (!known) out += fmt::format("cohort:phase{{phase=\"{}\"}} 1\n", label_value(phase));
}

// Buckets are cumulative with +Inf last; counts of the wrong length (a
// service that keeps no histogram) print as an empty histogram.
void histogram(std::string& out, std::string_view name, std::string_view help,
               const std::vector<double>& bounds, const std::vector<uint64_t>& counts, double sum) {
  header(out, name, "histogram", help);
  const bool valid = counts.size() == bounds.size() + 1;
  for (size_t i = 0; i < bounds.size(); ++i) {
    out += fmt::format("cohort:{}_bucket{{le=\"{}\"}} {}\n", name, bounds[i], valid ? counts[i] : 0);
  }
  const uint64_t total = valid ? counts.back() : 0;
  out += fmt::format("cohort:{}_bucket{{le=\"+Inf\"}} {}\n", name, total);
  out += fmt::format("cohort:{}_sum {}\n", name, valid ? sum : 0.0);
  out += fmt::format("cohort:{}_count {}\n", name, total);
}

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

// llama-server's names (llamacpp:*) and meanings, for dashboards made for
// it. Its throughput gauges average over the time since the last scrape;
// here they average over every finished request, so that two scrapers do
// not reset each other.
void llama_server_metrics(std::string& out, const ServiceStats& s) {
  auto item = [&](std::string_view name, std::string_view type, std::string_view help, double value) {
    out += fmt::format("# HELP llamacpp:{} {}\n# TYPE llamacpp:{} {}\nllamacpp:{} {}\n", name, help, name, type,
                       name, value);
  };
  item("prompt_tokens_total", "counter", "Number of prompt tokens processed, excluding cached tokens",
       static_cast<double>(s.prompt_tokens_total));
  item("prompt_tokens_cached_total", "counter", "Number of prompt tokens reused from the cache",
       static_cast<double>(s.prompt_tokens_cached_total));
  item("prompt_seconds_total", "counter", "Total time spent processing prompts", s.prompt_seconds_total);
  item("tokens_predicted_total", "counter", "Number of generation tokens processed",
       static_cast<double>(s.generated_tokens_total));
  item("tokens_predicted_seconds_total", "counter", "Total time spent generating tokens",
       s.predicted_seconds_total);
  item("n_decode_total", "counter", "Total number of decoder steps", static_cast<double>(s.n_decode_total));
  item("n_tokens_max", "counter", "Largest observed sequence length (prompt + generation)",
       static_cast<double>(s.n_tokens_max));
  item("prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s",
       ratio(static_cast<double>(s.prompt_tokens_timed), s.prompt_seconds_total));
  item("predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s",
       ratio(static_cast<double>(s.predicted_tokens_timed), s.predicted_seconds_total));
  item("requests_processing", "gauge", "Number of requests processing", s.requests_processing);
  item("requests_deferred", "gauge", "Number of requests deferred", s.requests_queued);
  item("n_busy_slots_per_decode", "gauge", "Average number of busy slots per decoder step",
       ratio(static_cast<double>(s.n_busy_slots_total), static_cast<double>(s.n_decode_total)));
  // No speculative decoding here: its counters stay at 0, so that what
  // watches them sees a server that drafts nothing.
  item("spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens generated", 0);
  item("spec_decode_num_accepted_tokens_total", "counter", "Number of draft tokens accepted", 0);
  item("spec_decode_num_drafts_total", "counter", "Number of drafts generated", 0);
}

}  // namespace

std::string format_metrics(const ServiceStats& s) {
  std::string out;
  metric(out, "prompt_tokens_total", "counter", "Number of prompt tokens processed.", s.prompt_tokens_total);
  metric(out, "tokens_predicted_total", "counter", "Number of generation tokens processed.",
         s.generated_tokens_total);
  metric(out, "requests_total", "counter", "Number of requests received.", s.requests_total);
  metric(out, "requests_processing", "gauge", "Number of requests in a slot.", s.requests_processing);
  metric(out, "requests_deferred", "gauge", "Number of requests queued.", s.requests_queued);
  metric(out, "requests_blocked_by_phase", "gauge",
         "Number of queued requests held back by the phase although a slot is free.",
         s.requests_blocked_by_phase);
  phase_gauge(out, s.phase);
  metric(out, "cohort_size", "gauge", "Number of requests in the current cohort.", s.cohort_size);
  metric(out, "n_slots", "gauge", "Number of slots.", s.n_slots);
  metric(out, "n_ctx", "gauge", "Context capacity of one request, in tokens.", s.n_ctx);
  metric(out, "step_seconds_total", "counter", "Time the engine loop spent in steps, plan to sampled tokens.",
         s.step_seconds_total);
  metric(out, "grammar_mask_seconds_total", "counter",
         "Time spent computing structured output's token masks for the device.", s.grammar_mask_seconds_total);
  metric(out, "grammar_mask_steps_total", "counter", "Steps that computed token masks.",
         static_cast<double>(s.grammar_mask_steps_total));
  llama_server_metrics(out, s);
  histogram(out, "time_to_first_token_seconds", "Time from request arrival to its first token.",
            s.latency_buckets, s.ttft_counts, s.ttft_sum);
  histogram(out, "inter_token_latency_seconds", "Time between consecutive tokens of a request.",
            s.latency_buckets, s.itl_counts, s.itl_sum);
  return out;
}

}  // namespace cohort::server
