// NoContPolicy (--phase-policy no-cont): llama-server without continuous
// batching (-nocb). MixedPolicy, except that a step carries prompt tokens
// only if no request is decoding when the step is planned.
//
// Precisely: requests still take free slots as they arrive (FIFO), and
// several prompts may share a prompt-only step, filled as in mixed; a
// request whose prompt completes samples its first token at once. But while
// any request is in DECODE (even one refused KV room for this step), the
// step holds decode rows only, and every unfinished prompt, even one half
// done, waits until no request decodes.
//
// Thread safety: none; engine thread only.
#pragma once

#include "sched/mixed_policy.h"

namespace cohort::sched {

class NoContPolicy final : public MixedPolicy {
 public:
  PolicyKind kind() const override { return PolicyKind::kNoCont; }

 protected:
  bool allows_prompts(bool any_decoding) const override { return !any_decoding; }
};

}  // namespace cohort::sched
