// Test support for sched/: the rules a plan must obey, checked right after
// Scheduler::plan() against the scheduler's state at that moment (requests
// in slots are in their pre-step states; admissions and parking of this plan
// are already applied).
//
// Every policy: tokens <= -b, at most one row per slot, each row belongs to
// the request in its slot, in the matching state, not parked; at most -np
// requests hold slots.
// cohort, serial: no step holds prompt and decode rows; no decode row while
// any request prefills or waits READY; first tokens only when they complete
// the whole cohort (every PREFILL member's last chunk is in this step, and
// every member samples); admission only into an open cohort (no member
// READY but those whose last chunk was in the previous step `prev`: the
// plan that first finds a member READY still admits; a decoding request
// only if parked, or parked or unparked by this plan). serial: at most one
// prompt row.
// mixed, no-cont: READY is never used (no kept logits, a last chunk samples
// at once), nothing is parked. mixed: decode rows come first. no-cont: no
// prompt row while a request decodes.
#pragma once

#include <set>
#include <string>

#include <fmt/format.h>

#include "sched/scheduler.h"

namespace cohort::sched::testing {

inline const Request* request_in(const Scheduler& s, int slot) {
  const auto slots = s.slots();
  if (slot < 0 || static_cast<size_t>(slot) >= slots.size() || !slots[slot]) return nullptr;
  return &*slots[static_cast<size_t>(slot)];
}

inline std::string check_rows(const BatchPlan& plan, const Scheduler& s) {
  if (plan.n_tokens() > s.options().n_batch) return fmt::format("{} tokens > -b", plan.n_tokens());
  std::set<int> seen;
  for (const PlanRow& row : plan.rows) {
    if (!seen.insert(row.slot).second) return fmt::format("slot {} has two rows", row.slot);
    const Request* r = request_in(s, row.slot);
    if (!r || r->id != row.id) return fmt::format("row for {} not in slot {}", row.id, row.slot);
    if (r->parked) return fmt::format("parked request {} has a row", row.id);
    const RequestState want =
        row.kind == RowKind::kPrompt ? RequestState::kPrefill : RequestState::kDecode;
    if (r->state != want) return fmt::format("row kind does not match state of {}", row.id);
    if (row.n_tokens < 1) return "empty row";
  }
  if (s.counters().n_processing > s.options().n_slots) return "more requests than slots";
  return "";
}

// Whether r finished its prompt in the step of `prev` (the plan before).
inline bool ready_since(const BatchPlan* prev, const Request& r) {
  if (prev == nullptr) return false;
  const PlanRow* row = prev->row_of(r.slot);
  return row != nullptr && row->id == r.id && row->kind == RowKind::kPrompt && row->last_chunk;
}

inline std::string check_cohort(const BatchPlan& plan, const Scheduler& s, const BatchPlan* prev) {
  const bool pp = plan.has_kind(RowKind::kPrompt);
  const bool tg = plan.has_kind(RowKind::kDecode);
  if (pp && tg) return "a step mixes PP and TG";
  std::set<RequestId> admitted, parked;
  for (const Admission& a : plan.admitted) admitted.insert(a.id);
  for (const SlotRef& p : plan.parked) parked.insert(p.id);
  for (const SlotRef& p : plan.unparked) parked.insert(p.id);
  for (const std::optional<Request>& r : s.slots()) {
    if (!r) continue;
    const bool member = r->state == RequestState::kPrefill || r->state == RequestState::kReady;
    if (tg && member) return fmt::format("decode rows while {} is in PP", r->id);
    if (!plan.first_tokens.empty() && member) {
      const PlanRow* row = plan.row_of(r->slot);
      if (!plan.samples_first(r->slot)) return fmt::format("barrier opened without {}", r->id);
      if (r->state == RequestState::kPrefill && !(row && row->last_chunk)) {
        return fmt::format("first tokens while {} still prefills", r->id);
      }
    }
    if (!admitted.empty() && !admitted.count(r->id)) {
      if (r->state == RequestState::kReady && !ready_since(prev, *r)) return "admission into a sealed cohort";
      // Parked before or by this plan; its barrier may have unparked it already
      // (it decodes from the next step).
      const bool held = r->parked || parked.count(r->id);
      if (r->state == RequestState::kDecode && !held) return "admission during TG";
    }
  }
  if (s.policy() == PolicyKind::kSerial) {
    int n_pp = 0;
    for (const PlanRow& row : plan.rows) n_pp += row.kind == RowKind::kPrompt;
    if (n_pp > 1) return "serial: two prompts in one step";
  }
  return "";
}

inline std::string check_continuous(const BatchPlan& plan, const Scheduler& s) {
  if (!plan.keep_logits.empty() || !plan.parked.empty()) return "mixed/no-cont kept or parked";
  for (const PlanRow& row : plan.rows) {
    if (row.last_chunk && !plan.samples_first(row.slot)) return "a last chunk not sampled";
  }
  bool any_decoding = false;
  for (const std::optional<Request>& r : s.slots()) {
    if (r && r->state == RequestState::kReady) return "READY under mixed/no-cont";
    if (r && r->state == RequestState::kDecode) any_decoding = true;
  }
  if (s.policy() == PolicyKind::kNoCont && any_decoding && plan.has_kind(RowKind::kPrompt)) {
    return "no-cont: a prompt row while a request decodes";
  }
  if (s.policy() == PolicyKind::kMixed) {
    bool seen_pp = false;
    for (const PlanRow& row : plan.rows) {
      if (row.kind == RowKind::kPrompt) seen_pp = true;
      if (row.kind == RowKind::kDecode && seen_pp) return "mixed: a decode row after a prompt";
    }
  }
  return "";
}

// "" or the first rule the plan breaks.
// prev: the plan of the step before (nullptr for the first).
inline std::string check_plan(const BatchPlan& plan, const Scheduler& s, const BatchPlan* prev) {
  if (std::string e = check_rows(plan, s); !e.empty()) return e;
  switch (s.policy()) {
    case PolicyKind::kCohort:
    case PolicyKind::kSerial: return check_cohort(plan, s, prev);
    case PolicyKind::kMixed:
    case PolicyKind::kNoCont: return check_continuous(plan, s);
  }
  return "";
}

}  // namespace cohort::sched::testing
