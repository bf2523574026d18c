// Inbox: how other threads (HTTP handlers) hand submissions and cancellations
// to the engine thread that drives the Scheduler.
//
// submit() assigns the request id under the same lock that appends the
// message, so id order, message order and arrival order agree. take() moves
// every message out, in posting order; a cancel posted after its submit is
// therefore seen after it. wait() lets an idle engine thread sleep until a
// message arrives, instead of polling.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "sched/request.h"

namespace cohort::sched {

struct InboxMessage {
  enum class Kind : uint8_t { kSubmit, kCancel };
  Kind kind = Kind::kSubmit;
  RequestId id = kNoRequest;
  RequestSpec spec;  // kSubmit only
};

class Inbox {
 public:
  // Throws cohort::Error (from validate) for an invalid spec; nothing is
  // posted then. Returns the new request's id.
  RequestId submit(const RequestSpec& spec);
  // Cancelling an id that is unknown or already ended is a no-op later.
  void cancel(RequestId id);

  // Appends all pending messages to `out` (cleared first) and empties the
  // inbox. Reuses out's capacity.
  void take(std::vector<InboxMessage>& out);
  // Blocks until a message is pending or `timeout` passes; returns whether
  // one is pending.
  bool wait(std::chrono::milliseconds timeout);
  bool empty() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<InboxMessage> pending_;  // GUARDED_BY(mutex_)
  RequestId next_id_ = 0;              // GUARDED_BY(mutex_)
};

}  // namespace cohort::sched
