// `cohort bench-serve`: replays a workload against a running server (cohort
// or any OpenAI-compatible one) and reports request throughput, TTFT, TPOT,
// ITL, queue wait (when the server reports it), prompt and generation
// throughput and the makespan, as `vllm bench serve` does.
//
// The workload is either vLLM's random dataset (--num-prompts,
// --random-input-len, --random-output-len, --random-range-ratio, sent at
// --request-rate with --arrival fixed|poisson) or a scripted scenario
// (--scenario FILE.json, see serve_workload.h). Every request streams, with
// stream_options.include_usage for exact token counts and, by default,
// ignore_eos so that it generates exactly max_tokens.
//
// stdout gets the report (-o md or -o json); progress and warnings go to
// stderr. A server that cannot be reached is an error (exit status 1)
// before anything is sent; failed requests are counted in the report, and
// the exit status is 1 only when every request failed.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tools/commands.h"
#include "tools/serve_report.h"
#include "tools/serve_runner.h"
#include "tools/serve_stats.h"
#include "tools/serve_workload.h"

namespace cohort::tools {
namespace {

using Json = nlohmann::json;

struct BenchServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string base_url;               // overrides host and port
  std::string endpoint = "/v1/completions";
  std::string model;                  // "" = the first one at /v1/models
  RandomWorkload random;
  std::string request_rate = "inf";   // a number or "inf"
  std::string arrival = "poisson";
  std::string scenario;
  int max_concurrency = 0;            // 0 = no limit
  bool ignore_eos = true;
  double temperature = 0;             // < 0: the server's default
  bool logprobs = false;
  double timeout_s = 600;             // longest silence while reading a response
  std::string response_format;        // a JSON file: every request's response_format
  std::string label;
  std::string output = "md";
  std::string save_result;
};

double parse_rate(const std::string& text) {
  if (text == "inf" || text == "infinity") return std::numeric_limits<double>::infinity();
  size_t used = 0;
  double r = 0;
  try {
    r = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(r > 0)) fail("--request-rate must be a number > 0 or 'inf', got '{}'", text);
  return r;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Makes the prompt text of every request that has only a length.
void make_prompts(std::vector<RequestSpec>& specs, const BenchServeOptions& o, const PromptMaker& maker) {
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].prompt.empty()) continue;
    // One stream per request, so a prompt does not depend on the others.
    std::mt19937_64 rng(o.random.seed * 0x9E3779B97F4A7C15ull + i + 1);
    specs[i].prompt = maker.make(specs[i].prompt_tokens, rng);
  }
}

Json config_json(const BenchServeOptions& o, const ServeTarget& t, const PromptMaker& maker, size_t n) {
  Json c = {{"base_url", t.url.to_string()},
            {"endpoint", t.endpoint},
            {"model", t.model},
            {"workload", o.scenario.empty() ? std::string("random") : o.scenario},
            {"num_requests", n},
            {"seed", o.random.seed},
            {"max_concurrency", o.max_concurrency},
            {"ignore_eos", o.ignore_eos},
            {"temperature", o.temperature >= 0 ? Json(o.temperature) : Json(nullptr)},
            {"logprobs", o.logprobs},
            {"response_format", t.response_format},
            {"prompt_words_calibrated", maker.calibrated()},
            {"prompt_added_tokens", maker.n_added_tokens()},
            {"date", utc_now()}};
  if (o.scenario.empty()) {
    c["request_rate"] = std::isinf(o.random.request_rate) ? Json("inf") : Json(o.random.request_rate);
    c["arrival"] = arrival_name(o.random.arrival);
    c["random_input_len"] = o.random.input_len;
    c["random_output_len"] = o.random.output_len;
    c["random_range_ratio"] = o.random.range_ratio;
  }
  return c;
}

void check_options(const BenchServeOptions& o) {
  if (o.host.empty()) fail("--host must not be empty");
  if (o.port < 1 || o.port > 65535) fail("--port {} is not a port number", o.port);
  if (o.max_concurrency < 0) fail("--max-concurrency must be >= 0, got {}", o.max_concurrency);
  if (!(o.timeout_s > 0)) fail("--timeout must be > 0 seconds, got {}", o.timeout_s);
  if (o.endpoint.empty() || o.endpoint.front() != '/') fail("--endpoint must start with '/', got '{}'", o.endpoint);
  if (o.scenario.empty()) validate(o.random);
}

