#include "sched/cohort_policy.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <numeric>

namespace cohort::sched {

void fair_shares(std::span<const int> demand, int capacity, std::vector<int>& out) {
  const size_t k = demand.size();
  out.assign(k, 0);
  if (k == 0 || capacity <= 0) return;
  // Water-filling: satisfy the smallest demands whole while they are below
  // an equal share of what is left; the rest get that share, L.
  std::vector<size_t> order(k);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return demand[a] < demand[b]; });
  int64_t left = capacity;
  int64_t n_left = static_cast<int64_t>(k);
  size_t i = 0;
  for (; i < k; ++i) {
    const int d = demand[order[i]];
    assert(d >= 0);
    if (int64_t{d} * n_left > left) break;
    out[order[i]] = d;
    left -= d;
    --n_left;
  }
  if (i == k) return;
  const int64_t level = left / n_left;
  for (size_t j = i; j < k; ++j) out[order[j]] = static_cast<int>(level);
  left -= level * n_left;  // now 0 <= left < n_left: one more each, by arrival
  for (size_t j = 0; j < k && left > 0; ++j) {
    if (out[j] < demand[j]) {
      ++out[j];
      --left;
    }
  }
}

CohortPolicy::CohortPolicy(int tg_quantum) : tg_quantum_(tg_quantum) { assert(tg_quantum >= 0); }

void CohortPolicy::plan(PlanBuilder& step) {
  // Each pass plans the step or moves to another phase; a full cycle
  // (TG drained -> idle -> PP -> TG) takes at most four passes.
  for (int pass = 0; pass < 4; ++pass) {
    bool planned = false;
    switch (phase_) {
      case Phase::kIdle: planned = plan_idle(step); break;
      case Phase::kPrefill: planned = plan_prefill(step); break;
      case Phase::kDecode: planned = plan_decode(step); break;
      case Phase::kMixed: assert(false && "cohort never mixes"); return;
    }
    if (planned) return;
  }
  step.set_phase(Phase::kIdle);
}

void CohortPolicy::start_prefill() {
  phase_ = Phase::kPrefill;
  sealed_ = false;
}

bool CohortPolicy::plan_idle(PlanBuilder& step) {
  if (step.n_queued() == 0) {
    step.set_phase(Phase::kIdle);
    step.note({0, 0});
    return true;
  }
  start_prefill();
  return false;
}

int CohortPolicy::n_blocked(const PlanBuilder& step) const {
  return std::min(step.n_queued(), step.n_free_slots());
}

bool CohortPolicy::plan_prefill(PlanBuilder& step) {
  const auto is_member = [](const Request* r) {
    return r->state == RequestState::kPrefill || r->state == RequestState::kReady;
  };
  // Requests that arrived while the step finishing the first member's
  // prompt ran are admitted before the seal: the seal takes effect at the
  // first plan that finds a member READY, after its admission.
  const auto active = step.active();
  const bool any_ready = std::any_of(active.begin(), active.end(),
                                     [](const Request* r) { return r->state == RequestState::kReady; });
  if (!sealed_) step.admit();
  if (any_ready) sealed_ = true;
  members_.clear();
  int n_members = 0;
  for (const Request* r : step.active()) {
    if (!is_member(r)) continue;
    ++n_members;
    if (r->state == RequestState::kPrefill) members_.push_back(r);
  }
  if (n_members == 0) {  // the cohort never formed, or every member is gone
    for (const Request* r : step.active()) {
      if (r->parked) step.unpark(*r);
    }
    phase_ = step.active().empty() ? Phase::kIdle : Phase::kDecode;
    tg_steps_ = 0;
    return false;
  }
  demand_.clear();
  for (const Request* r : members_) demand_.push_back(r->prompt_left());
  share(demand_, step.capacity_left(), shares_);
  bool completes_all = true;
  for (size_t i = 0; i < members_.size(); ++i) {
    const int n = shares_[i] > 0 ? step.prefill(*members_[i], shares_[i]) : 0;
    if (n < demand_[i]) completes_all = false;
  }
  // Only a sealed cohort opens the barrier: when every prompt finishes in the
  // step being planned, the next plan admits the arrivals of that step (or
  // opens the barrier with no rows).
  if (completes_all && sealed_) open_barrier(step);
  step.set_phase(Phase::kPrefill);
  step.note({n_members, sealed_ ? n_blocked(step) : 0});
  return true;
}

void CohortPolicy::open_barrier(PlanBuilder& step) {
  for (const Request* r : step.active()) {
    if (r->state == RequestState::kPrefill || r->state == RequestState::kReady) {
      step.sample_first(*r);
    } else if (r->parked) {
      step.unpark(*r);
    }
  }
  phase_ = Phase::kDecode;
  tg_steps_ = 0;
}

bool CohortPolicy::plan_decode(PlanBuilder& step) {
  members_.clear();
  for (const Request* r : step.active()) {
    assert(r->state == RequestState::kDecode && !r->parked);
    members_.push_back(r);
  }
  if (members_.empty()) {
    phase_ = Phase::kIdle;
    return false;
  }
  if (tg_quantum_ > 0 && tg_steps_ >= tg_quantum_ && step.can_admit_next()) {
    for (const Request* r : members_) step.park(*r);
    start_prefill();
    return false;
  }
  bool any = false;
  for (const Request* r : members_) any = step.decode(*r) || any;
  if (any) ++tg_steps_;
  step.set_phase(Phase::kDecode);
  step.note({static_cast<int>(members_.size()), n_blocked(step)});
  return true;
}

}  // namespace cohort::sched
