#include "sched/phase_policy.h"

#include "common/error.h"
#include "sched/cohort_policy.h"
#include "sched/mixed_policy.h"
#include "sched/no_cont_policy.h"
#include "sched/serial_policy.h"

namespace cohort::sched {

const char* policy_name(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::kMixed: return "mixed";
    case PolicyKind::kNoCont: return "no-cont";
    case PolicyKind::kCohort: return "cohort";
    case PolicyKind::kSerial: return "serial";
  }
  return "?";
}

PolicyKind parse_policy(std::string_view name) {
  for (PolicyKind kind :
       {PolicyKind::kMixed, PolicyKind::kNoCont, PolicyKind::kCohort, PolicyKind::kSerial}) {
    if (name == policy_name(kind)) return kind;
  }
  fail("--phase-policy: unknown policy '{}' (expected mixed, no-cont, cohort or serial)", name);
}

std::unique_ptr<PhasePolicy> make_policy(PolicyKind kind, int tg_quantum) {
  switch (kind) {
    case PolicyKind::kMixed: return std::make_unique<MixedPolicy>();
    case PolicyKind::kNoCont: return std::make_unique<NoContPolicy>();
    case PolicyKind::kCohort: return std::make_unique<CohortPolicy>(tg_quantum);
    case PolicyKind::kSerial: return std::make_unique<SerialPolicy>(tg_quantum);
  }
  fail("--phase-policy: unknown policy {}", static_cast<int>(kind));
}

}  // namespace cohort::sched
