// Scheduler: the request queue, the -np slots and the phase policy. It turns
// its state into one BatchPlan per step (plain data, see batch_plan.h) and
// applies what the executor reports back; it runs no model itself.
//
// An executor loop (engine thread):
//
//   for (;;) {
//     const BatchPlan& plan = sched.plan();
//     drop per-slot state of plan.ended; set up plan.admitted;
//     if (!plan.has_work()) { sched.wait_for_work(100ms); continue; }
//     run plan.rows as one Batch; keep_logits; sample first_tokens and
//     decode rows; fill a StepResult (stopped / failed slots);
//     sched.on_step_done(result);
//   }
//
// plan() returns a plan without work only when nothing can run: no request
// holds a slot and the queue is empty. (A queued request the KV cache could
// not hold even when empty is ended with kNoKvRoom; when every runnable
// request is refused KV room for its next token, the latest-arriving one is
// ended with kNoKvRoom and planning is retried, so planning never stalls.)
//
// KV: admission reserves the whole prompt and each decode row its position,
// through KvRoom, while planning; ending a request releases its sequence.
// Length: a request whose n_generated reaches max_new_tokens ends with
// kLength without the executor saying so; EOS and stop strings are the
// executor's (StepResult::stopped).
//
// Thread safety: submit, cancel, wait_for_work and counters may be called
// from any thread (an Inbox, and a snapshot under a mutex). Everything else
// belongs to the engine thread. Submissions and cancellations take effect at
// the next plan(): a cancelled request leaves (slot and KV freed, listed in
// plan.ended) at the next step boundary.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "sched/batch_plan.h"
#include "sched/inbox.h"
#include "sched/kv_room.h"
#include "sched/phase_policy.h"
#include "sched/plan_builder.h"
#include "sched/request.h"

namespace cohort::sched {

struct SchedulerOptions {
  int n_slots = 1;                          // -np
  int n_batch = 2048;                       // -b: most tokens per step
  PolicyKind policy = PolicyKind::kCohort;  // --phase-policy
  int tg_quantum = 0;                       // --tg-quantum (cohort, serial)

  // Throws cohort::Error naming the flag for impossible values.
  void validate() const;
};

// Figures for metrics, /slots and the batch trace; as of the latest plan()
// or on_step_done().
struct SchedulerCounters {
  Phase phase = Phase::kIdle;  // label of the latest plan
  int cohort_size = 0;         // members of the running cohort (cohort, serial)
  int n_blocked = 0;           // requests held back by the phase rule at the latest plan
  int n_queued = 0;            // waiting for a slot
  int n_processing = 0;        // holding a slot (parked included)
  int n_parked = 0;
  int64_t n_steps = 0;         // steps with work, completed
  int64_t n_prompt_tokens = 0; // prompt tokens processed (cached ones not counted)
  int64_t n_decode_tokens = 0; // decode rows processed
  int64_t n_first_tokens = 0;  // first tokens sampled
  int64_t n_finished = 0;      // ended FINISHED (stop, length)
  int64_t n_cancelled = 0;     // ended CANCELLED (cancel, error, no KV room)
};

class Scheduler {
 public:
  // Throws cohort::Error for invalid options. `kv` must outlive the
  // scheduler, and hold no sequence for any slot.
  Scheduler(const SchedulerOptions& options, KvRoom& kv);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // --- any thread ---
  // Throws cohort::Error for an invalid spec. Returns the request's id.
  RequestId submit(const RequestSpec& spec) { return inbox_.submit(spec); }
  // No-op if the request already ended.
  void cancel(RequestId id) { inbox_.cancel(id); }
  // Blocks until a submission or cancellation is pending, or `timeout`.
  bool wait_for_work(std::chrono::milliseconds timeout) { return inbox_.wait(timeout); }
  SchedulerCounters counters() const;

  // --- engine thread ---
  // The next step. The reference stays valid until the next plan(). If it
  // has work, on_step_done must follow before the next plan().
  const BatchPlan& plan();
  // Applies the executor's report on the latest plan. A no-op for a plan
  // without work.
  void on_step_done(const StepResult& result);

  const SchedulerOptions& options() const { return options_; }
  PolicyKind policy() const { return policy_->kind(); }
  // A queued or slotted request; nullptr once it ended (or if unknown, or
  // not yet taken from the inbox).
  const Request* find(RequestId id) const;
  std::span<const std::optional<Request>> slots() const { return state_.slots; }
  int n_queued() const { return static_cast<int>(state_.queue.size()); }
  // Nothing queued, nothing in a slot, nothing pending in the inbox.
  bool idle() const;

 private:
  void apply_inbox();
  void cancel_now(RequestId id);
  void reject_unfittable();
  void build_plan();
  void end_slot(int slot, EndReason reason);
  void apply_rows();
  void apply_first_tokens();
  void end_sampled(const StepResult& result);
  bool sampled_this_step(int slot) const;
  void publish(const PhaseNote& note);

  SchedulerOptions options_;
  KvRoom& kv_;
  std::unique_ptr<PhasePolicy> policy_;
  Inbox inbox_;
  SchedulerState state_;
  BatchPlan plan_;
  bool awaiting_result_ = false;
  std::vector<Ending> ended_;            // since the latest plan
  std::vector<InboxMessage> messages_;   // scratch
  std::vector<const Request*> active_;   // scratch for PlanBuilder
  SchedulerCounters totals_;             // engine thread's running totals
  PhaseNote note_;                       // of the latest plan

  mutable std::mutex counters_mutex_;
  SchedulerCounters snapshot_;           // GUARDED_BY(counters_mutex_)
};

}  // namespace cohort::sched