// A server's structured-output counters (cohort's /metrics: the host's
// time computing grammar masks, and its steps' time), or null when it has
// none; the difference of two readings is the run's.
Json server_counters(const ServeTarget& t) {
  const HttpResult r = http_fetch(t.url, "GET", "/metrics", "", t.http);
  if (r.status != 200) return nullptr;
  Json c = Json::object();
  for (const char* name : {"step_seconds_total", "grammar_mask_seconds_total", "grammar_mask_steps_total"}) {
    const std::string key = fmt::format("\ncohort:{} ", name);
    const size_t at = r.body.find(key);
    if (at == std::string::npos) return nullptr;
    c[name] = std::strtod(r.body.c_str() + at + key.size(), nullptr);
  }
  return c;
}

Json counters_delta(const Json& before, const Json& after) {
  if (before.is_null() || after.is_null()) return nullptr;
  const double step = after["step_seconds_total"].get<double>() - before["step_seconds_total"].get<double>();
  const double mask =
      after["grammar_mask_seconds_total"].get<double>() - before["grammar_mask_seconds_total"].get<double>();
  const double steps =
      after["grammar_mask_steps_total"].get<double>() - before["grammar_mask_steps_total"].get<double>();
  return {{"step_seconds", step},
          {"grammar_mask_seconds", mask},
          {"grammar_mask_steps", steps},
          {"grammar_mask_share", step > 0 ? mask / step : 0.0}};
}

Json read_json_file(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) fail("cannot read {} file '{}'", what, path);
  const Json j = Json::parse(in, nullptr, false);
  if (!j.is_object()) fail("{} file '{}' does not hold a JSON object", what, path);
  return j;
}

void report_failures(const std::vector<RequestTimeline>& timelines, const ServeStats& stats) {
  if (stats.failed == 0) return;
  std::string first;
  for (const RequestTimeline& t : timelines) {
    if (!t.ok) {
      first = fmt::format("{}: {}", t.name, t.error);
      break;
    }
  }
  if (stats.completed == 0) fail("all {} requests failed; first: {}", stats.failed, first);
  fmt::print(stderr, "warning: {} of {} requests failed; first: {}\n", stats.failed, stats.n_requests, first);
}

void bench_serve(BenchServeOptions o) {
  o.random.request_rate = parse_rate(o.request_rate);
  o.random.arrival = parse_arrival(o.arrival);
  check_options(o);
  // The workload first: a bad scenario file fails before the server is asked anything.
  std::vector<RequestSpec> specs = o.scenario.empty() ? random_workload(o.random) : load_scenario(o.scenario);
  ServeTarget target;
  const bool v6 = o.host.find(':') != std::string::npos && o.host.front() != '[';  // an IPv6 literal
  const std::string host = v6 ? "[" + o.host + "]" : o.host;
  target.url = parse_http_url(o.base_url.empty() ? fmt::format("http://{}:{}", host, o.port) : o.base_url);
  target.endpoint = o.endpoint;
  target.ignore_eos = o.ignore_eos;
  target.temperature = o.temperature;
  target.logprobs = o.logprobs;
  if (!o.response_format.empty()) target.response_format = read_json_file(o.response_format, "--response-format");
  target.http.read_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1e3));
  const std::string discovered = discover_model(target.url, target.http);  // also: is it up?
  target.model = o.model.empty() ? discovered : o.model;
  PromptMaker maker;
  if (calibrate_prompts(target.url, target.http, maker)) {
    fmt::print(stderr, "bench-serve: prompts from {} one-token words, {} token(s) added by the server\n",
               maker.n_words(), maker.n_added_tokens());
  } else {
    fmt::print(stderr, "bench-serve: no /tokenize on the server; prompt lengths are approximate "
                       "(usage gives the real counts)\n");
  }
  make_prompts(specs, o, maker);
  const std::string label = !o.label.empty() ? o.label
                            : o.scenario.empty() ? std::string("random")
                                                 : std::filesystem::path(o.scenario).stem().string();
  fmt::print(stderr, "bench-serve: {} requests to {}{} (model '{}')\n", specs.size(), target.url.to_string(),
             target.endpoint, target.model);
  const Json counters_before = server_counters(target);
  const std::vector<RequestTimeline> timelines = run_workload(target, specs, o.max_concurrency);
  const ServeStats stats = compute_stats(timelines);
  const Json server = counters_delta(counters_before, server_counters(target));
  Json config = config_json(o, target, maker, specs.size());
  if (!server.is_null()) config["server"] = server;
  const Json result = report_json(label, config, stats, timelines);
  if (!o.save_result.empty()) {
    std::ofstream out(o.save_result);
    out << result.dump(1) << "\n";
    if (!out) fail("cannot write --save-result file '{}'", o.save_result);
  }
  if (o.output == "json") {
    fmt::print("{}\n", result.dump(1));
  } else {
    fmt::print("{}", report_markdown(label, config, stats));
  }
  std::fflush(stdout);
  report_failures(timelines, stats);
}

}  // namespace

