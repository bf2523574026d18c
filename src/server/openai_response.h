// The JSON objects of OpenAI's API that the server sends: text_completion,
// chat.completion, chat.completion.chunk (and text_completion chunks),
// usage, logprobs, and error bodies, in OpenAI's exact shapes:
//
//   {"id", "object", "created", "model", "system_fingerprint",
//    "choices": [{"index": 0, "text" | "message" | "delta", "logprobs",
//                 "finish_reason"}],
//    "usage": {"prompt_tokens", "completion_tokens", "total_tokens",
//              "prompt_tokens_details": {"cached_tokens"}}}
//
// Log-probabilities: completions use the legacy form {"tokens",
// "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"};
// chat uses {"content": [{"token", "logprob", "bytes", "top_logprobs":
// [{"token", "logprob", "bytes"}]}]}. A token's "token" is its text (bytes
// that are not valid UTF-8 print as U+FFFD; "bytes" has them exactly); a
// logprob of -inf prints as -9999.0, OpenAI's floor. text_offset counts
// Unicode characters of the generated text before the token.
//
// Full responses also carry llama-server's "timings" object.
// With n choices (request field n), each choice has its ResponseBuilder
// (its index, its text offsets); the whole answer joins their choices in
// index order and reports combined_usage().
// Thread safety: a ResponseBuilder belongs to one response (one thread).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/stop.h"
#include "server/generation.h"
#include "server/openai_request.h"
#include "server/reasoning.h"

namespace cohort::server {

// What every chunk of one response shares.
struct ResponseMeta {
  Endpoint endpoint = Endpoint::completions;
  std::string id;                  // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;             // unix seconds
  std::string model;
  std::string system_fingerprint;  // "" leaves the field out
  bool logprobs = false;           // choices carry logprobs (else null)
  bool include_usage = false;      // streamed chunks carry "usage": null, then a usage chunk
  // Set (request "verbose"): whole answers carry llama-server's debug object
  // "__verbose": {"prompt": this text, "content", "tokens_evaluated",
  // "tokens_predicted", "stop_type"}.
  std::optional<std::string> verbose_prompt;
  // Chat: the leading think block as "reasoning_content" (server/reasoning.h).
  ReasoningFormat reasoning = ReasoningFormat::none;
  bool thinking_open = false;  // the prompt opens the block
};

// The bytes of a token (for logprobs), e.g. Tokenizer::token_to_piece.
using TokenText = std::function<std::string(int32_t)>;

// llama-server's stop_type of a finish: "eos", "limit", "word" or "none".
const char* stop_type_name(engine::FinishReason reason);

// A fresh id: "cmpl-" or "chatcmpl-" and 24 random letters and digits.
std::string new_response_id(Endpoint endpoint);

// "usage" from the engine's counts.
Json usage_json(const Usage& usage);
// llama-server's "timings" from the engine's counts (and queue_ms): the
// generation rates are over the decode steps after the first token, which
// comes from the prompt's last step, as llama-server's (0 for one token).
// ref: llama.cpp tools/server/server-common.h (server_slot_stats::n_gen_steps).
Json timings_json(const Usage& usage);
// llama-server's "prompt_progress": {"total", "cache", "processed", "time_ms"}.
Json prompt_progress_json(const PromptProgress& progress);
// The "timings" of a progress report: the prompt so far, nothing generated.
Json progress_timings_json(const PromptProgress& progress);
// The usage of one response of several choices, as OpenAI counts it: the
// prompt (and its cached part) once, as the first choice saw it, and the
// completion tokens of every choice; the times are the longest of any
// choice, as the choices run side by side. REQUIRES: non-empty.
Usage combined_usage(const std::vector<Usage>& choices);

// {"error": {"message", "type", "param", "code"}} with null for empty param/code.
Json error_json(const std::string& message, const std::string& type, const std::string& param = "",
                const std::string& code = "");
// OpenAI's error type for a status: invalid_request_error (4xx),
// unavailable_error (503), server_error (other 5xx).
std::string error_type(int status);

// JSON text for the wire; invalid UTF-8 in strings becomes U+FFFD.
std::string dump(const Json& value);

class ResponseBuilder {
 public:
  // The chunks and answer of choice `index` of a response.
  ResponseBuilder(ResponseMeta meta, TokenText token_text, int index = 0);

  // Streaming, chat: the first chunk, delta {"role": "assistant", "content": ""}.
  Json role_chunk() const;
  // Streaming: a chunk with the text (and logprobs) of `tokens`.
  Json delta_chunk(const std::vector<GeneratedToken>& tokens);
  // Streaming: the chunk with finish_reason and an empty delta / text; it
  // carries llama-server's "timings" (queue wait included), as its last chunk does.
  // Text a stream held back (reasoning.h) goes out in its delta.
  Json finish_chunk(engine::FinishReason reason, const Usage& usage);
  // Streaming, include_usage: the last chunk, empty choices and usage.
  Json usage_chunk(const Usage& usage) const;
  // Streaming, return_progress: the role chunk (chat) or an empty text
  // (completions) with "prompt_progress" and "timings", as llama-server.
  Json progress_chunk(const PromptProgress& progress) const;

  // Non-streamed: the whole answer from every generated token.
  Json full_response(const std::vector<GeneratedToken>& tokens, engine::FinishReason reason,
                     const Usage& usage);

  const ResponseMeta& meta() const { return meta_; }

 private:
  Json envelope(bool chunk) const;
  Json choice(const ReasoningParts& text, const Json& logprobs, engine::FinishReason reason,
              bool chunk, bool first_delta) const;
  // Logprobs of `tokens`, advancing the running text offset; null when off.
  Json logprobs_json(const std::vector<GeneratedToken>& tokens);
  Json chat_logprob_entry(int32_t id, float logprob) const;

  ResponseMeta meta_;
  ReasoningSplit split_;     // the answer's text between content and reasoning_content
  TokenText token_text_;
  int index_ = 0;            // the choice's "index"
  int64_t text_offset_ = 0;  // characters generated before the next token
};

}  // namespace cohort::server
