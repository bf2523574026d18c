#include "tools/request_timeline.h"

#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/sse_parser.h"

namespace cohort::tools {
namespace {

using Json = nlohmann::json;

int int_field(const Json& obj, const char* key, int fallback) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int>() : fallback;
}

double number_field(const Json& obj, const char* key, double fallback) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<double>() : fallback;
}

// Tokens in a chunk's logprobs (completions: "tokens"; chat: "content"); 0 if none.
int logprob_tokens(const Json& choice) {
  const auto lp = choice.find("logprobs");
  if (lp == choice.end() || !lp->is_object()) return 0;
  for (const char* key : {"tokens", "content"}) {
    const auto it = lp->find(key);
    if (it != lp->end() && it->is_array()) return static_cast<int>(it->size());
  }
  return 0;
}

bool has_text(const Json& choice) {
  if (const auto t = choice.find("text"); t != choice.end() && t->is_string()) {
    return !t->get_ref<const std::string&>().empty();
  }
  const auto d = choice.find("delta");
  if (d == choice.end() || !d->is_object()) return false;
  const auto c = d->find("content");
  return c != d->end() && c->is_string() && !c->get_ref<const std::string&>().empty();
}

void apply_choice(const Json& choice, double t_s, RequestTimeline& t) {
  if (!choice.is_object()) return;
  const int n_lp = logprob_tokens(choice);
  if (has_text(choice) || n_lp > 0) {
    t.chunk_s.push_back(t_s);
    t.chunk_tokens.push_back(n_lp > 0 ? n_lp : 1);
  }
  if (const auto f = choice.find("finish_reason"); f != choice.end() && f->is_string()) {
    t.finish_reason = f->get<std::string>();
  }
}

}  // namespace

int RequestTimeline::generated_tokens() const {
  if (completion_tokens >= 0) return completion_tokens;
  return std::accumulate(chunk_tokens.begin(), chunk_tokens.end(), 0);
}

void apply_stream_event(std::string_view data, double t_s, RequestTimeline& t) {
  if (is_done_event(data)) {
    t.done = true;
    return;
  }
  const Json j = Json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    if (t.error.empty()) t.error = fmt::format("malformed event from the server: {:.200}", data);
    return;
  }
  if (const auto e = j.find("error"); e != j.end() && !e->is_null()) {
    const std::string message = e->is_object() && e->contains("message") && (*e)["message"].is_string()
                                    ? (*e)["message"].get<std::string>()
                                    : e->dump();
    if (t.error.empty()) t.error = "server error in the stream: " + message;
    return;
  }
  if (const auto c = j.find("choices"); c != j.end() && c->is_array() && !c->empty()) {
    apply_choice((*c)[0], t_s, t);
  }
  if (const auto u = j.find("usage"); u != j.end() && u->is_object()) {
    t.prompt_tokens = int_field(*u, "prompt_tokens", t.prompt_tokens);
    t.completion_tokens = int_field(*u, "completion_tokens", t.completion_tokens);
    if (const auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object()) {
      t.cached_tokens = int_field(*d, "cached_tokens", t.cached_tokens);
    }
  }
  if (const auto tm = j.find("timings"); tm != j.end() && tm->is_object()) {
    t.server_queue_ms = number_field(*tm, "queue_ms", t.server_queue_ms);
    t.server_prompt_ms = number_field(*tm, "prompt_ms", t.server_prompt_ms);
  }
}

void finish_timeline(RequestTimeline& t) {
  if (t.error.empty() && t.http_status != 200) t.error = fmt::format("HTTP status {}", t.http_status);
  if (t.error.empty() && !t.done) t.error = "the stream ended without [DONE]";
  if (t.error.empty() && t.chunk_s.empty()) t.error = "no generated text in the stream";
  t.ok = t.error.empty();
}

}  // namespace cohort::tools
