// llama-server's native completion route, POST /completion (and /completions
// without /v1): the request of parse_native_completion_request, answered in
// llama-server's form rather than OpenAI's.
//
// Whole answer: {"index", "content", "tokens" (ids when "return_tokens"),
// "id_slot", "stop": true, "model", "tokens_predicted", "tokens_evaluated",
// "generation_settings" (the sampling values used, logit_bias as
// [{"bias", "token"}] with ignore_eos's -inf biases as null), "prompt" (its text),
// "has_new_line", "truncated": false, "stop_type" ("eos", "limit", "word",
// "none"), "stopping_word", "tokens_cached", "timings", and
// "completion_probabilities" when n_probs > 0 (with post_sampling_probs:
// "prob" and "top_probs" instead of "logprob" and "top_logprobs"; unlike
// llama-server's, these are the model's probabilities before the sampling
// chain, not renormalised after top-k/top-p)}; with
// response_fields, only the fields at those paths ("generation_settings/
// n_predict"), keyed by the path.
// Streamed: SSE "data: {...}" chunks of {"index", "content", "tokens" (the
// chunk's ids, with or without return_tokens, as llama-server),
// "stop": false, "id_slot", "tokens_predicted", "tokens_evaluated"} (with
// "completion_probabilities" for their tokens), then the whole answer's
// fields with empty content and tokens; no "data: [DONE]", as llama-server.
// With return_progress, empty chunks with "prompt_progress" and "timings"
// report the prompt's computation (see PromptProgress).
// ref: llama.cpp tools/server/server-task.cpp (to_json_non_oaicompat).
//
// A prompt that does not fit the context is llama-server's 400 {"error":
// {"code", "message", "type": "exceed_context_size_error", "n_prompt_tokens",
// "n_ctx"}}; other errors are as on the OpenAI routes. Cancellation and
// engine errors as in completion_session.h.
// Thread safety: runs on the handler's worker thread.
#pragma once

#include "server/http_exchange.h"
#include "server/served_model.h"

namespace cohort::server {

void native_completion(Exchange& exchange, ServedModel& model);

}  // namespace cohort::server
