// PlanBuilder: the verbs a phase policy uses to build one step's BatchPlan.
//
// A policy decides *what* runs (admit now or not, who decodes, how the prompt
// capacity is shared, when the barrier opens); the builder does the
// bookkeeping and keeps the invariants every policy shares:
//   - admission is FIFO: the queue head first, into the lowest free slot, and
//     it stops at the first request the KV cache cannot hold (no overtaking,
//     so a long prompt is not starved by short ones);
//   - at most one row per slot, rows only for non-parked requests, the
//     plan's tokens never exceed -b;
//   - prompt rows continue where the prompt stands and never pass its end;
//   - a decode row reserves its KV position (KvRoom::append) or is refused;
//   - first tokens only for requests whose prompt is done by this step.
// Policies see requests as const; every change goes through a verb.
//
// Ownership: refers to the Scheduler's state, KV room and plan; lives for one
// planning attempt. Thread safety: engine thread only.
#pragma once

#include <climits>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "sched/batch_plan.h"
#include "sched/kv_room.h"
#include "sched/request.h"

namespace cohort::sched {

// The Scheduler's request bookkeeping, shared with PlanBuilder.
struct SchedulerState {
  std::deque<Request> queue;                   // QUEUED, arrival order
  std::vector<std::optional<Request>> slots;   // [n_slots]; empty = free

  int n_free_slots() const;
  int n_active() const { return static_cast<int>(slots.size()) - n_free_slots(); }
};

// Per-step figures a policy reports for metrics (SchedulerCounters).
struct PhaseNote {
  int cohort_size = 0;  // members of the running cohort (0: the policy has none)
  int n_blocked = 0;    // requests held back by the phase rule in this step
};

class PlanBuilder {
 public:
  // `active` is scratch owned by the caller, reused across steps so that
  // planning a decode step does not allocate.
  PlanBuilder(SchedulerState& state, KvRoom& kv, int n_batch, BatchPlan& plan,
              std::vector<const Request*>& active);

  // --- reading ---
  int n_batch() const { return n_batch_; }
  int capacity_left() const { return n_batch_ - n_tokens_; }
  // Requests in slots, in arrival order (including parked ones).
  std::span<const Request* const> active() const { return active_; }
  int n_queued() const { return static_cast<int>(state_.queue.size()); }
  int n_free_slots() const { return state_.n_free_slots(); }
  // Whether admit(1) would admit the queue head now (a free slot, KV room).
  bool can_admit_next() const;
  const BatchPlan& plan() const { return plan_; }

  // --- acting ---
  // Admits up to max_n queued requests, FIFO (see above); returns how many.
  // They enter PREFILL and appear at the end of active().
  int admit(int max_n = INT_MAX);
  // A kDecode row for `r` (DECODE, not parked): one token at r.next_pos(),
  // its KV position reserved. False, and no row, if the batch is full or the
  // KV cache has no room; the request then waits for a later step.
  bool decode(const Request& r);
  // A kPrompt row of min(n, r.prompt_left(), capacity_left()) tokens for `r`
  // (PREFILL); returns that count (0: no row). A row reaching the prompt's
  // end is marked last_chunk.
  int prefill(const Request& r, int n);
  // r's first token is sampled after this step; a no-op for a prompt-only
  // request. REQUIRES: r is READY, or has a last_chunk row in this plan.
  void sample_first(const Request& r);
  // REQUIRES: r is DECODE and not parked (park), or parked (unpark).
  void park(const Request& r);
  void unpark(const Request& r);
  void set_phase(Phase phase) { plan_.phase = phase; }
  // kPrefill, kDecode or kMixed from the kinds of the rows planned so far.
  void set_phase_by_rows();
  void note(const PhaseNote& note) { note_ = note; }

  // --- for the Scheduler ---
  // Fills keep_logits: last_chunk rows whose slot samples no first token
  // (prompt-only requests keep none).
  void finish();
  const PhaseNote& phase_note() const { return note_; }
  // The latest-arriving request refused a decode row for lack of KV room
  // in this attempt, or kNoRequest.
  RequestId youngest_kv_waiter() const { return youngest_kv_waiter_; }

 private:
  Request& mutable_request(const Request& r);
  bool has_row(int slot) const { return plan_.row_of(slot) != nullptr; }

  SchedulerState& state_;
  KvRoom& kv_;
  int n_batch_;
  BatchPlan& plan_;
  std::vector<const Request*>& active_;  // into state_.slots, arrival order
  int n_tokens_ = 0;
  PhaseNote note_;
  RequestId youngest_kv_waiter_ = kNoRequest;
};

}  // namespace cohort::sched
