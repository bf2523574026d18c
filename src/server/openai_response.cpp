#include "server/openai_response.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace cohort::server {
namespace {

constexpr double kLogprobFloor = -9999.0;  // OpenAI's value for "practically impossible"

double printable_logprob(float lp) {
  return std::isfinite(lp) ? static_cast<double>(lp) : kLogprobFloor;
}

int64_t utf8_chars(const std::string& s) {
  int64_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

Json byte_array(const std::string& s) {
  Json a = Json::array();
  for (char c : s) a.push_back(static_cast<unsigned char>(c));
  return a;
}

std::string joined_text(const std::vector<GeneratedToken>& tokens) {
  std::string text;
  for (const GeneratedToken& t : tokens) text += t.text;
  return text;
}

Json finish_value(engine::FinishReason reason) {
  if (reason == engine::FinishReason::none) return nullptr;
  return engine::finish_reason_name(reason);
}

}  // namespace

std::string new_response_id(Endpoint endpoint) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-";
  for (int i = 0; i < 24; ++i) id += kChars[rng() % (sizeof kChars - 1)];
  return id;
}

Json usage_json(const Usage& u) {
  return Json{{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

Json timings_json(const Usage& u) {
  const int prompt_n = u.prompt_tokens - u.cached_tokens;
  // The first token comes from the prompt's last step: generation_ms covers
  // the steps of the others.
  const int gen_steps = std::max(u.completion_tokens - 1, 0);
  auto per_token = [](int n, double ms) { return n > 0 ? ms / n : 0.0; };
  auto per_second = [](int n, double ms) { return ms > 0 ? 1e3 * n / ms : 0.0; };
  return Json{{"queue_ms", u.queue_ms},
              {"cache_n", u.cached_tokens},
              {"prompt_n", prompt_n},
              {"prompt_ms", u.prompt_ms},
              {"prompt_per_token_ms", per_token(prompt_n, u.prompt_ms)},
              {"prompt_per_second", per_second(prompt_n, u.prompt_ms)},
              {"predicted_n", u.completion_tokens},
              {"predicted_ms", u.generation_ms},
              {"predicted_per_token_ms", per_token(gen_steps, u.generation_ms)},
              {"predicted_per_second", per_second(gen_steps, u.generation_ms)}};
}

Json error_json(const std::string& message, const std::string& type, const std::string& param,
                const std::string& code) {
  return Json{{"error",
               {{"message", message},
                {"type", type},
                {"param", param.empty() ? Json() : Json(param)},
                {"code", code.empty() ? Json() : Json(code)}}}};
}

std::string error_type(int status) {
  if (status == 503) return "unavailable_error";
  if (status == 401) return "authentication_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

std::string dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json prompt_progress_json(const PromptProgress& p) {
  return Json{{"total", p.total}, {"cache", p.cache}, {"processed", p.processed}, {"time_ms", p.time_ms}};
}

Json progress_timings_json(const PromptProgress& p) {
  Usage u;
  u.prompt_tokens = p.processed;
  u.cached_tokens = p.cache;
  u.prompt_ms = p.time_ms;
  return timings_json(u);
}

Usage combined_usage(const std::vector<Usage>& choices) {
  Usage u = choices.front();
  u.completion_tokens = 0;
  for (const Usage& c : choices) {
    u.completion_tokens += c.completion_tokens;
    u.queue_ms = std::max(u.queue_ms, c.queue_ms);
    u.prompt_ms = std::max(u.prompt_ms, c.prompt_ms);
    u.generation_ms = std::max(u.generation_ms, c.generation_ms);
  }
  return u;
}

ResponseBuilder::ResponseBuilder(ResponseMeta meta, TokenText token_text, int index)
    : meta_(std::move(meta)),
      split_(meta_.endpoint == Endpoint::chat ? meta_.reasoning : ReasoningFormat::none, meta_.thinking_open),
      token_text_(std::move(token_text)),
      index_(index) {}

Json ResponseBuilder::envelope(bool chunk) const {
  const bool chat = meta_.endpoint == Endpoint::chat;
  Json j = {{"id", meta_.id},
            {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
            {"created", meta_.created},
            {"model", meta_.model}};
  if (!meta_.system_fingerprint.empty()) j["system_fingerprint"] = meta_.system_fingerprint;
  return j;
}

Json ResponseBuilder::choice(const ReasoningParts& text, const Json& logprobs, engine::FinishReason reason,
                             bool chunk, bool first_delta) const {
  Json c = {{"index", index_}};
  if (meta_.endpoint == Endpoint::completions) {
    c["text"] = text.content;
  } else if (!chunk) {
    c["message"] = {{"role", "assistant"}, {"content", text.content}};
    if (!text.reasoning.empty()) c["message"]["reasoning_content"] = text.reasoning;
  } else if (first_delta) {  // content null, as llama-server sends it
    c["delta"] = {{"role", "assistant"}, {"content", nullptr}};
  } else {
    Json delta = Json::object();
    if (reason == engine::FinishReason::none || !text.content.empty()) delta["content"] = text.content;
    if (!text.reasoning.empty()) delta["reasoning_content"] = text.reasoning;
    c["delta"] = std::move(delta);
  }
  c["logprobs"] = logprobs;
  c["finish_reason"] = finish_value(reason);
  return c;
}

Json ResponseBuilder::chat_logprob_entry(int32_t id, float logprob) const {
  const std::string bytes = token_text_(id);
  return Json{{"token", bytes}, {"logprob", printable_logprob(logprob)}, {"bytes", byte_array(bytes)}};
}

Json ResponseBuilder::logprobs_json(const std::vector<GeneratedToken>& tokens) {
  if (!meta_.logprobs) return nullptr;
  if (meta_.endpoint == Endpoint::chat) {
    Json content = Json::array();
    for (const GeneratedToken& t : tokens) {
      Json entry = chat_logprob_entry(t.id, t.logprob);
      Json top = Json::array();
      for (const engine::TokenLogprob& alt : t.top) top.push_back(chat_logprob_entry(alt.token, alt.logprob));
      entry["top_logprobs"] = std::move(top);
      content.push_back(std::move(entry));
    }
    return Json{{"content", std::move(content)}, {"refusal", nullptr}};
  }
  Json lp = {{"tokens", Json::array()}, {"token_logprobs", Json::array()},
             {"top_logprobs", Json::array()}, {"text_offset", Json::array()}};
  for (const GeneratedToken& t : tokens) {
    lp["tokens"].push_back(token_text_(t.id));
    lp["token_logprobs"].push_back(printable_logprob(t.logprob));
    Json top = Json::object();
    for (const engine::TokenLogprob& alt : t.top) top[token_text_(alt.token)] = printable_logprob(alt.logprob);
    lp["top_logprobs"].push_back(std::move(top));
    lp["text_offset"].push_back(text_offset_);
    text_offset_ += utf8_chars(t.text);
  }
  return lp;
}

Json ResponseBuilder::role_chunk() const {
  Json j = envelope(true);
  j["choices"] = Json::array({choice({}, nullptr, engine::FinishReason::none, true, true)});
  if (meta_.include_usage) j["usage"] = nullptr;
  return j;
}

Json ResponseBuilder::progress_chunk(const PromptProgress& progress) const {
  Json j = role_chunk();
  j["prompt_progress"] = prompt_progress_json(progress);
  j["timings"] = progress_timings_json(progress);
  return j;
}

Json ResponseBuilder::delta_chunk(const std::vector<GeneratedToken>& tokens) {
  Json j = envelope(true);
  const Json lp = logprobs_json(tokens);
  j["choices"] = Json::array({choice(split_.push(joined_text(tokens)), lp, engine::FinishReason::none, true, false)});
  if (meta_.include_usage) j["usage"] = nullptr;
  return j;
}

Json ResponseBuilder::finish_chunk(engine::FinishReason reason, const Usage& usage) {
  Json j = envelope(true);
  const engine::FinishReason r = reason == engine::FinishReason::none ? engine::FinishReason::stop : reason;
  j["choices"] = Json::array({choice(split_.flush(), nullptr, r, true, false)});
  if (meta_.include_usage) {
    j["usage"] = nullptr;  // the usage chunk that follows carries the timings
  } else {
    j["timings"] = timings_json(usage);
  }
  return j;
}

Json ResponseBuilder::usage_chunk(const Usage& usage) const {
  Json j = envelope(true);
  j["choices"] = Json::array();
  j["usage"] = usage_json(usage);
  j["timings"] = timings_json(usage);
  return j;
}

const char* stop_type_name(engine::FinishReason reason) {
  switch (reason) {
    case engine::FinishReason::eog: return "eos";
    case engine::FinishReason::length: return "limit";
    case engine::FinishReason::stop: return "word";
    default: return "none";
  }
}

Json ResponseBuilder::full_response(const std::vector<GeneratedToken>& tokens, engine::FinishReason reason,
                                    const Usage& usage) {
  Json j = envelope(false);
  const Json lp = logprobs_json(tokens);
  const engine::FinishReason r = reason == engine::FinishReason::none ? engine::FinishReason::stop : reason;
  const std::string text = joined_text(tokens);
  ReasoningParts parts = split_.push(text);
  const ReasoningParts rest = split_.flush();
  parts.reasoning += rest.reasoning;
  parts.content += rest.content;
  j["choices"] = Json::array({choice(parts, lp, r, false, false)});
  j["usage"] = usage_json(usage);
  j["timings"] = timings_json(usage);
  if (meta_.verbose_prompt) {
    j["__verbose"] = {{"prompt", *meta_.verbose_prompt},
                      {"content", text},
                      {"tokens_evaluated", usage.prompt_tokens},
                      {"tokens_predicted", usage.completion_tokens},
                      {"stop_type", stop_type_name(r)}};
  }
  return j;
}

}  // namespace cohort::server
