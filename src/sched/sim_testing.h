// Test support for sched/: a simulation that drives a Scheduler with a fake
// executor (no model) over a scripted workload, on a real kv::BlockManager
// through PagedKvRoom, so prefix reuse and block accounting are real.
//
// The fake executor does what an engine executor does with a plan, minus the
// forward: it commits each row's token ids into the block manager (as
// engine::Decoder does after a forward) and "samples" token ids. While doing
// so it checks the plan against its own record of every request: rows
// continue exactly where the request stands (so every prompt token is
// processed once, in order), KV positions were reserved before the step,
// first tokens come only after the whole prompt and only once, decode rows
// only after the first token, kept logits exist where they are used, ended
// requests hold no KV. check_plan (plan_checks_testing.h) adds the
// per-policy phase rules. The first violation stops the run with a message.
//
// Time: one tick per plan() call. Arrivals and cancellations are scripted by
// tick; steps (plans with work) are numbered by the scheduler.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kv/block_manager.h"
#include "sched/kv_room.h"
#include "sched/plan_checks_testing.h"
#include "sched/scheduler.h"

namespace cohort::sched::testing {

struct Arrival {
  int64_t tick = 0;          // submitted just before the plan of this tick
  int n_prompt = 1;
  int max_new = 1;           // or kNoLimit
  int stop_after = 0;        // > 0: the executor reports a stop at this many tokens
  int64_t cancel_tick = -1;  // >= tick: cancelled just before that tick's plan
  int prefix = -1;           // >= 0: the prompt starts with shared prefix #prefix
  int shift_ctx = 0;         // --context-shift: ContextShift's n_ctx, n_keep, n_discard
  int shift_keep = 0;
  int shift_discard = 0;

  ContextShift shift() const { return {shift_ctx, shift_keep, shift_discard}; }
};

// What happened to one request of the workload.
struct Life {
  RequestId id = kNoRequest;
  int64_t admit_step = -1;        // plan.step of the plan that admitted it
  int64_t first_token_step = -1;  // plan.step of the step that sampled its first token
  int64_t end_step = -1;          // plan.step of the plan that listed it as ended
  std::optional<EndReason> reason;
  int n_cached = 0;
  int next_pos = 0;               // next prompt position to compute
  int n_generated = 0;
  int n_shifted = 0;              // positions dropped by context shifts
  bool kept = false;              // final logits kept (READY)
  std::vector<int64_t> pp_steps, tg_steps;
};

struct SimOptions {
  SchedulerOptions sched;
  int n_kv_blocks = 1 << 14;
  int block_size = 16;
  int prefix_len = 0;         // tokens of each shared prefix
  double step_fail_p = 0;     // chance that a whole step fails
  double slot_fail_p = 0;     // chance that one sampling fails
  uint32_t seed = 1;
};

// Every phase policy, for tests that run under each.
inline constexpr PolicyKind kAllPolicies[] = {PolicyKind::kMixed, PolicyKind::kNoCont, PolicyKind::kCohort,
                                              PolicyKind::kSerial};

// SimOptions with the scheduler's policy, -np, -b and --tg-quantum set.
inline SimOptions sim_options(PolicyKind policy, int n_slots, int n_batch, int tg_quantum = 0) {
  SimOptions o;
  o.sched.policy = policy;
  o.sched.n_slots = n_slots;
  o.sched.n_batch = n_batch;
  o.sched.tg_quantum = tg_quantum;
  return o;
}

class Simulation {
 public:
  Simulation(const SimOptions& options, std::vector<Arrival> arrivals)
      : options_(options),
        arrivals_(std::move(arrivals)),
        lives_(arrivals_.size()),
        blocks_(options.n_kv_blocks, options.block_size),
        room_(blocks_, [this](RequestId id) { return prompt_of(id); }),
        sched_(options.sched, room_),
        slot_life_(static_cast<size_t>(options.sched.n_slots), -1),
        rng_(options.seed) {}

  // Ticks until every arrival has ended and the scheduler is idle; returns
  // the first violation, "" if none.
  std::string run(int64_t max_ticks = 2'000'000) {
    while (!done()) {
      if (tick_ >= max_ticks) return fmt::format("not done after {} ticks", tick_);
      if (std::string e = tick(); !e.empty()) {
        return fmt::format("tick {}: {} [{}]", tick_ - 1, e, summary());
      }
    }
    if (blocks_.n_seqs() != 0) return "KV sequences left after the run";
    if (std::string a = blocks_.audit(); !a.empty()) return "KV audit: " + a;
    const SchedulerCounters c = sched_.counters();
    if (c.n_processing != 0 || c.n_queued != 0) return "requests left in slots or queue";
    return "";
  }

  // Submits and cancels what is due, plans, checks, executes, reports.
  std::string tick() {
    submit_due();
    const BatchPlan& plan = sched_.plan();
    ++tick_;
    if (std::string e = check_plan(plan, sched_, plans_.empty() ? nullptr : &plans_.back()); !e.empty()) return e;
    if (std::string e = apply_endings_and_admissions(plan); !e.empty()) return e;
    if (!plan.has_work()) {
      if (!sched_.idle()) return "a plan without work while requests are pending";
      return "";
    }
    plans_.push_back(plan);
    StepResult result;
    if (std::string e = execute(plan, result); !e.empty()) return e;
    sched_.on_step_done(result);
    return "";
  }

