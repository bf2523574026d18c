// One thread that runs one job at a time in the background: start(job)
// hands it over and returns at once, wait() blocks until it has returned
// and rethrows what it threw. The thread lives as long as the object, so a
// job starts with a wake-up rather than a thread start.
//
// With a spin budget, wait() and the idle thread each spin that long
// (common/spin_wait.h) before they sleep: a sleep and its wake-up cost tens
// of microseconds on each side, which a GPU's decode step of a few
// milliseconds, handed over and waited for at every step, feels. Where the
// job itself computes on the CPU's cores, spin 0: a spinning owner would
// take a core from it.
//
// Thread safety: one owner thread calls start() and wait(), alternately.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace cohort {

class JobThread {
 public:
  explicit JobThread(int64_t spin_ns = 0);
  ~JobThread();  // waits for a job in flight, then ends the thread
  JobThread(const JobThread&) = delete;
  JobThread& operator=(const JobThread&) = delete;

  // REQUIRES: !busy().
  void start(std::function<void()> job);
  // REQUIRES: busy(). Returns when the job has; rethrows its exception.
  void wait();
  // A job was started and not yet waited for.
  bool busy() const { return busy_; }

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;  // GUARDED_BY(mu_); empty when none is pending
  // A job was handed over and has not returned: written under mu_, read
  // without it by a spinning wait().
  std::atomic<bool> running_{false};
  std::atomic<bool> pending_{false};  // job_ is set: written under mu_, read by the spinning thread
  bool quit_ = false;          // GUARDED_BY(mu_)
  std::exception_ptr error_;   // GUARDED_BY(mu_)
  bool busy_ = false;          // owner thread only
  int64_t spin_ns_ = 0;
  std::thread thread_;
};

}  // namespace cohort
