// Runs one submitted generation request to its HTTP answer.
//
// Non-streamed: waits for the request's events, checking every
// kClientPoll whether the client is still connected, and answers with the
// whole response once the last event arrives.
// Streamed: sends the SSE head at once (and, for chat, the role chunk),
// then one chunk per event that carries text or logprobs, the chunk with
// finish_reason, the usage chunk if asked for, and "data: [DONE]".
//
// Cancellation: when the client goes away (a write fails, or the socket
// reports it closed while waiting) or the server stops, the request is
// cancelled (RequestHandle::cancel) at once; the engine drops it at its
// next step. Since the wait is at most kClientPoll, a disconnect is seen
// within one engine step of any length above that.
//
// An engine-side error (the last event with `error` set) is a 500 with
// type server_error; in a stream, whose status is already sent, it is a
// data: {"error": ...} event and the stream ends without [DONE].
//
// Thread safety: runs on the handler's worker thread; the handle is the
// only object shared with the engine.
#pragma once

#include <chrono>
#include <optional>

#include "server/generation.h"
#include "server/http_exchange.h"
#include "server/openai_response.h"

namespace cohort::server {

inline constexpr std::chrono::milliseconds kClientPoll{50};

// The request's next event, or nullopt once the client is gone (the
// request is then cancelled); checks the client every kClientPoll.
std::optional<GenerationEvent> next_event(Exchange& exchange, RequestHandle& handle);

void answer_whole(Exchange& exchange, RequestHandle& handle, ResponseBuilder& builder);
void answer_streamed(Exchange& exchange, RequestHandle& handle, ResponseBuilder& builder);

}  // namespace cohort::server
