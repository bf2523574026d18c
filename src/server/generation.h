// The boundary between the HTTP layer and the engine: a generation request
// in token ids, the stream of events it produces, and the service that runs
// requests (the engine loop: scheduler + decoder + samplers).
//
// Threads: HTTP handler threads call GenerationService::submit and read
// their RequestHandle; one engine thread produces events. RequestHandle is
// the only shared object and is internally synchronised.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "engine/logprobs.h"
#include "engine/pooling.h"
#include "engine/sampler.h"
#include "engine/stop.h"
#include "server/phase_feed.h"

namespace cohort::server {

struct GenerationRequest {
  std::vector<int32_t> prompt;        // token ids; non-empty
  engine::SamplingParams sampling;
  int max_tokens = -1;                // -1: until end of generation or the context is full
  std::vector<std::string> stop;      // stop strings
  int n_logprobs = -1;                // -1: no logprobs; 0..20: chosen token plus top-n
  bool cache_prompt = true;           // reuse a cached prefix of the prompt
  bool ignore_eos = false;
  bool return_progress = false;       // progress events while the prompt is computed
  // With --context-shift: the leading prompt tokens a shift keeps (-1: the
  // whole prompt; unset: the server's --keep), a BOS counted beside them as
  // llama-server does; and how many positions a shift drops (0: half).
  std::optional<int> n_keep;
  int n_discard = 0;
  // An embedding: the prompt is prefilled and nothing is generated (no
  // sampling; the fields above are unused); the final event carries the
  // final hidden states of the prompt rows `pooling` reads. The prompt may
  // fill the slot's whole context.
  bool embedding = false;
  engine::Pooling pooling = engine::Pooling::mean;
};

struct GeneratedToken {
  int32_t id = 0;
  std::string text;                   // text released by this token (whole UTF-8; may be "")
  float logprob = 0.0f;               // when n_logprobs >= 0
  std::vector<engine::TokenLogprob> top;
};

struct Usage {
  int prompt_tokens = 0;
  int cached_tokens = 0;              // prompt tokens reused from the KV cache
  int completion_tokens = 0;
  double queue_ms = 0;                // submit -> first prefill step
  double prompt_ms = 0;               // first prefill step -> first token
  double generation_ms = 0;           // first token -> last token
};

// How far a request's prompt is (return_progress), as llama-server's
// prompt_progress counts it: the first report comes at admission, with
// processed == cache; then one after each step that computed a chunk of it,
// the last with processed == total, before the first token.
struct PromptProgress {
  int total = 0;                      // prompt tokens
  int cache = 0;                      // of those, reused from the KV cache
  int processed = 0;                  // in the KV cache now (cache included)
  double time_ms = 0;                 // first prefill step -> now (0 before it)
};

// One step's output for one request, in order. The last event has done set.
struct GenerationEvent {
  std::optional<PromptProgress> progress;  // set: a progress report, nothing else
  std::vector<GeneratedToken> tokens;
  bool done = false;
  engine::FinishReason finish = engine::FinishReason::none;  // when done
  std::string error;                  // when done and the request failed (engine-side)
  std::string stop_word;              // when done by a stop string: the one that matched
  bool truncated = false;             // when done: the context filled (shifted, or ended by it)
  Usage usage;                        // filled when done
  // When done, an embedding request: [n_rows, n_embd] hidden states after
  // the output norm, the rows engine::pooling_reads_row chose, in order.
  std::vector<float> hidden;
  int n_embd = 0;
};

// Wakes a thread that waits on several RequestHandles at once (the choices
// of one response): every event pushed on a handle bound to it counts one.
// Thread-safe.
class EventSignal {
 public:
  uint64_t count() const;
  // Returns once count() differs from `seen`, or after `timeout`.
  void wait(uint64_t seen, std::chrono::milliseconds timeout);
  void notify();

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t count_ = 0;  // GUARDED_BY(mutex_)
};

// A submitted request as seen from its HTTP thread. Thread-safe.
class RequestHandle {
 public:
  explicit RequestHandle(uint64_t id) : id_(id) {}
  uint64_t id() const { return id_; }

