#include "sched/scheduler.h"

#include <algorithm>
#include <cassert>

#include "common/error.h"

namespace cohort::sched {

void SchedulerOptions::validate() const {
  if (n_slots < 1) fail("-np must be at least 1 (got {})", n_slots);
  if (n_batch < 1) fail("-b must be at least 1 (got {})", n_batch);
  if (tg_quantum < 0) fail("--tg-quantum must be 0 (drain) or more (got {})", tg_quantum);
}

Scheduler::Scheduler(const SchedulerOptions& options, KvRoom& kv)
    : options_(options), kv_(kv) {
  options_.validate();
  policy_ = make_policy(options_.policy, options_.tg_quantum);
  state_.slots.resize(static_cast<size_t>(options_.n_slots));
  active_.reserve(static_cast<size_t>(options_.n_slots));
}

SchedulerCounters Scheduler::counters() const {
  std::lock_guard lock(counters_mutex_);
  return snapshot_;
}

const Request* Scheduler::find(RequestId id) const {
  for (const std::optional<Request>& s : state_.slots) {
    if (s && s->id == id) return &*s;
  }
  for (const Request& r : state_.queue) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

bool Scheduler::idle() const {
  return state_.queue.empty() && state_.n_active() == 0 && inbox_.empty();
}

const BatchPlan& Scheduler::plan() {
  assert(!awaiting_result_ && "on_step_done must follow a plan with work");
  plan_.clear();
  plan_.step = totals_.n_steps;
  apply_inbox();
  build_plan();
  plan_.ended.swap(ended_);
  ended_.clear();
  awaiting_result_ = plan_.has_work();
  return plan_;
}

void Scheduler::apply_inbox() {
  inbox_.take(messages_);
  for (const InboxMessage& m : messages_) {
    if (m.kind == InboxMessage::Kind::kSubmit) {
      Request r;
      r.id = m.id;
      r.spec = m.spec;
      state_.queue.push_back(r);
    } else {
      cancel_now(m.id);
    }
  }
}

void Scheduler::cancel_now(RequestId id) {
  for (const std::optional<Request>& s : state_.slots) {
    if (s && s->id == id) {
      end_slot(s->slot, EndReason::kCancelled);
      return;
    }
  }
  const auto it = std::find_if(state_.queue.begin(), state_.queue.end(),
                               [&](const Request& r) { return r.id == id; });
  if (it == state_.queue.end()) return;  // ended already
  ended_.push_back({-1, id, EndReason::kCancelled});
  ++totals_.n_cancelled;
  state_.queue.erase(it);
}

// With every slot free the KV cache holds only reusable prefixes, so a queue
// head that does not fit now never will: end it rather than wait forever.
void Scheduler::reject_unfittable() {
  while (state_.n_active() == 0 && !state_.queue.empty()) {
    const Request& head = state_.queue.front();
    if (kv_.can_admit(0, head.id, head.n_prompt(), !head.spec.prompt_only)) return;
    ended_.push_back({-1, head.id, EndReason::kNoKvRoom});
    ++totals_.n_cancelled;
    state_.queue.pop_front();
  }
}

void Scheduler::build_plan() {
  // Each retry ends one request, so this loop runs at most n_slots + 1 times.
  for (;;) {
    reject_unfittable();
    PlanBuilder step(state_, kv_, options_.n_batch, plan_, active_);
    policy_->plan(step);
    step.finish();
    const RequestId waiter = step.youngest_kv_waiter();
    if (plan_.has_work() || waiter == kNoRequest) {
      assert(plan_.has_work() || state_.n_active() == 0);
      publish(step.phase_note());
      return;
    }
    const Request* r = find(waiter);
    assert(r != nullptr && r->slot >= 0);
    end_slot(r->slot, EndReason::kNoKvRoom);
  }
}

void Scheduler::end_slot(int slot, EndReason reason) {
  std::optional<Request>& s = state_.slots[static_cast<size_t>(slot)];
  assert(s.has_value());
  ended_.push_back({slot, s->id, reason});
  if (end_state(reason) == RequestState::kFinished) {
    ++totals_.n_finished;
  } else {
    ++totals_.n_cancelled;
  }
  kv_.release(slot);
  s.reset();
}

void Scheduler::on_step_done(const StepResult& result) {
  if (!awaiting_result_) return;
  awaiting_result_ = false;
  if (result.failed) {
    for (const PlanRow& row : plan_.rows) end_slot(row.slot, EndReason::kError);
    for (const SlotRef& s : plan_.first_tokens) {
      if (!plan_.row_of(s.slot)) end_slot(s.slot, EndReason::kError);
    }
  } else {
    apply_rows();
    apply_first_tokens();
    end_sampled(result);
  }
  ++totals_.n_steps;
  publish(note_);
}

void Scheduler::apply_rows() {
  for (const PlanRow& row : plan_.rows) {
    Request& r = *state_.slots[static_cast<size_t>(row.slot)];
    assert(r.id == row.id && row.pos == r.next_pos());
    if (row.kind == RowKind::kPrompt) {
      r.n_prefilled += row.n_tokens;
      totals_.n_prompt_tokens += row.n_tokens;
      if (row.last_chunk) r.state = RequestState::kReady;
    } else {
      ++r.n_generated;
      ++totals_.n_decode_tokens;
    }
  }
  // A prompt-only request is done with its prompt (no first token follows).
  for (const PlanRow& row : plan_.rows) {
    if (row.last_chunk && state_.slots[static_cast<size_t>(row.slot)]->spec.prompt_only) {
      end_slot(row.slot, EndReason::kStop);
    }
  }
}

void Scheduler::apply_first_tokens() {
  for (const SlotRef& s : plan_.first_tokens) {
    Request& r = *state_.slots[static_cast<size_t>(s.slot)];
    assert(r.id == s.id && r.state == RequestState::kReady && r.prompt_left() == 0);
    r.state = RequestState::kDecode;
    r.n_generated = 1;
    ++totals_.n_first_tokens;
  }
}

bool Scheduler::sampled_this_step(int slot) const {
  const PlanRow* row = plan_.row_of(slot);
  return (row != nullptr && row->kind == RowKind::kDecode) || plan_.samples_first(slot);
}

void Scheduler::end_sampled(const StepResult& result) {
  const auto holds = [&](int slot) {
    return slot >= 0 && slot < options_.n_slots && state_.slots[static_cast<size_t>(slot)];
  };
  for (int slot : result.failed_slots) {
    if (holds(slot)) end_slot(slot, EndReason::kError);
  }
  for (int slot : result.stopped) {
    assert(sampled_this_step(slot) && "stopped: the slot sampled nothing in this step");
    if (holds(slot)) end_slot(slot, EndReason::kStop);
  }
  for (int slot = 0; slot < options_.n_slots; ++slot) {
    if (holds(slot) && sampled_this_step(slot) &&
        state_.slots[static_cast<size_t>(slot)]->reached_limit()) {
      end_slot(slot, EndReason::kLength);
    }
  }
}

void Scheduler::publish(const PhaseNote& note) {
  note_ = note;
  SchedulerCounters c = totals_;
  c.phase = plan_.phase;
  c.cohort_size = note.cohort_size;
  c.n_blocked = note.n_blocked;
  c.n_queued = static_cast<int>(state_.queue.size());
  c.n_processing = state_.n_active();
  c.n_parked = static_cast<int>(
      std::count_if(state_.slots.begin(), state_.slots.end(),
                    [](const std::optional<Request>& s) { return s && s->parked; }));
  std::lock_guard lock(counters_mutex_);
  snapshot_ = c;
}

}  // namespace cohort::sched
