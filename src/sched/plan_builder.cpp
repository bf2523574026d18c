#include "sched/plan_builder.h"

#include <algorithm>
#include <cassert>

namespace cohort::sched {

int SchedulerState::n_free_slots() const {
  return static_cast<int>(std::count_if(slots.begin(), slots.end(),
                                        [](const std::optional<Request>& s) { return !s; }));
}

PlanBuilder::PlanBuilder(SchedulerState& state, KvRoom& kv, int n_batch, BatchPlan& plan,
                         std::vector<const Request*>& active)
    : state_(state), kv_(kv), n_batch_(n_batch), plan_(plan), active_(active) {
  assert(n_batch >= 1);
  active_.clear();
  active_.reserve(state_.slots.size());  // admit() appends: spans stay valid
  for (const std::optional<Request>& s : state_.slots) {
    if (s) active_.push_back(&*s);
  }
  std::sort(active_.begin(), active_.end(),
            [](const Request* a, const Request* b) { return a->id < b->id; });
  n_tokens_ = plan_.n_tokens();
}

Request& PlanBuilder::mutable_request(const Request& r) {
  assert(r.slot >= 0 && static_cast<size_t>(r.slot) < state_.slots.size());
  std::optional<Request>& s = state_.slots[static_cast<size_t>(r.slot)];
  assert(s && s->id == r.id);
  return *s;
}

namespace {

int lowest_free_slot(const SchedulerState& state) {
  for (size_t i = 0; i < state.slots.size(); ++i) {
    if (!state.slots[i]) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

bool PlanBuilder::can_admit_next() const {
  const int slot = lowest_free_slot(state_);
  if (slot < 0 || state_.queue.empty()) return false;
  const Request& head = state_.queue.front();
  return kv_.can_admit(slot, head.id, head.n_prompt(), !head.spec.prompt_only);
}

int PlanBuilder::admit(int max_n) {
  int n = 0;
  while (n < max_n && can_admit_next()) {
    const int slot = lowest_free_slot(state_);
    Request r = state_.queue.front();
    state_.queue.pop_front();
    const int cached = kv_.admit(slot, r.id, r.n_prompt(), !r.spec.prompt_only);
    // A fully cached prompt still computes its last token, for its logits.
    assert(cached >= 0 && cached < r.n_prompt());
    r.state = RequestState::kPrefill;
    r.slot = slot;
    r.n_cached = std::clamp(cached, 0, r.n_prompt() - 1);
    r.n_prefilled = r.n_cached;
    std::optional<Request>& s = state_.slots[static_cast<size_t>(slot)];
    s = r;
    active_.push_back(&*s);  // FIFO admission: the newest id goes last
    plan_.admitted.push_back({slot, r.id, r.n_cached});
    ++n;
  }
  return n;
}

bool PlanBuilder::decode(const Request& r) {
  assert(r.state == RequestState::kDecode && !r.parked && !has_row(r.slot));
  if (capacity_left() < 1) return false;
  if (r.must_shift()) {
    const int discard = r.shift_discard();
    if (discard < 1 || !kv_.can_shift(r.slot, r.spec.shift.n_keep, discard)) {
      youngest_kv_waiter_ = std::max(youngest_kv_waiter_, r.id);
      return false;
    }
    kv_.shift(r.slot, r.spec.shift.n_keep, discard);
    mutable_request(r).n_shifted += discard;
    plan_.shifted.push_back({r.slot, r.id});
  }
  if (!kv_.can_append(r.slot, 1)) {
    youngest_kv_waiter_ = std::max(youngest_kv_waiter_, r.id);
    return false;
  }
  kv_.append(r.slot, 1);
  plan_.rows.push_back({r.slot, r.id, RowKind::kDecode, r.next_pos(), 1, false});
  n_tokens_ += 1;
  return true;
}

int PlanBuilder::prefill(const Request& r, int n) {
  assert(r.state == RequestState::kPrefill && !has_row(r.slot));
  const int take = std::min({n, r.prompt_left(), capacity_left()});
  if (take <= 0) return 0;
  plan_.rows.push_back(
      {r.slot, r.id, RowKind::kPrompt, r.n_prefilled, take, take == r.prompt_left()});
  n_tokens_ += take;
  return take;
}

void PlanBuilder::sample_first(const Request& r) {
  if (r.spec.prompt_only) return;  // it ends with its prompt
  [[maybe_unused]] const PlanRow* row = plan_.row_of(r.slot);
  assert(r.state == RequestState::kReady || (row != nullptr && row->last_chunk));
  assert(!plan_.samples_first(r.slot));
  plan_.first_tokens.push_back({r.slot, r.id});
}

void PlanBuilder::park(const Request& r) {
  assert(r.state == RequestState::kDecode && !r.parked && !has_row(r.slot));
  mutable_request(r).parked = true;
  plan_.parked.push_back({r.slot, r.id});
}

void PlanBuilder::unpark(const Request& r) {
  assert(r.parked);
  mutable_request(r).parked = false;
  plan_.unparked.push_back({r.slot, r.id});
}

void PlanBuilder::set_phase_by_rows() {
  const bool pp = plan_.has_kind(RowKind::kPrompt);
  const bool tg = plan_.has_kind(RowKind::kDecode);
  if (pp && tg) {
    plan_.phase = Phase::kMixed;
  } else if (pp) {
    plan_.phase = Phase::kPrefill;
  } else if (tg) {
    plan_.phase = Phase::kDecode;
  } else {
    plan_.phase = plan_.first_tokens.empty() ? Phase::kIdle : Phase::kPrefill;
  }
}

void PlanBuilder::finish() {
  plan_.keep_logits.clear();
  for (const PlanRow& row : plan_.rows) {
    const bool prompt_only = state_.slots[static_cast<size_t>(row.slot)]->spec.prompt_only;
    if (row.last_chunk && !plan_.samples_first(row.slot) && !prompt_only) {
      plan_.keep_logits.push_back({row.slot, row.id});
    }
  }
}

}  // namespace cohort::sched
