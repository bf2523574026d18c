// CohortPolicy (--phase-policy cohort, the default): phase exclusion.
// SerialPolicy (serial_policy.h) is the same with another share().
//
// Phases: idle -> PP -> TG -> idle ... A step never holds prompt and decode
// rows together. Members of a PP phase are the requests in slots that are
// PREFILL or READY; parked requests are not members.
//
// PP phase
//   - Formation: entering PP admits queued requests FIFO while a slot is
//     free and the KV cache has room (PlanBuilder::admit).
//   - Open, then sealed: while no member is READY, every PP step first admits
//     new arrivals the same way. The first plan that finds a member READY
//     (its prompt is done) admits once more, the requests that arrived while
//     the step that finished it ran, and seals the cohort until the phase
//     ends; later arrivals wait for the next cohort, so staggered arrivals
//     cannot hold a cohort open.
//   - Sharing: the -b capacity of each step is split among the PREFILL
//     members by fair_shares() (cohort) or given whole to the earliest
//     PREFILL member (serial).
//   - A member whose last chunk runs keeps its final logits (keep_logits)
//     and waits READY; nothing is sampled for it.
//   - Barrier: when the cohort is sealed and the chunks of a step complete
//     every PREFILL member, the first tokens of all members are sampled after
//     that step (first_tokens) and the phase turns to TG. If no member is
//     PREFILL at planning time (every prompt finished in the step before the
//     seal and no one joined, or the last prefilling member was cancelled),
//     a step without rows does only that.
// TG phase
//   - One decode row per member, each step. Queued requests wait, even with
//     a slot free. When no member is left, the phase ends (idle, then the
//     next cohort forms in the same planning call).
//   - tg_quantum N > 0: once the TG phase has run N steps and the queue head
//     could be admitted now, the members are parked (slots, KV and sampler
//     state kept, no rows) and a PP phase starts; its barrier unparks them,
//     and the next TG phase decodes old and new members together. Without
//     admissible queued work the TG phase simply goes on.
// Cancellation and errors: membership is read from the request states every
// step, so a request that is gone is no member; the barrier ("no member is
// PREFILL") never waits on it.
//
// Thread safety: none; engine thread only.
#pragma once

#include <span>
#include <vector>

#include "sched/phase_policy.h"

namespace cohort::sched {

// Max-min fair split of `capacity` tokens among demands (prompt tokens left,
// in arrival order): out[i] <= demand[i], sum(out) = min(capacity,
// sum(demand)); every member gets min(demand, L) for the largest level L that
// fits, and the remaining tokens (fewer than the members above L) go one each
// to the earliest of them. Deterministic. REQUIRES: demand[i] >= 0.
void fair_shares(std::span<const int> demand, int capacity, std::vector<int>& out);

class CohortPolicy : public PhasePolicy {
 public:
  // REQUIRES: tg_quantum >= 0 (0: a TG phase always drains).
  explicit CohortPolicy(int tg_quantum);

  PolicyKind kind() const override { return PolicyKind::kCohort; }
  void plan(PlanBuilder& step) override;
  Phase phase() const { return phase_; }

 protected:
  // Tokens for each PREFILL member this step; see fair_shares.
  virtual void share(std::span<const int> demand, int capacity, std::vector<int>& out) const {
    fair_shares(demand, capacity, out);
  }

 private:
  // Each returns true when it planned the step, false after a phase change.
  bool plan_idle(PlanBuilder& step);
  bool plan_prefill(PlanBuilder& step);
  bool plan_decode(PlanBuilder& step);
  void start_prefill();
  void open_barrier(PlanBuilder& step);
  int n_blocked(const PlanBuilder& step) const;

  int tg_quantum_;
  Phase phase_ = Phase::kIdle;
  bool sealed_ = false;   // PP: a member finished its prompt in this phase
  int tg_steps_ = 0;      // TG steps planned in this TG phase
  std::vector<const Request*> members_;  // scratch: PREFILL members, arrival order
  std::vector<int> demand_, shares_;     // scratch, parallel to members_
};

}  // namespace cohort::sched
