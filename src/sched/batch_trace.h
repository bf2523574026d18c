// BatchTrace: the batch trace (--trace-batches FILE), one JSON object per
// line per step, so that tests and scripts can check the phase invariants
// from outside (no step mixes PP and TG under cohort, no first token before
// the barrier, queued work progresses).
//
// A line, keys always in this order (lists may be empty):
//   {"step":12,"phase":"pp","rows":[{"slot":0,"id":3,"kind":"pp","n":256,
//    "pos":512,"last":false}],"first_tokens":[3],"keep_logits":[4],
//    "admitted":[{"slot":1,"id":4,"cached":32}],"ended":[{"slot":2,"id":1,
//    "reason":"stop"}],"parked":[],"unparked":[],"queued":1,"processing":2,
//    "parked_n":0,"blocked":1,"cohort":2}
// first_tokens, keep_logits, parked and unparked list request ids. Counts are
// SchedulerCounters as of the plan. Values are numbers and fixed ASCII
// names, so the JSON is formatted here by hand, no JSON library.
//
// Thread safety: none; the engine thread records after each plan().
#pragma once

#include <ostream>
#include <string>

#include "sched/batch_plan.h"
#include "sched/scheduler.h"

namespace cohort::sched {

// One line, without the newline.
std::string format_trace_line(const BatchPlan& plan, const SchedulerCounters& counters);

class BatchTrace {
 public:
  // `out` must outlive the trace; it is written to, never closed.
  explicit BatchTrace(std::ostream& out) : out_(out) {}

  // Writes one line for a plan with work or with admissions or endings;
  // a plan with none of these (an idle poll) writes nothing.
  void record(const BatchPlan& plan, const SchedulerCounters& counters);

 private:
  std::ostream& out_;
};

}  // namespace cohort::sched
