#include "server/completion_session.h"

#include <memory>
#include <optional>
#include <utility>
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

// The events of a response's choices, one at a time as they come (each
// choice's in order; the choices taken in turn, so that a fast one does not
// hold back the others' chunks). Requests not finished when it goes away
// are cancelled: a handler that returns early leaves none running.
class ChoiceEvents {
 public:
  explicit ChoiceEvents(std::vector<Choice>& choices)
      : choices_(choices), done_(choices.size(), false), signal_(std::make_shared<EventSignal>()) {
    for (Choice& c : choices_) c.handle->bind(signal_);
  }
  ~ChoiceEvents() {
    for (size_t i = 0; i < choices_.size(); ++i) {
      if (!done_[i]) choices_[i].handle->cancel();
    }
  }
  ChoiceEvents(const ChoiceEvents&) = delete;
  ChoiceEvents& operator=(const ChoiceEvents&) = delete;

  bool finished() const { return n_done_ == choices_.size(); }

  // The next event of a choice not done, with the choice's index; nullopt
  // once the client is gone. REQUIRES: !finished().
  std::optional<std::pair<size_t, GenerationEvent>> next(Exchange& exchange) {
    const size_t n = choices_.size();
    for (;;) {
      if (exchange.client_gone()) return std::nullopt;
      const uint64_t seen = signal_->count();  // before looking: a push after it ends the wait
      for (size_t k = 0; k < n; ++k) {
        const size_t i = (turn_ + k) % n;
        if (done_[i]) continue;
        if (std::optional<GenerationEvent> e = choices_[i].handle->try_next()) {
          turn_ = i + 1;
          if (e->done) {
            done_[i] = true;
            ++n_done_;
          }
          return std::make_pair(i, std::move(*e));
        }
      }
      signal_->wait(seen, kClientPoll);
    }
  }

 private:
  std::vector<Choice>& choices_;
  std::vector<bool> done_;
  size_t n_done_ = 0;
  size_t turn_ = 0;  // the choice looked at first next time
  std::shared_ptr<EventSignal> signal_;
};

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

void answer_whole(Exchange& exchange, std::vector<Choice>& choices) {
  ChoiceEvents events(choices);
  std::vector<std::vector<GeneratedToken>> tokens(choices.size());
  std::vector<GenerationEvent> last(choices.size());
  while (!events.finished()) {
    std::optional<std::pair<size_t, GenerationEvent>> next = events.next(exchange);
    if (!next) return;
    auto& [i, e] = *next;
    for (GeneratedToken& t : e.tokens) tokens[i].push_back(std::move(t));
    if (!e.done) continue;
    if (!e.error.empty()) {
      log_engine_error(choices[i].handle->id(), e.error);
      reply_error(exchange, 500, e.error);
      return;
    }
    last[i] = std::move(e);
  }
  Json answer = choices[0].builder.full_response(tokens[0], last[0].finish, last[0].usage);
  if (choices.size() > 1) {
    std::vector<Usage> usages = {last[0].usage};
    for (size_t i = 1; i < choices.size(); ++i) {
      Json other = choices[i].builder.full_response(tokens[i], last[i].finish, last[i].usage);
      answer["choices"].push_back(std::move(other["choices"][0]));
      usages.push_back(last[i].usage);
    }
    const Usage all = combined_usage(usages);
    answer["usage"] = usage_json(all);
    answer["timings"] = timings_json(all);
  }
  reply_json(exchange, 200, answer);
}

void answer_streamed(Exchange& exchange, std::vector<Choice>& choices) {
  ChoiceEvents events(choices);  // cancels what is left when this returns early
  auto send = [&](const std::string& data) { return exchange.write(data); };
  if (!exchange.begin_stream(200, "text/event-stream")) return;
  const ResponseMeta& meta = choices[0].builder.meta();
  if (meta.endpoint == Endpoint::chat) {
    for (Choice& c : choices) {
      if (!send(sse_json(c.builder.role_chunk()))) return;
    }
  }
  std::vector<Usage> usages(choices.size());
  while (!events.finished()) {
    std::optional<std::pair<size_t, GenerationEvent>> next = events.next(exchange);
    if (!next) return;
    auto& [i, e] = *next;
    ResponseBuilder& builder = choices[i].builder;
    if (e.progress) {
      if (!send(sse_json(builder.progress_chunk(*e.progress)))) return;
      continue;
    }
    if (event_has_output(e, meta.logprobs) && !send(sse_json(builder.delta_chunk(e.tokens)))) return;
    if (!e.done) continue;
    if (!e.error.empty()) {
      log_engine_error(choices[i].handle->id(), e.error);
      send(sse_json(error_json(e.error, error_type(500))));
      return;
    }
    if (!send(sse_json(builder.finish_chunk(e.finish, e.usage)))) return;
    usages[i] = e.usage;
  }
  if (meta.include_usage && !send(sse_json(choices[0].builder.usage_chunk(combined_usage(usages))))) return;
  send(sse_done());
  exchange.end_stream();
}

}  // namespace cohort::server
