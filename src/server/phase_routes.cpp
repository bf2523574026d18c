// GET /v1/phase-events: the phase view's stream (phase_feed.h), as
// server-sent events, each one "data: <json>" line:
//   {"type":"hello", "model", "n_slots", "n_ctx", "n_batch", "policy",
//    "tg_quantum", "t_ms", "phase", "cohort", "queued", "blocked",
//    "slots": [{"slot", "id", "state", "n_prompt", "n_generated"}]}: once,
//    the server and the slots as /slots shows them now;
//   {"type":"step", ...}: one per engine step (frame_json), as it happens;
//   {"type":"lost", "frames": n}: the reader fell behind and n steps are
//    missing here.
// A comment line every kKeepAlive of silence keeps proxies from closing it.
// Off (501, as /slots) with --no-slots. The engine builds frames only while
// at least one such stream is open.
#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "server/api_reply.h"
#include "server/completion_session.h"
#include "server/routes.h"
#include "server/sse.h"

namespace cohort::server {
namespace {

constexpr auto kKeepAlive = std::chrono::seconds(15);

Json hello_json(const ServedModel& model, const PhaseFeed& feed) {
  const ServiceStats st = model.service->stats();
  const PhaseFeedInfo& info = feed.info();
  Json slots = Json::array();
  for (const ServiceStats::Slot& s : st.slots) {
    slots.push_back({{"slot", s.id},
                     {"id", s.busy ? static_cast<int64_t>(s.request) : int64_t{-1}},
                     {"state", s.state},
                     {"n_prompt", s.n_prompt},
                     {"n_generated", s.n_generated}});
  }
  return {{"type", "hello"},          {"model", model.id},
          {"n_slots", info.n_slots},  {"n_ctx", model.service->n_ctx()},
          {"n_batch", info.n_batch},  {"policy", info.policy},
          {"tg_quantum", info.tg_quantum}, {"t_ms", feed.now_ms()},
          {"phase", st.phase},        {"cohort", st.cohort_size},
          {"queued", st.requests_queued}, {"blocked", st.requests_blocked_by_phase},
          {"slots", std::move(slots)}};
}

void phase_events(Exchange& exchange, ServedModel& model) {
  PhaseFeed* feed = model.service->phase_feed();
  if (!model.slots_endpoint || feed == nullptr) {
    reply_not_supported(exchange, "This server does not support the phase events endpoint. Start it with `--slots`");
    return;
  }
  const PhaseFeed::Watch watch(*feed);  // from here on the engine builds frames
  exchange.add_header("Cache-Control", "no-cache");
  if (!exchange.begin_stream(200, "text/event-stream")) return;
  uint64_t next = feed->next_seq();
  if (!exchange.write(sse_json(hello_json(model, *feed)))) return;
  std::vector<PhaseFrame> frames;
  std::string batch;
  auto last_write = std::chrono::steady_clock::now();
  while (!exchange.client_gone()) {
    frames.clear();
    batch.clear();
    const uint64_t lost = feed->read(next, frames, kClientPoll);
    if (lost > 0) batch += sse_data(fmt::format(R"({{"type":"lost","frames":{}}})", lost));
    for (const PhaseFrame& f : frames) batch += sse_data(frame_json(f));
    const auto now = std::chrono::steady_clock::now();
    if (batch.empty()) {
      if (now - last_write < kKeepAlive) continue;
      batch = sse_comment("keep-alive");
    }
    if (!exchange.write(batch)) return;
    last_write = now;
  }
}

}  // namespace

void register_phase_routes(HttpServer& server, ServingState& state) {
  server.route("GET", "/v1/phase-events", with_model(state, phase_events));
  server.route("GET", "/phase-events", with_model(state, phase_events));
}

}  // namespace cohort::server
