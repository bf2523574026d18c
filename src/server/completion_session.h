// Runs the submitted generation requests of one response (one per choice,
// request field n) to its HTTP answer.
//
// Non-streamed: waits for the requests' events, checking every
// kClientPoll whether the client is still connected, and answers with the
// whole response once every choice's last event arrived: the choices in
// index order, usage and timings from combined_usage().
// Streamed: sends the SSE head at once (and, for chat, each choice's role
// chunk), then one chunk per event that carries text or logprobs, each
// choice's chunk with finish_reason as it ends (the choices interleave as
// their events come), the usage chunk if asked for, and "data: [DONE]";
// with return_progress, a progress chunk per report (see PromptProgress).
//
// Cancellation: when the client goes away (a write fails, or the socket
// reports it closed while waiting) or the server stops, every request of
// the response is cancelled (RequestHandle::cancel) at once; the engine
// drops them at its next step. Since the wait is at most kClientPoll, a
// disconnect is seen within one engine step of any length above that.
//
// An engine-side error (a last event with `error` set) is a 500 with type
// server_error, and the other choices are cancelled; in a stream, whose
// status is already sent, it is a data: {"error": ...} event and the
// stream ends without [DONE].
//
// Thread safety: runs on the handler's worker thread; the handles are the
// only objects shared with the engine.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "server/generation.h"
#include "server/http_exchange.h"
#include "server/openai_response.h"

namespace cohort::server {

inline constexpr std::chrono::milliseconds kClientPoll{50};

// The request's next event, or nullopt once the client is gone (the
// request is then cancelled); checks the client every kClientPoll.
std::optional<GenerationEvent> next_event(Exchange& exchange, RequestHandle& handle);

// One choice of a response: the request that generates it and the builder
// of its chunks (made with the choice's index).
struct Choice {
  std::shared_ptr<RequestHandle> handle;
  ResponseBuilder builder;
};

// REQUIRES: choices non-empty, choice i built with index i.
void answer_whole(Exchange& exchange, std::vector<Choice>& choices);
void answer_streamed(Exchange& exchange, std::vector<Choice>& choices);

}  // namespace cohort::server
