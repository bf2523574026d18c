#include "server/llama_completion.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"
#include "server/api_reply.h"
#include "server/completion_session.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/sse.h"
#include "server/token_text.h"
#include "tokenizer/utf8.h"

namespace cohort::server {
namespace {

// What every chunk of one answer needs.
struct NativeAnswer {
  const ServedModel& model;
  const ParsedRequest& request;
  int index = 0;             // the prompt's place in the request's list
  int id_slot = -1;          // the slot that ran it, -1 if it was not seen in one
  int n_prompt = 0;
  int n_predicted = 0;       // tokens generated so far
};

// Text of `s` up to its longest valid UTF-8 prefix.
std::string valid_prefix(std::string s) {
  while (!s.empty() && !tokenizer::is_valid_utf8(s)) s.pop_back();
  return s;
}

Json bytes_of(const std::string& s) {
  Json a = Json::array();
  for (char c : s) a.push_back(static_cast<unsigned char>(c));
  return a;
}

// llama-server prints a log-probability of -inf as the lowest float (JSON has no -inf).
double printable(float lp) {
  return lp == -std::numeric_limits<float>::infinity() ? std::numeric_limits<float>::lowest() : lp;
}

// post_sampling_probs: "prob" (e^logprob) instead of "logprob".
Json probability_entry(const tokenizer::Tokenizer& tok, int32_t id, float logprob, bool probs) {
  const std::string text = token_text(tok, id);
  Json entry = {{"id", id}, {"token", valid_prefix(text)}, {"bytes", bytes_of(text)}};
  if (probs) {
    entry["prob"] = std::exp(static_cast<double>(logprob));
  } else {
    entry["logprob"] = printable(logprob);
  }
  return entry;
}

Json completion_probabilities(const tokenizer::Tokenizer& tok, const std::vector<GeneratedToken>& tokens,
                              bool probs) {
  Json out = Json::array();
  for (const GeneratedToken& t : tokens) {
    Json entry = probability_entry(tok, t.id, t.logprob, probs);
    Json top = Json::array();
    for (const engine::TokenLogprob& alt : t.top) {
      top.push_back(probability_entry(tok, alt.token, alt.logprob, probs));
    }
    entry[probs ? "top_probs" : "top_logprobs"] = std::move(top);
    out.push_back(std::move(entry));
  }
  return out;
}

// The ids of `tokens` (none for text released without a token of its own).
Json token_ids(const std::vector<GeneratedToken>& tokens, bool wanted) {
  Json ids = Json::array();
  if (!wanted) return ids;
  for (const GeneratedToken& t : tokens) {
    if (t.id >= 0) ids.push_back(t.id);
  }
  return ids;
}

// [{"bias", "token"}, ...]: -inf prints as null, as llama-server's.
Json logit_bias_json(const std::vector<engine::TokenBias>& biases) {
  Json out = Json::array();
  for (const engine::TokenBias& b : biases) out.push_back({{"bias", b.bias}, {"token", b.token}});
  return out;
}

Json generation_settings(const NativeAnswer& a) {
  const GenerationRequest& g = a.request.generation;
  const engine::SamplingParams& p = g.sampling;
  return {{"n_predict", g.max_tokens},       {"max_tokens", g.max_tokens},
          {"seed", p.seed},                  {"temperature", p.temp},
          {"top_k", p.top_k},                {"top_p", p.top_p},
          {"min_p", p.min_p},                {"repeat_last_n", p.repeat_last_n},
          {"repeat_penalty", p.repeat_penalty}, {"presence_penalty", p.presence_penalty},
          {"frequency_penalty", p.frequency_penalty}, {"ignore_eos", g.ignore_eos},
          {"stream", a.request.response.stream}, {"n_probs", std::max(g.n_logprobs, 0)},
          {"stop", g.stop},                  {"cache_prompt", g.cache_prompt},
          {"logit_bias", logit_bias_json(p.logit_bias)},
          {"n_ctx", a.model.service->n_ctx()}};
}

// A streamed chunk of `tokens`.
Json partial_json(const NativeAnswer& a, const std::vector<GeneratedToken>& tokens) {
  std::string content;
  for (const GeneratedToken& t : tokens) content += t.text;
  Json out = {{"index", a.index},
              {"content", content},
              {"tokens", token_ids(tokens, true)},  // a chunk's ids always, as llama-server
              {"stop", false},
              {"id_slot", a.id_slot},
              {"tokens_predicted", a.n_predicted},
              {"tokens_evaluated", a.n_prompt}};
  if (a.request.response.logprobs) {
    out["completion_probabilities"] =
        completion_probabilities(a.model.tokenizer, tokens, a.request.response.post_sampling_probs);
  }
  return out;
}

// A streamed progress report (return_progress): an empty chunk with
// "prompt_progress" and the prompt's "timings" so far.
Json progress_json(const NativeAnswer& a, const PromptProgress& progress) {
  Json out = partial_json(a, {});
  out["timings"] = progress_timings_json(progress);
  out["prompt_progress"] = prompt_progress_json(progress);
  return out;
}

// `response_fields`: only the fields at these paths ("a/b" is out["a"]["b"]),
// keyed by the path, as llama-server; an empty list keeps every field.
Json only_fields(const Json& out, const std::vector<std::string>& paths) {
  if (paths.empty()) return out;
  Json kept = Json::object();
  for (const std::string& path : paths) {
    const Json* at = &out;
    for (size_t begin = 0; at != nullptr && begin <= path.size();) {
      const size_t end = std::min(path.find('/', begin), path.size());
      const auto it = at->is_object() ? at->find(path.substr(begin, end - begin)) : at->end();
      at = at->is_object() && it != at->end() ? &*it : nullptr;
      begin = end + 1;
    }
    if (at != nullptr) kept[path] = *at;
  }
  return kept;
}

// The whole answer (streamed: its last chunk, `shown` empty).
Json final_json(const NativeAnswer& a, const std::vector<GeneratedToken>& all,
                const std::vector<GeneratedToken>& shown, const GenerationEvent& end) {
  const Usage& usage = end.usage;
  std::string content;
  for (const GeneratedToken& t : shown) content += t.text;
  std::string generated;
  for (const GeneratedToken& t : all) generated += t.text;
  const tokenizer::Tokenizer& tok = a.model.tokenizer;
  Json out = {{"index", a.index},
              {"content", content},
              {"tokens", token_ids(shown, a.request.response.return_tokens)},
              {"id_slot", a.id_slot},
              {"stop", true},
              {"model", a.model.id},
              {"tokens_predicted", usage.completion_tokens},
              {"tokens_evaluated", usage.prompt_tokens},
              {"generation_settings", generation_settings(a)},
              {"prompt", tokens_text(tok, a.request.generation.prompt)},
              {"has_new_line", generated.find('\n') != std::string::npos},
              {"truncated", end.truncated},
              {"stop_type", stop_type_name(end.finish)},
              {"stopping_word", end.stop_word},
              {"tokens_cached", usage.prompt_tokens + usage.completion_tokens},
              {"timings", timings_json(usage)}};
  if (a.request.response.logprobs && !a.request.response.stream) {
    out["completion_probabilities"] = completion_probabilities(tok, shown, a.request.response.post_sampling_probs);
  }
  return only_fields(out, a.request.response.response_fields);
}

// The slot running request `id`, or -1.
int slot_of(const ServedModel& model, uint64_t id) {
  for (const ServiceStats::Slot& s : model.service->stats().slots) {
    if (s.busy && s.request == id) return s.id;
  }
  return -1;
}

// Runs one request to its end. Streamed, it writes every chunk and returns
// nullopt; whole, it returns the answer, or nullopt when the client left or
// the request failed (answered with the error).
std::optional<Json> answer(Exchange& exchange, RequestHandle& handle, NativeAnswer& a) {
  const bool stream = a.request.response.stream;
  if (stream && !exchange.begin_stream(200, "text/event-stream")) {
    handle.cancel();
    return std::nullopt;
  }
  std::vector<GeneratedToken> all;
  for (;;) {
    std::optional<GenerationEvent> e = next_event(exchange, handle);
    if (!e) return std::nullopt;
    if (a.id_slot < 0) a.id_slot = slot_of(a.model, handle.id());  // seen once the slot reports it
    if (e->progress) {
      if (stream && !exchange.write(sse_json(progress_json(a, *e->progress)))) {
        handle.cancel();
        return std::nullopt;
      }
      continue;
    }
    a.n_predicted += static_cast<int>(e->tokens.size());
    if (stream && !e->tokens.empty() && !exchange.write(sse_json(partial_json(a, e->tokens)))) {
      handle.cancel();
      return std::nullopt;
    }
    for (GeneratedToken& t : e->tokens) all.push_back(std::move(t));
    if (!e->done) continue;
    if (!e->error.empty()) {
      fmt::print(stderr, "error: request {}: {}\n", handle.id(), e->error);
      if (stream) {
        exchange.write(sse_json(error_json(e->error, error_type(500))));
      } else {
        reply_error(exchange, 500, e->error);
      }
      return std::nullopt;
    }
    if (!stream) return final_json(a, all, all, *e);
    exchange.write(sse_json(final_json(a, all, {}, *e)));
    exchange.end_stream();
    return std::nullopt;
  }
}

}  // namespace

void native_completion(Exchange& exchange, ServedModel& model) {
  std::vector<ParsedRequest> parsed;
  try {
    parsed = parse_native_completion_request(exchange.request().body, model.prompt_context());
  } catch (const RequestError& e) {
    if (e.code != "context_length_exceeded") throw;
    reply_exceed_context(exchange, e);
    return;
  }
  // Several prompts run side by side; they are answered together, in order.
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const ParsedRequest& p : parsed) handles.push_back(model.service->submit(p.generation));
  Json answers = Json::array();
  for (size_t i = 0; i < parsed.size(); ++i) {
    NativeAnswer a{model, parsed[i]};
    a.index = static_cast<int>(i);
    a.n_prompt = static_cast<int>(parsed[i].generation.prompt.size());
    std::optional<Json> whole = answer(exchange, *handles[i], a);
    if (!whole) {
      for (size_t k = i + 1; k < handles.size(); ++k) handles[k]->cancel();  // nobody will read them
      return;
    }
    answers.push_back(std::move(*whole));
  }
  reply_json(exchange, 200, answers.size() == 1 ? answers[0] : answers);
}

}  // namespace cohort::server
