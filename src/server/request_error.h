// A request the server refuses: an HTTP status (4xx for bad input) and the
// OpenAI error fields. Thrown by request parsing and caught at the route
// boundary, which turns it into {"error": {message, type, param, code}}.
#pragma once

#include <stdexcept>
#include <string>

namespace cohort::server {

class RequestError : public std::runtime_error {
 public:
  RequestError(int http_status, const std::string& message, std::string field = "",
               std::string error_code = "")
      : std::runtime_error(message),
        status(http_status),
        param(std::move(field)),
        code(std::move(error_code)) {}

  int status;          // 400, 404, 413, ...
  std::string param;   // the request field at fault, "" for none
  std::string code;    // OpenAI's machine-readable code ("context_length_exceeded"), "" for none
  // With code "context_length_exceeded": the prompt's tokens and the context
  // (llama-server's native routes report both).
  int n_prompt_tokens = 0;
  int n_ctx = 0;
};

}  // namespace cohort::server
