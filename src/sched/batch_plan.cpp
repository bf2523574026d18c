#include "sched/batch_plan.h"

#include <algorithm>

namespace cohort::sched {

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kIdle: return "idle";
    case Phase::kPrefill: return "pp";
    case Phase::kDecode: return "tg";
    case Phase::kMixed: return "mixed";
  }
  return "?";
}

const char* phase_label(Phase phase) {
  switch (phase) {
    case Phase::kIdle: return "idle";
    case Phase::kPrefill: return "prefill";
    case Phase::kDecode: return "decode";
    case Phase::kMixed: return "mixed";
  }
  return "?";
}

const char* kind_name(RowKind kind) { return kind == RowKind::kPrompt ? "pp" : "tg"; }

int BatchPlan::n_tokens() const {
  int n = 0;
  for (const PlanRow& row : rows) n += row.n_tokens;
  return n;
}

bool BatchPlan::has_kind(RowKind kind) const {
  return std::any_of(rows.begin(), rows.end(), [&](const PlanRow& r) { return r.kind == kind; });
}

const PlanRow* BatchPlan::row_of(int slot) const {
  for (const PlanRow& row : rows) {
    if (row.slot == slot) return &row;
  }
  return nullptr;
}

bool BatchPlan::samples_first(int slot) const {
  return std::any_of(first_tokens.begin(), first_tokens.end(),
                     [&](const SlotRef& s) { return s.slot == slot; });
}

void BatchPlan::clear() {
  step = 0;
  phase = Phase::kIdle;
  ended.clear();
  admitted.clear();
  rows.clear();
  keep_logits.clear();
  first_tokens.clear();
  parked.clear();
  unparked.clear();
  shifted.clear();
}

}  // namespace cohort::sched
