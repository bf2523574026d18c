#include "server/phase_feed.h"

#include <iterator>
#include <utility>

#include <fmt/format.h>

namespace cohort::server {

const char* activity_name(SlotActivity a) {
  switch (a) {
    case SlotActivity::kIdle: return "idle";
    case SlotActivity::kPrefill: return "prefill";
    case SlotActivity::kWait: return "wait";
    case SlotActivity::kReady: return "ready";
    case SlotActivity::kDecode: return "decode";
    case SlotActivity::kParked: return "parked";
  }
  return "idle";
}

// Numbers and fixed ASCII names only, so formatted by hand as the batch
// trace is. Times in milliseconds with 3 decimals; -1 means "none".
std::string frame_json(const PhaseFrame& f) {
  std::string s;
  auto out = std::back_inserter(s);
  fmt::format_to(out,
                 "{{\"type\":\"step\",\"seq\":{},\"step\":{},\"t_ms\":{:.3f},\"step_ms\":{:.3f},\"phase\":\"{}\","
                 "\"cohort\":{},\"queued\":{},\"blocked\":{},\"parked\":{},\"slots\":[",
                 f.seq, f.step, f.t_ms, f.step_ms, f.phase, f.cohort_size, f.n_queued, f.n_blocked, f.n_parked);
  for (size_t i = 0; i < f.slots.size(); ++i) {
    const PhaseSlot& p = f.slots[i];
    fmt::format_to(out,
                   "{}{{\"slot\":{},\"id\":{},\"state\":\"{}\",\"n\":{},\"n_prompt\":{},\"n_prefilled\":{},"
                   "\"n_generated\":{},\"ttft_ms\":{:.3f},\"gap_ms\":{:.3f},\"ended\":{}}}",
                   i ? "," : "", i, p.request, activity_name(p.activity), p.n_tokens, p.n_prompt, p.n_prefilled,
                   p.n_generated, p.ttft_ms, p.gap_ms, p.ended ? "true" : "false");
  }
  s += "],\"queue\":[";
  for (size_t i = 0; i < f.queued.size(); ++i) fmt::format_to(out, "{}{}", i ? "," : "", f.queued[i]);
  s += "],\"admitted\":[";
  for (size_t i = 0; i < f.admitted.size(); ++i) fmt::format_to(out, "{}{}", i ? "," : "", f.admitted[i]);
  s += "],\"ended\":[";
  for (size_t i = 0; i < f.ended.size(); ++i) {
    fmt::format_to(out, "{}{{\"id\":{},\"reason\":\"{}\"}}", i ? "," : "", f.ended[i].request, f.ended[i].reason);
  }
  s += "]}";
  return s;
}

PhaseFeed::PhaseFeed(PhaseFeedInfo info)
    : info_(std::move(info)), start_(std::chrono::steady_clock::now()), ring_(kRingFrames) {}

double PhaseFeed::now_ms() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
}

void PhaseFeed::publish(const PhaseFrame& frame) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    PhaseFrame& dst = ring_[n_published_ % kRingFrames];
    // Member by member, so that the vectors keep their capacity: after the
    // ring's first lap, publishing allocates nothing.
    dst.seq = ++n_published_;
    dst.step = frame.step;
    dst.t_ms = frame.t_ms;
    dst.step_ms = frame.step_ms;
    dst.phase = frame.phase;
    dst.cohort_size = frame.cohort_size;
    dst.n_queued = frame.n_queued;
    dst.n_blocked = frame.n_blocked;
    dst.n_parked = frame.n_parked;
    dst.slots.assign(frame.slots.begin(), frame.slots.end());
    dst.queued.assign(frame.queued.begin(), frame.queued.end());
    dst.admitted.assign(frame.admitted.begin(), frame.admitted.end());
    dst.ended.assign(frame.ended.begin(), frame.ended.end());
  }
  published_.notify_all();
}

uint64_t PhaseFeed::next_seq() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return n_published_ + 1;
}

uint64_t PhaseFeed::read(uint64_t& next, std::vector<PhaseFrame>& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  published_.wait_for(lock, timeout, [&] { return n_published_ >= next; });
  uint64_t lost = 0;
  const uint64_t oldest = n_published_ >= kRingFrames ? n_published_ - kRingFrames + 1 : 1;
  if (next < oldest) {
    lost = oldest - next;
    next = oldest;
  }
  for (; next <= n_published_; ++next) out.push_back(ring_[(next - 1) % kRingFrames]);
  return lost;
}

}  // namespace cohort::server
