#include "server/completion_session.h"

#include <optional>
#include <vector>

#include <fmt/format.h>

#include "server/api_reply.h"
#include "server/sse.h"

namespace cohort::server {
namespace {


bool event_has_output(const GenerationEvent& e, bool logprobs) {
  if (logprobs && !e.tokens.empty()) return true;
  for (const GeneratedToken& t : e.tokens) {
    if (!t.text.empty()) return true;
  }
  return false;
}

void log_engine_error(uint64_t id, const std::string& error) {
  fmt::print(stderr, "error: request {}: {}\n", id, error);
}

}  // namespace

std::optional<GenerationEvent> next_event(Exchange& exchange, RequestHandle& handle) {
  for (;;) {
    if (exchange.client_gone()) {
      handle.cancel();
      return std::nullopt;
    }
    if (std::optional<GenerationEvent> e = handle.next(kClientPoll)) return e;
  }
}

void answer_whole(Exchange& exchange, RequestHandle& handle, ResponseBuilder& builder) {
  std::vector<GeneratedToken> tokens;
  for (;;) {
    std::optional<GenerationEvent> e = next_event(exchange, handle);
    if (!e) return;
    for (GeneratedToken& t : e->tokens) tokens.push_back(std::move(t));
    if (!e->done) continue;
    if (!e->error.empty()) {
      log_engine_error(handle.id(), e->error);
      reply_error(exchange, 500, e->error);
      return;
    }
    reply_json(exchange, 200, builder.full_response(tokens, e->finish, e->usage));
    return;
  }
}

void answer_streamed(Exchange& exchange, RequestHandle& handle, ResponseBuilder& builder) {
  auto send = [&](const std::string& data) {
    if (exchange.write(data)) return true;
    handle.cancel();
    return false;
  };
  if (!exchange.begin_stream(200, "text/event-stream")) {
    handle.cancel();
    return;
  }
  if (builder.meta().endpoint == Endpoint::chat && !send(sse_json(builder.role_chunk()))) return;
  for (;;) {
    std::optional<GenerationEvent> e = next_event(exchange, handle);
    if (!e) return;
    if (event_has_output(*e, builder.meta().logprobs) && !send(sse_json(builder.delta_chunk(e->tokens)))) {
      return;
    }
    if (!e->done) continue;
    if (!e->error.empty()) {
      log_engine_error(handle.id(), e->error);
      send(sse_json(error_json(e->error, error_type(500))));
      return;
    }
    if (!send(sse_json(builder.finish_chunk(e->finish, e->usage)))) return;
    if (builder.meta().include_usage && !send(sse_json(builder.usage_chunk(e->usage)))) return;
    send(sse_done());
    exchange.end_stream();
    return;
  }
}

}  // namespace cohort::server
