#include "tools/serve_report.h"

#include <fmt/format.h>

namespace cohort::tools {
namespace {

using Json = nlohmann::json;

Json summary_json(const Summary& s) {
  return Json{{"n", s.n}, {"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", s.max}};
}

Json count_or_null(int v) { return v >= 0 ? Json(v) : Json(nullptr); }
Json ms_or_null(double v) { return v >= 0 ? Json(v) : Json(nullptr); }

Json request_json(const RequestTimeline& r) {
  return Json{{"index", r.index},
              {"name", r.name},
              {"ok", r.ok},
              {"error", r.error.empty() ? Json(nullptr) : Json(r.error)},
              {"http_status", r.http_status},
              {"scheduled_s", r.scheduled_s},
              {"send_s", r.send_s},
              {"first_token_s", r.chunk_s.empty() ? Json(nullptr) : Json(r.chunk_s.front())},
              {"end_s", r.end_s},
              {"chunk_s", r.chunk_s},
              {"chunk_tokens", r.chunk_tokens},
              {"expected_prompt_tokens", r.expected_prompt_tokens},
              {"max_tokens", r.max_tokens},
              {"prompt_tokens", count_or_null(r.prompt_tokens)},
              {"completion_tokens", count_or_null(r.completion_tokens)},
              {"cached_tokens", count_or_null(r.cached_tokens)},
              {"finish_reason", r.finish_reason},
              {"server_queue_ms", ms_or_null(r.server_queue_ms)},
              {"server_prompt_ms", ms_or_null(r.server_prompt_ms)}};
}

std::string latency_row(const char* name, const Summary& s) {
  return fmt::format("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", name, s.n, s.mean, s.p50,
                     s.p90, s.p99, s.max);
}

}  // namespace

Json report_json(const std::string& label, const Json& config, const ServeStats& s,
                 const std::vector<RequestTimeline>& requests) {
  Json summary = {{"n_requests", s.n_requests},
                  {"completed", s.completed},
                  {"failed", s.failed},
                  {"makespan_s", s.makespan_s},
                  {"request_throughput", s.request_throughput},
                  {"input_tokens", s.input_tokens},
                  {"cached_tokens", s.cached_tokens},
                  {"output_tokens", s.output_tokens},
                  {"input_tok_s", s.input_tok_s},
                  {"output_tok_s", s.output_tok_s},
                  {"pp_busy_s", s.pp_busy_s},
                  {"tg_busy_s", s.tg_busy_s},
                  {"pp_tok_s", s.pp_tok_s},
                  {"tg_tok_s", s.tg_tok_s},
                  {"ttft_ms", summary_json(s.ttft_ms)},
                  {"tpot_ms", summary_json(s.tpot_ms)},
                  {"itl_ms", summary_json(s.itl_ms)},
                  {"e2e_ms", summary_json(s.e2e_ms)}};
  if (s.queue_ms) summary["queue_ms"] = summary_json(*s.queue_ms);
  Json list = Json::array();
  for (const RequestTimeline& r : requests) list.push_back(request_json(r));
  return Json{{"label", label}, {"config", config}, {"summary", std::move(summary)}, {"requests", std::move(list)}};
}

std::string report_markdown(const std::string& label, const Json& config, const ServeStats& s) {
  std::string out = fmt::format("## bench-serve: {}\n\n", label);
  out += fmt::format("server {}{}, model '{}', workload {}\n\n", config.value("base_url", ""),
                     config.value("endpoint", ""), config.value("model", ""), config.value("workload", ""));
  out += "| metric | value |\n|---|---:|\n";
  out += fmt::format("| successful requests | {} |\n| failed requests | {} |\n", s.completed, s.failed);
  out += fmt::format("| makespan (s) | {:.3f} |\n", s.makespan_s);
  out += fmt::format("| request throughput (req/s) | {:.3f} |\n", s.request_throughput);
  out += fmt::format("| prompt tokens (cached) | {} ({}) |\n", s.input_tokens, s.cached_tokens);
  out += fmt::format("| generated tokens | {} |\n", s.output_tokens);
  out += fmt::format("| input token throughput (tok/s) | {:.2f} |\n", s.input_tok_s);
  out += fmt::format("| output token throughput (tok/s) | {:.2f} |\n", s.output_tok_s);
  out += fmt::format("| PP tok/s (over {:.3f} s with a prompt pending) | {:.2f} |\n", s.pp_busy_s, s.pp_tok_s);
  out += fmt::format("| TG tok/s (over {:.3f} s with a request generating) | {:.2f} |\n\n", s.tg_busy_s,
                     s.tg_tok_s);
  out += "| latency (ms) | n | mean | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|---:|---:|\n";
  out += latency_row("TTFT", s.ttft_ms);
  out += latency_row("TPOT", s.tpot_ms);
  out += latency_row("ITL", s.itl_ms);
  out += latency_row("E2E", s.e2e_ms);
  if (s.queue_ms) out += latency_row("queue (server)", *s.queue_ms);
  if (config.contains("server") && config["server"].is_object()) {
    const Json& v = config["server"];
    out += fmt::format("\nserver steps {:.3f} s, of which grammar masks {:.3f} s ({:.2f}%) in {} steps\n",
                       v.value("step_seconds", 0.0), v.value("grammar_mask_seconds", 0.0),
                       100.0 * v.value("grammar_mask_share", 0.0), v.value("grammar_mask_steps", 0.0));
  }
  return out;
}

}  // namespace cohort::tools
