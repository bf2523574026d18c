// /v1/completions, /v1/chat/completions (and its input_tokens) and /v1/models.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "server/api_reply.h"
#include "server/completion_session.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/routes.h"
#include "server/token_text.h"

namespace cohort::server {
namespace {

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TokenText token_text_of(const tokenizer::Tokenizer& tok) {
  return [&tok](int32_t id) {
    try {
      return tok.token_to_piece(id, true);
    } catch (const Error&) {
      return std::string();  // an id the engine should never produce
    }
  };
}

void generate(Exchange& exchange, ServedModel& model, Endpoint endpoint) {
  const PromptContext ctx = model.prompt_context();
  const std::string& body = exchange.request().body;
  ParsedRequest parsed = endpoint == Endpoint::chat ? parse_chat_request(body, ctx)
                                                    : parse_completion_request(body, ctx);
  ResponseMeta meta;
  meta.endpoint = endpoint;
  meta.id = new_response_id(endpoint);
  meta.created = unix_seconds();
  meta.model = model.id;
  meta.system_fingerprint = build_info();
  meta.logprobs = parsed.response.logprobs;
  meta.include_usage = parsed.response.include_usage;
  meta.reasoning = parsed.response.reasoning;
  meta.thinking_open = parsed.response.thinking_open;
  if (parsed.response.verbose) meta.verbose_prompt = tokens_text(model.tokenizer, parsed.generation.prompt);
  std::vector<Choice> choices;
  try {
    for (int i = 0; i < parsed.response.n_choices; ++i) {
      std::shared_ptr<RequestHandle> handle = model.service->submit(choice_request(parsed.generation, i));
      choices.push_back(Choice{std::move(handle), ResponseBuilder(meta, token_text_of(model.tokenizer), i)});
    }
  } catch (...) {  // a later choice refused: the earlier ones must not run on
    for (Choice& c : choices) c.handle->cancel();
    throw;
  }
  if (parsed.response.stream) {
    answer_streamed(exchange, choices);
  } else {
    answer_whole(exchange, choices);
  }
}

// The prompt tokens of a chat request, as it would be sent (llama-server's
// POST /chat/completions/input_tokens): {"input_tokens": n}.
void count_input_tokens(Exchange& exchange, const ServedModel& model) {
  const ParsedRequest parsed = parse_chat_request(exchange.request().body, model.prompt_context());
  reply_json(exchange, 200, Json{{"input_tokens", parsed.generation.prompt.size()}});
}

void list_models(Exchange& exchange, const ServedModel& model) {
  const Json entry = {{"id", model.id},        {"object", "model"},      {"created", model.created},
                      {"owned_by", "cohort"}, {"aliases", model.aliases}, {"tags", model.tags}};
  reply_json(exchange, 200, Json{{"object", "list"}, {"data", Json::array({entry})}});
}

}  // namespace

void register_openai_routes(HttpServer& server, ServingState& state) {
  // POST /completions without /v1 is llama-server's native route (llama_routes.cpp).
  server.route("POST", "/v1/completions", with_model(state, [](Exchange& e, ServedModel& m) {
                 generate(e, m, Endpoint::completions);
               }));
  server.route("POST", "/v1/chat/completions", with_model(state, [](Exchange& e, ServedModel& m) {
                 generate(e, m, Endpoint::chat);
               }));
  // Without /v1 the route is llama-server's: its form of the context error.
  server.route("POST", "/chat/completions", with_model(state, [](Exchange& e, ServedModel& m) {
                 try {
                   generate(e, m, Endpoint::chat);
                 } catch (const RequestError& err) {
                   if (err.code != "context_length_exceeded") throw;
                   reply_exceed_context(e, err);
                 }
               }));
  for (const std::string prefix : {"/v1", ""}) {
    server.route("GET", prefix + "/models", with_model(state, list_models));
    server.route("POST", prefix + "/chat/completions/input_tokens", with_model(state, count_input_tokens));
  }
}

}  // namespace cohort::server