  bool done() const {
    return std::all_of(lives_.begin(), lives_.end(), [](const Life& l) { return l.reason; }) &&
           sched_.idle();
  }

  // The scheduler's slots and queue, for failure messages.
  std::string summary() const {
    std::string s = fmt::format("phase {}, queue {}; slots:", phase_name(sched_.counters().phase),
                                sched_.n_queued());
    for (const std::optional<Request>& r : sched_.slots()) {
      if (!r) {
        s += " -";
        continue;
      }
      s += fmt::format(" {}:{}{} p{}/{} g{}", r->id, state_name(r->state), r->parked ? "(parked)" : "",
                       r->n_prefilled, r->n_prompt(), r->n_generated);
    }
    return s;
  }

  const std::vector<Life>& lives() const { return lives_; }
  const Life& life(size_t i) const { return lives_[i]; }
  const std::vector<BatchPlan>& plans() const { return plans_; }  // plans with work
  Scheduler& scheduler() { return sched_; }
  kv::BlockManager& blocks() { return blocks_; }
  int64_t now() const { return tick_; }

 private:
  std::span<const int32_t> prompt_of(RequestId id) { return prompts_.at(id); }

  std::vector<int32_t> make_prompt(const Arrival& a, RequestId id) const {
    std::vector<int32_t> t;
    for (int i = 0; i < a.n_prompt; ++i) {
      if (a.prefix >= 0 && i < options_.prefix_len) {
        t.push_back(1000 * (a.prefix + 1) + i);
      } else {
        t.push_back(static_cast<int32_t>(1'000'000 + (id * 7919 + i) % 1'000'000));
      }
    }
    return t;
  }

  void submit_due() {
    for (size_t i = 0; i < arrivals_.size(); ++i) {
      const Arrival& a = arrivals_[i];
      if (a.tick == tick_) {
        const RequestId id = sched_.submit({a.n_prompt, a.max_new, false, a.shift()});
        lives_[i].id = id;
        prompts_[id] = make_prompt(a, id);
        index_of_[id] = i;
      }
      if (a.cancel_tick == tick_ && lives_[i].id != kNoRequest) sched_.cancel(lives_[i].id);
    }
  }

  Life* life_of(RequestId id) {
    auto it = index_of_.find(id);
    return it == index_of_.end() ? nullptr : &lives_[it->second];
  }

  std::string apply_endings_and_admissions(const BatchPlan& plan) {
    for (const Ending& e : plan.ended) {
      Life* l = life_of(e.id);
      if (!l || l->reason) return fmt::format("request {} ended twice or unknown", e.id);
      l->reason = e.reason;
      l->end_step = plan.step;
      if (e.slot >= 0) {
        if (slot_life_[static_cast<size_t>(e.slot)] != e.id) return "ended: wrong slot";
        const bool reused = std::any_of(plan.admitted.begin(), plan.admitted.end(),
                                        [&](const Admission& a) { return a.slot == e.slot; });
        if (!reused && blocks_.contains(e.slot)) return fmt::format("slot {} holds KV", e.slot);
        slot_life_[static_cast<size_t>(e.slot)] = -1;
      }
    }
    for (const Admission& a : plan.admitted) {
      Life* l = life_of(a.id);
      if (!l || l->admit_step >= 0) return fmt::format("request {} admitted twice", a.id);
      if (slot_life_[static_cast<size_t>(a.slot)] != -1) return "admitted into a busy slot";
      if (blocks_.n_committed(a.slot) != a.n_cached) return "n_cached disagrees with the KV";
      if (a.n_cached >= arrival_of(a.id).n_prompt) return "a whole prompt counted as cached";
      slot_life_[static_cast<size_t>(a.slot)] = a.id;
      l->admit_step = plan.step;
      l->n_cached = a.n_cached;
      l->next_pos = a.n_cached;
    }
    return "";
  }

  const Arrival& arrival_of(RequestId id) const { return arrivals_[index_of_.at(id)]; }

  Life* slot_life(int slot, RequestId id) {
    if (slot < 0 || slot >= options_.sched.n_slots) return nullptr;
    if (slot_life_[static_cast<size_t>(slot)] != id) return nullptr;
    return life_of(id);
  }