  // HTTP side: the next event, waiting at most `timeout`; nullopt on timeout.
  std::optional<GenerationEvent> next(std::chrono::milliseconds timeout);
  // HTTP side: the next event if one is there, without waiting.
  std::optional<GenerationEvent> try_next();
  // HTTP side: every later push notifies `signal`; so does this call when
  // events are already waiting, so none is missed.
  void bind(std::shared_ptr<EventSignal> signal);
  // HTTP side: the client is gone or gave up; the engine drops the request
  // at its next step (within one step) and frees its slot and KV.
  void cancel();
  bool cancelled() const;

  // Engine side.
  void push(GenerationEvent event);

 private:
  const uint64_t id_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<GenerationEvent> events_;  // GUARDED_BY(mutex_)
  bool cancelled_ = false;              // GUARDED_BY(mutex_)
  std::shared_ptr<EventSignal> signal_;  // GUARDED_BY(mutex_)
};

// Counters and gauges for /metrics, /slots and /props.
struct ServiceStats {
  uint64_t prompt_tokens_total = 0;
  uint64_t generated_tokens_total = 0;
  uint64_t requests_total = 0;
  // What llama-server's /metrics reports too: prompt tokens reused from the
  // cache; seconds spent on prompts (a request's first step to its first
  // token) and on generation (first token to last), over finished requests;
  // decoder steps and the slots busy in them, summed; the longest request
  // seen (prompt plus generated tokens).
  uint64_t prompt_tokens_cached_total = 0;
  double prompt_seconds_total = 0;
  uint64_t prompt_tokens_timed = 0;       // the prompt tokens computed by those requests
  double predicted_seconds_total = 0;
  uint64_t predicted_tokens_timed = 0;    // the tokens after the first of those requests
  uint64_t n_decode_total = 0;
  uint64_t n_busy_slots_total = 0;
  uint64_t n_tokens_max = 0;
  // Structured output: the host's time computing grammar masks for the
  // device's best-logit selection (EngineLoop::build_masks), and the steps
  // that needed them; and every step's time from its plan to its sampled
  // tokens, to see the masks' share.
  double grammar_mask_seconds_total = 0;
  uint64_t grammar_mask_steps_total = 0;
  double step_seconds_total = 0;
  int requests_processing = 0;
  int requests_queued = 0;
  int requests_blocked_by_phase = 0;  // queued although a slot is free
  std::string phase = "idle";         // idle | prefill | decode
  int cohort_size = 0;
  int n_slots = 0;
  int n_ctx = 0;
  // histograms: cumulative counts per upper bound (seconds), Prometheus style
  std::vector<double> latency_buckets;         // upper bounds, seconds
  std::vector<uint64_t> ttft_counts;           // [latency_buckets.size() + 1] (+Inf last)
  double ttft_sum = 0;
  std::vector<uint64_t> itl_counts;            // inter-token latency
  double itl_sum = 0;
  struct Slot {
    int id = 0;
    bool busy = false;
    uint64_t request = 0;
    std::string state;                // QUEUED PREFILL READY DECODE ...
    int n_prompt = 0, n_generated = 0;
  };
  std::vector<Slot> slots;
};

class GenerationService {
 public:
  virtual ~GenerationService() = default;
  // Queues a request. Throws cohort::Error for one that can never run (for
  // example a prompt that does not fit the context), naming the problem.
  virtual std::shared_ptr<RequestHandle> submit(GenerationRequest request) = 0;
  virtual ServiceStats stats() const = 0;
  virtual int n_ctx() const = 0;     // context capacity of one request, in tokens
  // Where the model runs and the memory it holds there.
  virtual backend::MemoryUse memory() const = 0;
  // The steps as they happen, for the phase view; nullptr where the
  // service has none.
  virtual PhaseFeed* phase_feed() { return nullptr; }
};

}  // namespace cohort::server
