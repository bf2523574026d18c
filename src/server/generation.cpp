#include "server/generation.h"

namespace cohort::server {

std::optional<GenerationEvent> RequestHandle::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  GenerationEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

void RequestHandle::cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_ = true;
}

bool RequestHandle::cancelled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cancelled_;
}

void RequestHandle::push(GenerationEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
  }
  ready_.notify_one();
}

}  // namespace cohort::server
