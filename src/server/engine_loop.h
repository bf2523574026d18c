// The engine loop behind `cohort serve`: one thread that turns the
// scheduler's plans into batches for the decoder, samples, detokenizes and
// checks stop conditions per slot, and streams events to the requests'
// handles. It is the GenerationService the HTTP layer talks to.
//
// A step: plan, build the batch, submit it to the decoder; while it
// computes, deliver the previous step's events (log-probabilities,
// counters, the pushes that wake the HTTP threads) and forward the
// handles' cancellations to the scheduler; then wait, sample each
// slot's token and check its stop conditions, so that the scheduler knows
// before the next plan which requests ended (a stop string never costs a
// wasted row). Every event goes through the outbox, so a request's events
// keep their order.
//
// Context: like llama-server, each slot gets n_ctx / n_slots positions (with
// kv_unified, all n_ctx of the shared cache); a prompt must leave room for
// at least one generated token, and generation ends with finish reason
// "length" when the slot's context is full.
//
// Embeddings (GenerationRequest::embedding): the scheduler runs the request
// as prompt-only work; its prompt rows want hidden states instead of
// logits, which the loop collects step by step into the slot, and the
// request's final event, made in the step of its last chunk, carries them.
//
// The phase view (phase_feed.h): while someone watches, each step that the
// batch trace would record also becomes a PhaseFrame, built after the step
// from the plan and the slots; with no watcher, a step costs one relaxed
// load more.
//
// Thread safety: submit(), stats() and phase_feed() from any thread;
// everything else runs on the engine thread, which the constructor starts and the destructor
// joins.
#pragma once

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/decoder.h"
#include "model/model.h"
#include "sched/batch_trace.h"
#include "sched/kv_room.h"
#include "sched/scheduler.h"
#include "server/generation.h"
#include "server/slot_state.h"
#include "tokenizer/tokenizer.h"

namespace cohort::server {

struct EngineOptions {
  engine::DecoderOptions decoder;
  sched::SchedulerOptions scheduler;
  std::string trace_path;  // --trace-batches; empty: no trace
  // --kv-unified: a slot's context is the whole cache (-c), which the slots
  // share, instead of -c / slots; a request that finds no room left ends
  // with a "context size has been exceeded" error, as llama-server's.
  bool kv_unified = false;
  // --context-shift: a generation that fills its slot's context drops half
  // of it after the kept tokens (--keep, or the request's n_keep) and goes
  // on (sched::ContextShift); off, it ends with "length", as llama-server.
  bool context_shift = false;
  int n_keep = 0;  // --keep: -1 keeps the whole prompt
  // A pause after every step with work (COHORT_STEP_DELAY_MS; 0: none). For
  // tests only: a GPU runs a tiny model's step in about a millisecond, faster
  // than the serving tests' polls of the batch trace, so they pace it to the
  // CPU's speed to see the states they wait for (a request decoding, another
  // blocked, a member READY at the barrier).
  std::chrono::milliseconds step_delay{0};
  // A step whose sampled and kept rows all sample from their best logits
  // (Sampler::best_needed; no logprobs) asks the decoder for those instead
  // of whole rows (Batch::best_k). COHORT_BEST_LOGITS=0 turns it off, to
  // measure the difference.
  bool best_logits = true;
};

class EngineLoop final : public GenerationService {
 public:
  // `model` and `tokenizer` must outlive the loop. Throws cohort::Error for
  // invalid options or an unwritable trace file.
  EngineLoop(const model::Model& model, const tokenizer::Tokenizer& tokenizer,
             const EngineOptions& options);
  ~EngineLoop() override;

  std::shared_ptr<RequestHandle> submit(GenerationRequest request) override;
  ServiceStats stats() const override;
  int n_ctx() const override { return n_ctx_slot_; }
  backend::MemoryUse memory() const override { return decoder_.memory(); }
  PhaseFeed* phase_feed() override { return &phase_feed_; }

 private:
  struct Pending {  // submitted, not yet in a slot
    std::shared_ptr<RequestHandle> handle;
    GenerationRequest request;
    std::chrono::steady_clock::time_point submitted;
  };

  void run();
  void forward_cancellations();
  void apply_endings(const sched::BatchPlan& plan);
  void apply_admissions(const sched::BatchPlan& plan);
  void execute(const sched::BatchPlan& plan);
  void build_batch(const sched::BatchPlan& plan);
  // The Batch::best_k of the step just built: what its sampled and kept
  // rows need, or 0 where one needs its whole row.
  int best_k(const sched::BatchPlan& plan) const;
  // Batch::token_masks of the step just built when a row that wants logits
  // is under a grammar and best_k > 0: each row's grammar mask (all ones
  // for the others), so that its best logits are the allowed ones.
  void build_masks(const sched::BatchPlan& plan);
  void sample_slot(int slot, std::span<const float> logits, std::vector<float> kept,
                   std::span<const engine::TokenLogit> best, sched::StepResult& result);
  void collect_hidden(const sched::PlanRow& row, std::span<const float> hidden);
  void deliver();
  void count_step();
  void add_usage(const Usage& usage);
  void publish_slots();
  void publish_phase(const sched::BatchPlan& plan, Clock::time_point step_start);
  PhaseSlot phase_slot(const sched::BatchPlan& plan, int slot) const;
  void finish(SlotState& s, engine::FinishReason reason, const std::string& error);
  void report_progress(const SlotState& s, int processed);
  std::string end_message(sched::EndReason reason) const;
  std::span<const int32_t> prompt_of(sched::RequestId id) const;
  sched::RequestSpec spec_of(const GenerationRequest& request) const;

  const model::Model& model_;
  const tokenizer::Tokenizer& tokenizer_;
  EngineOptions options_;
  int n_ctx_slot_;
  engine::Decoder decoder_;
  sched::PagedKvRoom kv_room_;
  sched::Scheduler scheduler_;
  std::ofstream trace_file_;
  std::optional<sched::BatchTrace> trace_;
  std::vector<int32_t> eog_tokens_;

  // Engine thread only.
  std::vector<std::optional<SlotState>> slots_;  // [n_slots]
  engine::Batch batch_;
  std::vector<int> output_row_;                  // [n_slots] logits row of the slot, or -1
  std::vector<std::pair<int, int>> hidden_rows_; // [n_slots] first hidden row of the slot and how many
  sched::StepResult result_;
  std::vector<Delivery> outbox_;                 // events made, not yet pushed

  mutable std::mutex mutex_;
  std::unordered_map<sched::RequestId, Pending> pending_;  // GUARDED_BY(mutex_)
  LatencyHistograms histograms_;                           // GUARDED_BY(mutex_)
  // The counters of ServiceStats the loop keeps itself (requests, tokens,
  // llama-server's); stats() adds the scheduler's. GUARDED_BY(mutex_)
  ServiceStats totals_;
  std::vector<ServiceStats::Slot> slot_snapshot_;          // GUARDED_BY(mutex_)

  PhaseFeed phase_feed_;
  PhaseFrame phase_frame_;  // engine thread's scratch, reused step after step

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace cohort::server
