#include "server/generation.h"

namespace cohort::server {

uint64_t EventSignal::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return count_;
}

void EventSignal::wait(uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return count_ != seen; });
}

void EventSignal::notify() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++count_;
  }
  changed_.notify_all();
}

std::optional<GenerationEvent> RequestHandle::try_next() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (events_.empty()) return std::nullopt;
  GenerationEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

void RequestHandle::bind(std::shared_ptr<EventSignal> signal) {
  std::shared_ptr<EventSignal> waiting;  // notified outside the lock, as push() does
  {
    std::lock_guard<std::mutex> lock(mutex_);
    signal_ = std::move(signal);
    if (!events_.empty()) waiting = signal_;
  }
  if (waiting) waiting->notify();
}

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
  std::shared_ptr<EventSignal> signal;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
    signal = signal_;
  }
  ready_.notify_one();
  if (signal) signal->notify();
}

}  // namespace cohort::server
