// One thread that runs one job at a time in the background: start(job)
// hands it over and returns at once, wait() blocks until it has returned
// and rethrows what it threw. The thread lives as long as the object, so a
// job starts with a wake-up rather than a thread start.
//
// Thread safety: one owner thread calls start() and wait(), alternately.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace cohort {

class JobThread {
 public:
  JobThread();
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
  bool running_ = false;       // GUARDED_BY(mu_): a job was handed over and has not returned
  bool quit_ = false;          // GUARDED_BY(mu_)
  std::exception_ptr error_;   // GUARDED_BY(mu_)
  bool busy_ = false;          // owner thread only
  std::thread thread_;
};

}  // namespace cohort
