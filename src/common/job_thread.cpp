#include "common/job_thread.h"

#include <cassert>
#include <utility>

namespace cohort {

JobThread::JobThread() : thread_([this] { loop(); }) {}

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
    error_ = nullptr;
  }
  busy_ = true;
  cv_.notify_all();
}

void JobThread::wait() {
  assert(busy_);
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
    cv_.wait(lock, [&] { return quit_ || job_; });
    if (!job_) return;  // quit_ with nothing pending
    std::function<void()> job = std::move(job_);
    job_ = nullptr;
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