  std::string execute(const BatchPlan& plan, StepResult& result) {
    std::uniform_real_distribution<double> u(0, 1);
    if (options_.step_fail_p > 0 && u(rng_) < options_.step_fail_p) {
      result.failed = true;  // the forward threw: nothing changed
      return "";
    }
    for (const SlotRef& s : plan.shifted) {
      if (std::string e = check_shift(s); !e.empty()) return e;
    }
    blocks_.take_moves(moves_, move_rounds_);  // as the decoder does
    for (const PlanRow& row : plan.rows) {
      if (std::string e = run_row(plan, row); !e.empty()) return e;
    }
    for (const SlotRef& s : plan.keep_logits) {
      const PlanRow* row = plan.row_of(s.slot);
      Life* l = slot_life(s.slot, s.id);
      if (!row || !row->last_chunk || !l) return "keep_logits without a last chunk";
      l->kept = true;
    }
    for (const SlotRef& s : plan.first_tokens) {
      Life* l = slot_life(s.slot, s.id);
      if (!l) return "first token for a request not in its slot";
      const PlanRow* row = plan.row_of(s.slot);
      if (l->first_token_step >= 0) return fmt::format("request {} sampled a first token twice", s.id);
      if (l->next_pos != arrival_of(s.id).n_prompt) return "first token before the prompt is done";
      if (!l->kept && !(row && row->last_chunk)) return "first token without logits";
      l->first_token_step = plan.step;
      l->n_generated = 1;
      sampled(s.slot, *l, result);
    }
    for (const PlanRow& row : plan.rows) {
      if (row.kind == RowKind::kDecode) sampled(row.slot, *slot_life(row.slot, row.id), result);
    }
    return "";
  }

  // A shift drops what ContextShift says, worked out here on our own record.
  std::string check_shift(const SlotRef& s) {
    Life* l = slot_life(s.slot, s.id);
    if (!l || l->first_token_step < 0) return "a shift for a request that is not decoding";
    const Arrival& a = arrival_of(s.id);
    const int held = a.n_prompt + l->n_generated - 1 - l->n_shifted;
    if (a.shift_ctx == 0 || held + 1 < a.shift_ctx) return fmt::format("request {} shifted early", s.id);
    const int n_left = held - a.shift_keep;
    const int want = std::clamp(a.shift_discard > 0 ? a.shift_discard : n_left / 2, 0, std::max(0, n_left - 1));
    if (blocks_.n_committed(s.slot) != held - want) {
      return fmt::format("request {} holds {} positions after a shift, {} expected", s.id,
                         blocks_.n_committed(s.slot), held - want);
    }
    l->n_shifted += want;
    return "";
  }

  std::string run_row(const BatchPlan& plan, const PlanRow& row) {
    Life* l = slot_life(row.slot, row.id);
    if (!l) return fmt::format("row for request {} not in slot {}", row.id, row.slot);
    const Arrival& a = arrival_of(row.id);
    if (blocks_.n_committed(row.slot) != row.pos) return "row does not continue the KV";
    if (row.pos + row.n_tokens > blocks_.n_tokens(row.slot)) return "row's KV not reserved";
    std::vector<int32_t> tokens;
    if (row.kind == RowKind::kPrompt) {
      if (row.pos != l->next_pos || row.pos + row.n_tokens > a.n_prompt) return "prompt out of order";
      if (row.last_chunk != (row.pos + row.n_tokens == a.n_prompt)) return "last_chunk wrong";
      const std::vector<int32_t>& p = prompts_.at(row.id);
      tokens.assign(p.begin() + row.pos, p.begin() + row.pos + row.n_tokens);
      l->next_pos += row.n_tokens;
      l->pp_steps.push_back(plan.step);
    } else {
      if (l->first_token_step < 0) return "decode row before the first token";
      if (row.n_tokens != 1 || row.pos != a.n_prompt + l->n_generated - 1 - l->n_shifted) return "decode pos wrong";
      if (a.shift_ctx > 0 && row.pos + 1 >= a.shift_ctx) return "a decode row past the shifted context";
      if (a.max_new != kNoLimit && l->n_generated >= a.max_new) return "decoding past max_new";
      tokens.push_back(last_token(*l));
      ++l->n_generated;
      l->tg_steps.push_back(plan.step);
    }
    blocks_.commit(row.slot, tokens);
    return "";
  }

  static int32_t last_token(const Life& l) { return 7 + l.n_generated; }

  void sampled(int slot, const Life& l, StepResult& result) {
    std::uniform_real_distribution<double> u(0, 1);
    if (options_.slot_fail_p > 0 && u(rng_) < options_.slot_fail_p) {
      result.failed_slots.push_back(slot);
      return;
    }
    const Arrival& a = arrival_of(l.id);
    if (a.stop_after > 0 && l.n_generated >= a.stop_after) result.stopped.push_back(slot);
  }

  SimOptions options_;
  std::vector<Arrival> arrivals_;
  std::vector<Life> lives_;  // parallel to arrivals_
  kv::BlockManager blocks_;
  std::vector<kv::RowMove> moves_;  // scratch: the shifts' moves, taken each step
  std::vector<int32_t> move_rounds_;
  PagedKvRoom room_;
  Scheduler sched_;
  std::vector<RequestId> slot_life_;  // [n_slots] request the executor holds there
  std::map<RequestId, std::vector<int32_t>> prompts_;
  std::map<RequestId, size_t> index_of_;
  std::vector<BatchPlan> plans_;
  std::mt19937 rng_;
  int64_t tick_ = 0;
};

}  // namespace cohort::sched::testing
