// Answering on an Exchange in the API's formats, and the boundary every
// route runs behind: whatever a handler throws becomes an error response
// (RequestError -> its status; cohort::Error -> 400, as the project's
// recoverable errors name bad input; anything else -> 500), so no request
// can crash the server or leave it without an answer.
//
// Thread safety: stateless; each call works on its own Exchange.
#pragma once

#include <functional>
#include <string>

#include "server/http_exchange.h"
#include "server/http_server.h"
#include "server/request_error.h"
#include "server/request_fields.h"
#include "server/served_model.h"

namespace cohort::server {

void reply_json(Exchange& exchange, int status, const Json& body);
// {"error": {message, type, param, code}} with the type for `status`.
void reply_error(Exchange& exchange, int status, const std::string& message, const std::string& param = "",
                 const std::string& code = "");
// llama-server's answer while the model loads:
// 503 {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}.
void reply_loading(Exchange& exchange);
// llama-server's answer for a feature the server was started without:
// 501 {"error": {"code": 501, "message", "type": "not_supported_error"}}.
void reply_not_supported(Exchange& exchange, const std::string& message);
// llama-server's answer on its own routes to a prompt the context cannot
// hold (`e` with code "context_length_exceeded"): 400 {"error": {"code":
// 400, "message", "type": "exceed_context_size_error", "n_prompt_tokens",
// "n_ctx"}}.
void reply_exceed_context(Exchange& exchange, const RequestError& e);

// The HttpServer's own error bodies (404, 405, 413, ...) in OpenAI's format.
ErrorBody openai_error_body(int status, const std::string& message);

// A handler that needs the loaded model: answers 503 while loading, and runs
// `body` behind the error boundary described above.
using ModelHandler = std::function<void(Exchange&, ServedModel&)>;
Handler with_model(ServingState& state, ModelHandler body);

}  // namespace cohort::server
