// PhaseFeed: what the engine loop did in each step, for watchers of the
// phase view (GET /v1/phase-events): per slot what it did (prefilled,
// waited at the barrier, decoded, was parked), the phase and cohort, the
// queue and the requests the phase holds back, and the TTFT or
// inter-token gap of each token sampled.
//
// Cost: the engine thread asks watched() once per step, a relaxed load of
// a counter; with no watcher it does nothing else. With watchers it fills
// one PhaseFrame (a few dozen bytes per slot, in buffers that keep their
// capacity) and copies it into a ring of the last kRingFrames frames under
// a mutex, then wakes the watchers; formatting (frame_json) happens on the
// watchers' threads. A watcher that falls more than the ring behind loses
// the oldest frames and is told how many.
//
// Thread safety: publish() from one thread (the engine's); watch(),
// read() and the rest from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace cohort::server {

// What a slot did in a step, as the phase view colours it.
enum class SlotActivity : uint8_t {
  kIdle,     // no request
  kPrefill,  // computed prompt tokens in this step
  kWait,     // in PREFILL, no row this step (serial: another member's turn)
  kReady,    // prompt done, waiting at the barrier (READY)
  kDecode,   // sampled a token in this step (a decode row, or its first token)
  kParked,   // DECODE, held out while a PP phase runs (--tg-quantum)
};
const char* activity_name(SlotActivity a);  // "idle", "prefill", "wait", "ready", "decode", "parked"

struct PhaseSlot {
  int64_t request = -1;     // the request's id (submission order), -1 when idle
  SlotActivity activity = SlotActivity::kIdle;
  int n_tokens = 0;         // tokens of its row in this step (0: no row)
  int n_prompt = 0;
  int n_prefilled = 0;      // prompt positions in the KV cache after this step
  int n_generated = 0;      // tokens sampled so far
  double ttft_ms = -1;      // its first token came in this step: submission -> now
  double gap_ms = -1;       // a later token came in this step: the gap since the one before
  bool ended = false;       // its last token came in this step (or it failed)
};

struct PhaseEnding {
  int64_t request = -1;
  const char* reason = "";  // sched::reason_name (static text)
};

struct PhaseFrame {
  uint64_t seq = 0;         // set by publish(): 1, 2, ...
  int64_t step = -1;        // the batch trace's step, -1 for a step without work
  double t_ms = 0;          // when the step ended, since the feed was made
  double step_ms = 0;       // how long the step took (plan to sampled tokens)
  const char* phase = "idle";  // sched::phase_label (static text): idle, prefill, decode, mixed
  int cohort_size = 0;
  int n_queued = 0;         // waiting for a slot
  int n_blocked = 0;        // of those, held back by the phase although a slot is free
  int n_parked = 0;
  std::vector<PhaseSlot> slots;        // [n_slots]
  std::vector<int64_t> queued;         // ids of queued requests, oldest first (at most kMaxQueuedIds)
  std::vector<int64_t> admitted;       // entered a slot at this step
  std::vector<PhaseEnding> ended;      // left at this step's plan (cancelled, no KV room, ...)
};

// What stays the same for the feed's life, for the stream's first event.
struct PhaseFeedInfo {
  int n_slots = 1;
  int n_batch = 0;           // -b
  std::string policy;        // --phase-policy
  int tg_quantum = 0;        // --tg-quantum
};

// The frame as one line of JSON (see phase_routes.cpp for the stream).
std::string frame_json(const PhaseFrame& frame);

class PhaseFeed {
 public:
  static constexpr size_t kRingFrames = 1024;
  static constexpr size_t kMaxQueuedIds = 32;

  explicit PhaseFeed(PhaseFeedInfo info = {});
  PhaseFeed(const PhaseFeed&) = delete;
  PhaseFeed& operator=(const PhaseFeed&) = delete;

  const PhaseFeedInfo& info() const { return info_; }

  // Whether anyone watches. Relaxed: a watcher that arrives during a step
  // may miss that step's frame, nothing else.
  bool watched() const { return n_watchers_.load(std::memory_order_relaxed) > 0; }
  // Copies `frame` into the ring, numbering it, and wakes the readers.
  void publish(const PhaseFrame& frame);
  // Milliseconds since the feed was made (PhaseFrame::t_ms).
  double now_ms() const;

  // Counts a watcher while it lives.
  class Watch {
   public:
    explicit Watch(PhaseFeed& feed) : feed_(feed) { feed_.n_watchers_.fetch_add(1, std::memory_order_relaxed); }
    ~Watch() { feed_.n_watchers_.fetch_sub(1, std::memory_order_relaxed); }
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    PhaseFeed& feed_;
  };

  // The seq the next published frame will get.
  uint64_t next_seq() const;
  // Appends the frames numbered `next` and later to `out` and advances
  // `next` past them, waiting up to `timeout` for one when there is none.
  // Returns how many frames from `next` on were already overwritten
  // (the reader fell more than kRingFrames behind).
  uint64_t read(uint64_t& next, std::vector<PhaseFrame>& out, std::chrono::milliseconds timeout);

 private:
  const PhaseFeedInfo info_;
  const std::chrono::steady_clock::time_point start_;
  std::atomic<int> n_watchers_{0};
  mutable std::mutex mutex_;
  std::condition_variable published_;
  std::vector<PhaseFrame> ring_;  // [kRingFrames]; frame seq s at (s - 1) % kRingFrames. GUARDED_BY(mutex_)
  uint64_t n_published_ = 0;      // GUARDED_BY(mutex_)
};

}  // namespace cohort::server
