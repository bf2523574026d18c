// MixedPolicy (--phase-policy mixed): continuous batching as llama-server
// does it. Each step:
//   1. one decode row per decoding request, in arrival order;
//   2. queued requests are admitted into free slots (FIFO), after the decode
//      rows took their KV positions, so a new prompt never takes the room a
//      running generation needs for its next token;
//   3. the rest of the -b capacity is filled with prompt chunks of
//      prefilling requests in arrival order, each taking all it can.
// A request whose last chunk runs samples its first token right after that
// step and decodes from the next one, so READY is never used. Decode rows
// and prompt chunks share batches: while a long prompt is processed, each
// decoding request gets one token per step of ceil(prompt / -b) prefill-sized
// steps (the stall DESIGN.md describes).
//
// NoContPolicy (no_cont_policy.h) is this with prompts held back while any
// request decodes.
//
// Thread safety: none; engine thread only.
#pragma once

#include "sched/phase_policy.h"

namespace cohort::sched {

class MixedPolicy : public PhasePolicy {
 public:
  PolicyKind kind() const override { return PolicyKind::kMixed; }
  void plan(PlanBuilder& step) override;

 protected:
  // Whether prompt chunks may join this step.
  virtual bool allows_prompts(bool any_decoding) const {
    (void)any_decoding;
    return true;
  }
};

}  // namespace cohort::sched
