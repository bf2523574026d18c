// SerialPolicy (--phase-policy serial): CohortPolicy, except that one member
// owns the PP capacity at a time: every PP step gives all of -b to the
// earliest-arriving member still prefilling, and nothing to the others. So a
// PP step has at most one row, and prompts are processed one after another
// (the baseline of REQUIREMENTS.md §1's "one after the other" measurement).
// Formation, sealing, the barrier, TG and --tg-quantum are CohortPolicy's.
//
// Thread safety: none; engine thread only.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "sched/cohort_policy.h"

namespace cohort::sched {

class SerialPolicy final : public CohortPolicy {
 public:
  using CohortPolicy::CohortPolicy;
  PolicyKind kind() const override { return PolicyKind::kSerial; }

 protected:
  void share(std::span<const int> demand, int capacity, std::vector<int>& out) const override {
    out.assign(demand.size(), 0);
    if (!demand.empty()) out[0] = std::min(demand[0], std::max(capacity, 0));
  }
};

}  // namespace cohort::sched
