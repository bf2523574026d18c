#include "server/api_reply.h"

#include <exception>
#include <new>

#include <fmt/format.h>

#include "common/error.h"
#include "server/openai_response.h"

namespace cohort::server {

void reply_json(Exchange& exchange, int status, const Json& body) {
  exchange.respond(status, dump(body), "application/json; charset=utf-8");
}

void reply_error(Exchange& exchange, int status, const std::string& message, const std::string& param,
                 const std::string& code) {
  reply_json(exchange, status, error_json(message, error_type(status), param, code));
}

void reply_loading(Exchange& exchange) {
  reply_json(exchange, 503,
             Json{{"error", {{"code", 503}, {"message", "Loading model"}, {"type", "unavailable_error"}}}});
}

void reply_not_supported(Exchange& exchange, const std::string& message) {
  reply_json(exchange, 501, Json{{"error", {{"code", 501}, {"message", message}, {"type", "not_supported_error"}}}});
}

void reply_exceed_context(Exchange& exchange, const RequestError& e) {
  reply_json(exchange, 400,
             Json{{"error",
                   {{"code", 400},
                    {"message", fmt::format("request ({} tokens) exceeds the available context size ({} tokens), "
                                            "try increasing it",
                                            e.n_prompt_tokens, e.n_ctx)},
                    {"type", "exceed_context_size_error"},
                    {"n_prompt_tokens", e.n_prompt_tokens},
                    {"n_ctx", e.n_ctx}}}});
}

ErrorBody openai_error_body(int status, const std::string& message) {
  return ErrorBody{dump(error_json(message, error_type(status))), "application/json; charset=utf-8"};
}

Handler with_model(ServingState& state, ModelHandler body) {
  return [&state, body = std::move(body)](Exchange& exchange) {
    ServedModel* model = state.model();
    if (model == nullptr) {
      reply_loading(exchange);
      return;
    }
    const HttpRequest& r = exchange.request();
    try {
      body(exchange, *model);
    } catch (const RequestError& e) {
      reply_error(exchange, e.status, e.what(), e.param, e.code);
    } catch (const Error& e) {
      reply_error(exchange, 400, e.what());
    } catch (const std::bad_alloc&) {
      fmt::print(stderr, "error: {} {}: out of memory\n", r.method, r.path);
      reply_error(exchange, 500, "out of memory");
    } catch (const std::exception& e) {
      fmt::print(stderr, "error: {} {}: {}\n", r.method, r.path, e.what());
      reply_error(exchange, 500, fmt::format("internal error: {}", e.what()));
    }
  };
}

}  // namespace cohort::server
