// Output of `cohort bench-serve`: a markdown report (vLLM's "Serving
// Benchmark Result" figures as tables) or JSON with the same figures and
// every request's raw timeline, for plots (scripts/plot_itl.py).
//
// JSON layout:
//   {"label", "config": {...the run's settings...},
//    "summary": {"completed", "failed", "makespan_s", "request_throughput",
//                "input_tokens", "cached_tokens", "output_tokens",
//                "input_tok_s", "output_tok_s", "pp_tok_s", "tg_tok_s",
//                "pp_busy_s", "tg_busy_s",
//                "ttft_ms" | "tpot_ms" | "itl_ms" | "e2e_ms" | "queue_ms":
//                    {"n", "mean", "p50", "p90", "p99", "max"}},
//    "requests": [{"index", "name", "ok", "error", "http_status",
//                  "scheduled_s", "send_s", "first_token_s", "end_s",
//                  "chunk_s": [...], "chunk_tokens": [...],
//                  "expected_prompt_tokens", "max_tokens", "prompt_tokens",
//                  "completion_tokens", "cached_tokens", "finish_reason",
//                  "server_queue_ms", "server_prompt_ms"}]}
// Times are seconds after the start of the run; counts the server did not
// report are null; "queue_ms" is left out when no request had one.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/request_timeline.h"
#include "tools/serve_stats.h"

namespace cohort::tools {

nlohmann::json report_json(const std::string& label, const nlohmann::json& config, const ServeStats& stats,
                           const std::vector<RequestTimeline>& requests);

std::string report_markdown(const std::string& label, const nlohmann::json& config, const ServeStats& stats);

}  // namespace cohort::tools