void register_bench_serve(CLI::App& app) {
  auto o = std::make_shared<BenchServeOptions>();
  CLI::App* cmd =
      app.add_subcommand("bench-serve", "replay a workload against a running server (as vllm bench serve)");
  cmd->add_option("--host", o->host, "server address");
  cmd->add_option("--port", o->port, "server port");
  cmd->add_option("--base-url", o->base_url, "server URL, http://host:port (instead of --host and --port)");
  cmd->add_option("--endpoint", o->endpoint, "/v1/completions or /v1/chat/completions");
  cmd->add_option("--model", o->model, "model name in requests (default: the first at /v1/models)");
  auto* n = cmd->add_option("--num-prompts", o->random.num_prompts, "random workload: number of requests");
  auto* rate = cmd->add_option("--request-rate", o->request_rate, "requests per second, or inf (all at once)");
  auto* arrival = cmd->add_option("--arrival", o->arrival, "gaps between requests: fixed or poisson")
                      ->check(CLI::IsMember({"fixed", "poisson"}));
  auto* in = cmd->add_option("--random-input-len", o->random.input_len, "random workload: prompt tokens");
  auto* out = cmd->add_option("--random-output-len", o->random.output_len, "random workload: tokens to generate");
  auto* ratio = cmd->add_option("--random-range-ratio", o->random.range_ratio,
                                "random workload: lengths uniform in [len*(1-r), len*(1+r)]");
  cmd->add_option("--seed", o->random.seed, "seed of arrival times, lengths and prompt words");
  cmd->add_option("--scenario", o->scenario, "JSON file of scripted requests (at, prompt_tokens|prompt, max_tokens)")
      ->check(CLI::ExistingFile)
      ->excludes(n)
      ->excludes(rate)
      ->excludes(arrival)
      ->excludes(in)
      ->excludes(out)
      ->excludes(ratio);
  cmd->add_option("--max-concurrency", o->max_concurrency, "most requests in flight at once (0: no limit)");
  cmd->add_flag("--ignore-eos,!--no-ignore-eos", o->ignore_eos, "generate exactly max_tokens (default: on)");
  cmd->add_flag("--logprobs", o->logprobs,
                "ask each token's log-probability: a chunk's tokens are counted, and cohort\n"
                "sends a chunk per token even where a character spans tokens");
  cmd->add_option("--temperature", o->temperature, "temperature of every request (< 0: the server's default)");
  cmd->add_option("--response-format", o->response_format,
                  "JSON file: the response_format object every request carries (structured output)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--timeout", o->timeout_s, "seconds of silence after which a request fails");
  cmd->add_option("--label", o->label, "name of this run in the report (e.g. the server's policy)");
  cmd->add_option("-o,--output", o->output, "report format: md or json")->check(CLI::IsMember({"md", "json"}));
  cmd->add_option("--save-result", o->save_result, "also write the JSON report to FILE");
  cmd->callback([o] { bench_serve(*o); });
}

}  // namespace cohort::tools
