#include "common/job_thread.h"

#include <cassert>
#include <utility>

#include "common/spin_wait.h"

namespace cohort {

JobThread::JobThread(int64_t spin_ns) : spin_ns_(spin_ns), thread_([this] { loop(); }) {}

JobThread::~JobThread() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !running_; });
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void JobThread::start(std::function<void()> job) {
  assert(!busy_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = std::move(job);
    running_ = true;
    pending_ = true;
    error_ = nullptr;
  }
  busy_ = true;
  cv_.notify_all();
}

void JobThread::wait() {
  assert(busy_);
  spin_until([&] { return !running_.load(std::memory_order_acquire); }, spin_ns_);
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !running_; });
    error = std::exchange(error_, nullptr);
  }
  busy_ = false;
  if (error) std::rethrow_exception(error);
}

void JobThread::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!job_ && !quit_ && spin_ns_ > 0) {
      lock.unlock();
      spin_until([&] { return pending_.load(std::memory_order_acquire); }, spin_ns_);
      lock.lock();
    }
    cv_.wait(lock, [&] { return quit_ || job_; });
    if (!job_) return;  // quit_ with nothing pending
    std::function<void()> job = std::move(job_);
    job_ = nullptr;
    pending_ = false;
    lock.unlock();
    std::exception_ptr error;
    try {
      job();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    running_ = false;
    cv_.notify_all();
  }
}

}  // namespace cohort
