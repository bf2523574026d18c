// PhasePolicy: the rule that turns scheduler state into the next step
// (--phase-policy mixed | no-cont | cohort | serial).
//
// plan() is a deterministic function of what the builder shows (queue,
// requests in slots, KV room answers) and of the policy's own small phase
// state; it runs no model, so policies are unit-tested with a simulated
// executor. It may be called again in the same step after the Scheduler
// ended a request (a KV-room failure), so it must not assume one call per
// step, and it changes its own state only in ways that stay right on a
// repeated call.
//
// Thread safety: none; engine thread only.
#pragma once

#include <memory>
#include <string_view>

#include "sched/plan_builder.h"

namespace cohort::sched {

enum class PolicyKind : uint8_t { kMixed, kNoCont, kCohort, kSerial };

const char* policy_name(PolicyKind kind);  // "mixed", "no-cont", "cohort", "serial"
// Throws cohort::Error naming --phase-policy for an unknown name.
PolicyKind parse_policy(std::string_view name);

class PhasePolicy {
 public:
  virtual ~PhasePolicy() = default;
  virtual PolicyKind kind() const = 0;
  // Builds the next step through `step`. Leaves the plan without work only
  // when nothing can run: no request in a slot and none admissible, or every
  // runnable request was refused KV room.
  virtual void plan(PlanBuilder& step) = 0;
};

// tg_quantum: see CohortPolicy (ignored by mixed and no-cont).
std::unique_ptr<PhasePolicy> make_policy(PolicyKind kind, int tg_quantum);

}  // namespace cohort::sched
