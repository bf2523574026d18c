#include "sched/request.h"

#include <algorithm>

#include "common/error.h"

namespace cohort::sched {

void validate(const RequestSpec& spec) {
  if (spec.n_prompt < 1) fail("n_prompt must be at least 1 token (got {})", spec.n_prompt);
  if (spec.max_new_tokens < 1 && spec.max_new_tokens != kNoLimit) {
    fail("max_new_tokens must be at least 1, or {} for no limit (got {})", kNoLimit,
         spec.max_new_tokens);
  }
  const ContextShift& c = spec.shift;
  if (c.n_ctx < 0 || c.n_discard < 0 || c.n_keep < 0 || (c.n_ctx > 0 && c.n_keep > c.n_ctx - 4)) {
    fail("context shift: n_ctx {} must be >= 0, n_keep {} in [0, n_ctx - 4], n_discard {} >= 0", c.n_ctx,
         c.n_keep, c.n_discard);
  }
}

int Request::shift_discard() const {
  const int n_left = next_pos() - spec.shift.n_keep;
  const int n = spec.shift.n_discard > 0 ? spec.shift.n_discard : n_left / 2;
  return std::clamp(n, 0, std::max(0, n_left - 1));
}

const char* state_name(RequestState state) {
  switch (state) {
    case RequestState::kQueued: return "queued";
    case RequestState::kPrefill: return "prefill";
    case RequestState::kReady: return "ready";
    case RequestState::kDecode: return "decode";
    case RequestState::kFinished: return "finished";
    case RequestState::kCancelled: return "cancelled";
  }
  return "?";
}

const char* reason_name(EndReason reason) {
  switch (reason) {
    case EndReason::kStop: return "stop";
    case EndReason::kLength: return "length";
    case EndReason::kCancelled: return "cancelled";
    case EndReason::kError: return "error";
    case EndReason::kNoKvRoom: return "no_kv_room";
  }
  return "?";
}

RequestState end_state(EndReason reason) {
  return reason == EndReason::kStop || reason == EndReason::kLength ? RequestState::kFinished
                                                                    : RequestState::kCancelled;
}

}  // namespace cohort::sched
