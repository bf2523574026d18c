// Per-slot generation state of the engine loop: the request, its token
// stream (sampler, detokenizer and stop checker), the kept logits of a READY
// member, and the timings that feed usage and latency histograms; and what
// a step leaves to deliver while the next one computes.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/token_stream.h"
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
  engine::TokenStream stream;       // its last token is the input of the next decode row
  std::vector<float> kept_logits;   // [n_vocab] while READY
  std::vector<engine::TokenLogit> kept_best;  // or its best logits (Batch::best_k), while READY
  std::vector<float> hidden;        // an embedding's hidden-state rows so far [n, n_embd]
  int n_cached = 0;
  bool done = false;                // the final event was pushed
  bool shifted = false;             // its context was shifted (--context-shift)
  Clock::time_point submitted, first_step, first_token, last_token_time;
  Clock::time_point previous_token_time;  // of the token before the last one (the phase view's gap)
  bool started = false;             // first_step set
};

// An event for a request's handle, held until the engine loop delivers it
// (after it has handed the next step to the decoder). A token that wants
// log-probabilities gets them at delivery, from `logits` (a row of the
// decoder's logits, valid through the next step) or from `kept` (the logits
// a READY member kept, moved here).
struct Delivery {
  std::shared_ptr<RequestHandle> handle;
  GenerationEvent event;
  int n_logprobs = -1;             // -1: none; else event.tokens[0] wants them
  std::span<const float> logits;
  std::vector<float> kept;
  double ttft = -1, itl = -1;      // seconds, to add to the histograms; -1: none
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
