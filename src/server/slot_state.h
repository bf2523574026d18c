// Per-slot generation state of the engine loop: the request, its sampler,
// detokenizer and stop checker, the kept logits of a READY member, and the
// timings that feed usage and latency histograms.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "engine/stop.h"
#include "sched/request.h"
#include "server/generation.h"
#include "tokenizer/detokenizer.h"

namespace cohort::server {

using Clock = std::chrono::steady_clock;

struct SlotState {
  SlotState(std::shared_ptr<RequestHandle> h, GenerationRequest r, sched::RequestId request_id,
            int n_vocab, int n_ctx, tokenizer::Detokenizer d, engine::StopParams stop_params);

  std::shared_ptr<RequestHandle> handle;
  GenerationRequest request;
  sched::RequestId id;
  engine::Sampler sampler;
  tokenizer::Detokenizer detok;
  engine::StopChecker stop;
  std::vector<float> kept_logits;   // [n_vocab] while READY
  int32_t last_token = -1;          // input of the next decode row
  int n_cached = 0;
  bool done = false;                // the final event was pushed
  Clock::time_point submitted, first_step, first_token, last_token_time;
  bool started = false;             // first_step set
};

// TTFT and inter-token-latency histograms (Prometheus buckets, seconds).
struct LatencyHistograms {
  LatencyHistograms();
  void add_ttft(double seconds);
  void add_itl(double seconds);
  void fill(ServiceStats& stats) const;

  std::vector<double> bounds;
  std::vector<uint64_t> ttft, itl;  // [bounds.size() + 1], last is +Inf
  double ttft_sum = 0, itl_sum = 0;
};

}  // namespace cohort::server
