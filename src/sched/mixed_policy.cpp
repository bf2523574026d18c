#include "sched/mixed_policy.h"

namespace cohort::sched {

void MixedPolicy::plan(PlanBuilder& step) {
  bool any_decoding = false;
  for (const Request* r : step.active()) {
    if (r->state != RequestState::kDecode) continue;
    any_decoding = true;
    step.decode(*r);
  }
  step.admit();
  int n_held = 0;
  const bool prompts = allows_prompts(any_decoding);
  for (const Request* r : step.active()) {
    if (r->state != RequestState::kPrefill) continue;
    if (!prompts) {
      ++n_held;
      continue;
    }
    const int n = step.prefill(*r, step.capacity_left());
    if (n > 0 && n == r->prompt_left()) step.sample_first(*r);
  }
  step.set_phase_by_rows();
  step.note({0, n_held});
}

}  // namespace cohort::sched
