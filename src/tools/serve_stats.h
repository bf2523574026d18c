// The figures `cohort bench-serve` reports, computed from the requests'
// timelines (request_timeline.h), with vLLM's definitions where vLLM has
// one (ref: vllm/benchmarks/serve.py calculate_metrics):
//   TTFT   first content chunk - send, per request
//   TPOT   (last chunk - first chunk) / (generated tokens - 1), per request
//          with at least 2 tokens: time per output token after the first
//   ITL    every gap between consecutive content chunks, all requests pooled
//   E2E    end of response - send, per request
//   queue  the server's timings.queue_ms, where it reports one
// and throughput:
//   request_throughput  completed requests / makespan
//   input/output tok/s  prompt / generated tokens of completed requests over
//                       the makespan (vLLM's "input/output token throughput")
//   PP tok/s            prompt tokens computed (prompt - cached) over the time
//                       during which at least one request waited for its first
//                       token (the union of the [send, first token] intervals)
//   TG tok/s            tokens after the first over the time during which at
//                       least one request was generating (the union of the
//                       [first token, last chunk] intervals)
//   makespan            first send to last end
// Only completed requests count in the latencies and token totals.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tools/request_timeline.h"

namespace cohort::tools {

struct Summary {
  size_t n = 0;  // values summarised; all fields 0 when n == 0
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

// The p-th percentile (0..100) of ascending `sorted` values, interpolated
// linearly between closest ranks (numpy's default). REQUIRES: non-empty.
double percentile(const std::vector<double>& sorted, double p);
Summary summarize(std::vector<double> values);

// Length of the union of [begin, end] intervals (empty ones ignored).
double covered_time(std::vector<std::pair<double, double>> intervals);

struct ServeStats {
  int n_requests = 0, completed = 0, failed = 0;
  double makespan_s = 0;
  double request_throughput = 0;   // completed / s
  int64_t input_tokens = 0;        // prompt tokens of completed requests
  int64_t cached_tokens = 0;       // of which reused from the server's cache
  int64_t output_tokens = 0;       // generated tokens of completed requests
  double input_tok_s = 0, output_tok_s = 0;
  double pp_busy_s = 0, tg_busy_s = 0;
  double pp_tok_s = 0, tg_tok_s = 0;
  Summary ttft_ms, tpot_ms, itl_ms, e2e_ms;
  std::optional<Summary> queue_ms;  // set when the server reported queue_ms
};

ServeStats compute_stats(const std::vector<RequestTimeline>& requests);

}  // namespace cohort::tools
