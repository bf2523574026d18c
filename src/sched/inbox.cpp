#include "sched/inbox.h"

namespace cohort::sched {

RequestId Inbox::submit(const RequestSpec& spec) {
  validate(spec);
  RequestId id = kNoRequest;
  {
    std::lock_guard lock(mutex_);
    id = next_id_++;
    pending_.push_back({InboxMessage::Kind::kSubmit, id, spec});
  }
  arrived_.notify_one();
  return id;
}

void Inbox::cancel(RequestId id) {
  {
    std::lock_guard lock(mutex_);
    pending_.push_back({InboxMessage::Kind::kCancel, id, {}});
  }
  arrived_.notify_one();
}

void Inbox::take(std::vector<InboxMessage>& out) {
  out.clear();
  std::lock_guard lock(mutex_);
  out.swap(pending_);
  // pending_ now holds out's old (cleared) buffer: capacity is recycled.
}

bool Inbox::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return arrived_.wait_for(lock, timeout, [&] { return !pending_.empty(); });
}

bool Inbox::empty() const {
  std::lock_guard lock(mutex_);
  return pending_.empty();
}

}  // namespace cohort::sched
