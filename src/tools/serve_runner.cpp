#include "tools/serve_runner.h"

#include <algorithm>
#include <chrono>
#include <semaphore>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "common/error.h"
#include "tools/sse_parser.h"

namespace cohort::tools {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxErrorBody = 4096;   // bytes of a failed response kept for its message
constexpr size_t kMinCalibratedWords = 16;

bool is_chat(const std::string& endpoint) {
  return endpoint.size() >= 17 && endpoint.compare(endpoint.size() - 17, 17, "/chat/completions") == 0;
}

// The message of an OpenAI-style error body, or the body itself.
std::string error_message(int status, const std::string& body) {
  const Json j = Json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const Json& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) {
      return fmt::format("HTTP {}: {}", status, e["message"].get<std::string>());
    }
    if (e.is_string()) return fmt::format("HTTP {}: {}", status, e.get<std::string>());
  }
  return fmt::format("HTTP {}: {:.300}", status, body);
}

void run_request(const ServeTarget& target, const RequestSpec& spec, Clock::time_point t0, RequestTimeline& t) {
  auto now_s = [t0] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  SseParser parser;
  std::vector<std::string> events;
  std::string error_body;
  const std::string body = request_body(target, spec);
  HttpRequestOptions http = target.http;
  http.accept = "text/event-stream";
  t.send_s = now_s();
  try {
    http_request(
        target.url, "POST", target.endpoint, body, [&t](const HttpResponseHead& h) { t.http_status = h.status; },
        [&](std::string_view piece) {
          const double at = now_s();
          if (t.http_status != 200) {
            if (error_body.size() < kMaxErrorBody) error_body.append(piece.substr(0, kMaxErrorBody));
            return;
          }
          events.clear();
          parser.feed(piece, events);
          for (const std::string& e : events) apply_stream_event(e, at, t);
        },
        http);
  } catch (const Error& e) {
    t.error = e.what();
  }
  t.end_s = now_s();
  if (t.error.empty() && t.http_status != 200) t.error = error_message(t.http_status, error_body);
  finish_timeline(t);
}

}  // namespace

std::string request_body(const ServeTarget& target, const RequestSpec& spec) {
  Json j = {{"model", target.model},
            {"max_tokens", spec.max_tokens},
            {"stream", true},
            {"stream_options", {{"include_usage", true}}}};
  if (is_chat(target.endpoint)) {
    j["messages"] = Json::array({Json{{"role", "user"}, {"content", spec.prompt}}});
  } else {
    j["prompt"] = spec.prompt;
  }
  if (target.ignore_eos) j["ignore_eos"] = true;
  if (target.temperature >= 0) j["temperature"] = target.temperature;
  if (target.logprobs) {
    if (is_chat(target.endpoint)) {
      j["logprobs"] = true;
    } else {
      j["logprobs"] = 1;
    }
  }
  if (!target.response_format.is_null()) j["response_format"] = target.response_format;
  return j.dump();
}

std::string discover_model(const HttpUrl& url, const HttpRequestOptions& http) {
  const HttpResult r = http_fetch(url, "GET", "/v1/models", "", http);
  if (r.status == 503) fail("{} is not ready (503: still loading the model?)", url.to_string());
  if (r.status != 200) fail("{}/v1/models: {}", url.to_string(), error_message(r.status, r.body));
  const Json j = Json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
      !j["data"][0].is_object() || !j["data"][0].contains("id") || !j["data"][0]["id"].is_string()) {
    fail("{}/v1/models: no model listed in the answer", url.to_string());
  }
  return j["data"][0]["id"].get<std::string>();
}

bool calibrate_prompts(const HttpUrl& url, const HttpRequestOptions& http, PromptMaker& maker) {
  auto tokenize = [&](const std::string& text, bool add_special, bool pieces) {
    const Json body = {{"content", text}, {"add_special", add_special}, {"with_pieces", pieces}};
    const HttpResult r = http_fetch(url, "POST", "/tokenize", body.dump(), http);
    const Json j = r.status == 200 ? Json::parse(r.body, nullptr, false) : Json();
    if (!j.is_object() || !j.contains("tokens") || !j["tokens"].is_array()) return Json();
    return j["tokens"];
  };
  std::string text;
  for (const std::string& w : PromptMaker::candidate_words()) text += " " + w;
  const Json tokens = tokenize(text, false, true);
  std::set<std::string> pieces;
  for (const Json& t : tokens) {
    if (t.is_object() && t.contains("piece") && t["piece"].is_string()) pieces.insert(t["piece"].get<std::string>());
  }
  std::vector<std::string> single;
  for (const std::string& w : PromptMaker::candidate_words()) {
    if (pieces.count(" " + w) && std::find(single.begin(), single.end(), w) == single.end()) single.push_back(w);
  }
  if (single.size() < kMinCalibratedWords) return false;
  const Json with = tokenize(" " + single.front(), true, false);
  const Json without = tokenize(" " + single.front(), false, false);
  if (!with.is_array() || !without.is_array()) return false;
  maker.calibrate(std::move(single), static_cast<int>(with.size()) - static_cast<int>(without.size()));
  return true;
}

std::vector<RequestTimeline> run_workload(const ServeTarget& target, const std::vector<RequestSpec>& specs,
                                          int max_concurrency) {
  std::vector<RequestTimeline> out(specs.size());
  const std::ptrdiff_t limit =
      max_concurrency > 0 ? max_concurrency : std::max<std::ptrdiff_t>(1, static_cast<std::ptrdiff_t>(specs.size()));
  std::counting_semaphore<> in_flight(limit);
  std::vector<std::jthread> threads;  // joined on destruction, also if a later start throws
  threads.reserve(specs.size());
  const Clock::time_point t0 = Clock::now();
  for (size_t i = 0; i < specs.size(); ++i) {
    RequestTimeline& t = out[i];
    t.index = static_cast<int>(i);
    t.name = specs[i].name;
    t.expected_prompt_tokens = specs[i].prompt_tokens;
    t.max_tokens = specs[i].max_tokens;
    t.scheduled_s = specs[i].at_s;
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(specs[i].at_s)));
    in_flight.acquire();
    threads.emplace_back([&target, &spec = specs[i], &t, t0, &in_flight] {
      run_request(target, spec, t0, t);
      in_flight.release();
    });
  }
  threads.clear();
  return out;
}

}  // namespace cohort::tools
