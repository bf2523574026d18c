// llama-server's routes: /health, /tokenize, /detokenize, /apply-template,
// /completion (and /completions), /props, /slots, /metrics.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "server/api_reply.h"
#include "server/chat_prompt.h"
#include "server/llama_completion.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/routes.h"
#include "tokenizer/utf8.h"

namespace cohort::server {
namespace {

void health(Exchange& exchange, const ServingState& state) {
  if (state.model() == nullptr) {
    reply_loading(exchange);
    return;
  }
  reply_json(exchange, 200, Json{{"status", "ok"}});
}

// A token's text as llama-server shows it: a string when it is valid UTF-8,
// else its bytes.
Json piece_json(const std::string& piece) {
  if (tokenizer::is_valid_utf8(piece)) return piece;
  Json bytes = Json::array();
  for (char c : piece) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

// The reply is written as text, token by token: a JSON tree of the tokens
// would take ~16 bytes per id and ~150 per piece.
void tokenize(Exchange& exchange, const ServedModel& model) {
  std::string content;
  bool add_special = false, parse_special = true, with_pieces = false;
  {
    const ParsedBody parsed(exchange.request().body);
    const Json& body = parsed.json();
    const std::optional<std::string> text = read_string(body, "content");
    if (!text) reject_field("content", "is required");
    content = *text;
    add_special = read_bool(body, "add_special").value_or(false);
    parse_special = read_bool(body, "parse_special").value_or(true);
    with_pieces = read_bool(body, "with_pieces").value_or(false);
  }
  const std::vector<int32_t> ids = model.tokenizer.encode(content, add_special, parse_special);
  if (static_cast<int64_t>(ids.size()) > model.max_tokenize) {
    reject_field("content", fmt::format("gives {} tokens, more than --max-tokenize {}", ids.size(), model.max_tokenize));
  }
  std::string out = R"({"tokens":[)";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ',';
    if (with_pieces) {
      out += dump(Json{{"id", ids[i]}, {"piece", piece_json(model.tokenizer.token_to_piece(ids[i], true))}});
    } else {
      out += std::to_string(ids[i]);
    }
  }
  out += "]}";
  exchange.respond(200, out, "application/json; charset=utf-8");
}

void detokenize(Exchange& exchange, const ServedModel& model) {
  std::vector<int32_t> ids;
  {
    const ParsedBody parsed(exchange.request().body);
    const Json& body = parsed.json();
    if (const auto it = body.find("tokens"); it != body.end() && !it->is_null()) {
      ids = read_token_ids(*it, "tokens", model.tokenizer.n_vocab());
    }
  }
  if (static_cast<int64_t>(ids.size()) > model.max_tokenize) {
    reject_field("tokens", fmt::format("holds {} tokens, more than --max-tokenize {}", ids.size(), model.max_tokenize));
  }
  const size_t max_bytes = static_cast<size_t>(model.max_tokenize) * kMaxDetokenizeBytesPerToken;
  std::string content;  // pieces concatenated, special tokens as text (llama-server)
  for (int32_t id : ids) {
    content += model.tokenizer.token_to_piece(id, true);
    if (content.size() > max_bytes) {
      reject_field("tokens", fmt::format("give more than {} bytes of text ({} per token of --max-tokenize {})",
                                         max_bytes, kMaxDetokenizeBytesPerToken, model.max_tokenize));
    }
  }
  reply_json(exchange, 200, Json{{"content", content}});
}

// {"messages": [...]} -> {"prompt": the text /v1/chat/completions would
// tokenize}; the messages are checked as that route checks them.
void apply_template(Exchange& exchange, const ServedModel& model) {
  const ParsedBody parsed(exchange.request().body);
  const Json& body = parsed.json();
  const Json* kwargs = read_object(body, "chat_template_kwargs");
  const auto messages = body.find("messages");
  if (messages == body.end() || messages->is_null()) reject_field("messages", "is required");
  Json normalized = normalize_messages(*messages);
  const ChatEnding ending = read_chat_ending(body, normalized);
  const std::string prompt = render_chat_prompt(normalized, model.chat_template, model.tokenizer,
                                                template_variables(model.template_defaults, kwargs), ending);
  reply_json(exchange, 200, Json{{"prompt", prompt}});
}

std::string piece_or_empty(const tokenizer::Tokenizer& tok, int32_t id) {
  return id >= 0 ? tok.token_to_piece(id, true) : std::string();
}

Json memory_json(const backend::MemoryUse& m) {
  return {{"device", m.device},       {"weights_bytes", m.weights},   {"kv_bytes", m.kv},
          {"kv_tokens", m.kv_tokens}, {"cache_type_k", m.kv_type_k},  {"cache_type_v", m.kv_type_v},
          {"workspace_bytes", m.workspace}};
}

void props(Exchange& exchange, const ServedModel& model) {
  const ServiceStats stats = model.service->stats();
  const engine::SamplingParams& d = model.defaults;
  const Json params = {{"temperature", d.temp},         {"top_k", d.top_k},
                       {"top_p", d.top_p},              {"min_p", d.min_p},
                       {"repeat_penalty", d.repeat_penalty}, {"repeat_last_n", d.repeat_last_n},
                       {"presence_penalty", d.presence_penalty},
                       {"frequency_penalty", d.frequency_penalty},
                       {"seed", d.seed},                {"n_predict", model.default_max_tokens}};
  reply_json(exchange, 200,
             Json{{"default_generation_settings", {{"n_ctx", model.service->n_ctx()}, {"params", params}}},
                  {"total_slots", stats.n_slots},
                  {"model_alias", model.id},
                  {"model_path", model.path},
                  {"chat_template", model.chat_template},
                  {"bos_token", piece_or_empty(model.tokenizer, model.tokenizer.bos())},
                  {"eos_token", piece_or_empty(model.tokenizer, model.tokenizer.eos())},
                  {"modalities", {{"vision", false}, {"audio", false}}},
                  {"memory", memory_json(model.service->memory())},
                  {"build_info", build_info()}});
}

void slots(Exchange& exchange, const ServedModel& model) {
  if (!model.slots_endpoint) {  // llama-server's answer, word for word
    reply_not_supported(exchange, "This server does not support slots endpoint. Start it with `--slots`");
    return;
  }
  const ServiceStats stats = model.service->stats();
  Json out = Json::array();
  for (const ServiceStats::Slot& s : stats.slots) {
    out.push_back({{"id", s.id},
                   {"id_task", s.request},
                   {"n_ctx", stats.n_ctx},
                   {"is_processing", s.busy},
                   {"state", s.state},
                   {"n_prompt_tokens", s.n_prompt},
                   {"n_decoded", s.n_generated}});
  }
  reply_json(exchange, 200, out);
}

void metrics(Exchange& exchange, const ServedModel& model) {
  if (!model.metrics_endpoint) {  // llama-server's answer, word for word
    reply_not_supported(exchange, "This server does not support metrics endpoint. Start it with `--metrics`");
    return;
  }
  exchange.respond(200, format_metrics(model.service->stats()), kMetricsContentType);
}

}  // namespace

std::string build_info() { return fmt::format("b{}-{}", COHORT_BUILD_NUMBER, COHORT_COMMIT); }

void register_llama_routes(HttpServer& server, ServingState& state) {
  server.route("GET", "/health", [&state](Exchange& e) { health(e, state); });
  server.route("GET", "/v1/health", [&state](Exchange& e) { health(e, state); });
  server.route("POST", "/tokenize", with_model(state, tokenize));
  server.route("POST", "/detokenize", with_model(state, detokenize));
  server.route("POST", "/apply-template", with_model(state, apply_template));
  server.route("POST", "/completion", with_model(state, native_completion));
  server.route("POST", "/completions", with_model(state, native_completion));
  server.route("GET", "/props", with_model(state, props));
  server.route("GET", "/slots", with_model(state, slots));
  server.route("GET", "/metrics", with_model(state, metrics));
}

}  // namespace cohort::server
