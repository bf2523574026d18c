// The threads of tensor-parallel ranks: rank 0 runs on the caller's thread,
// ranks 1..n-1 on threads of their own that live as long as this object, so
// that a step starts with a wake-up rather than a thread start.
//
// run(fn) calls fn(rank) on every rank's thread at once and returns when all
// have returned; the ranks' collectives (comm/) synchronise them inside fn.
// If fn throws on some rank, run() waits for the others and rethrows the
// first exception (lowest rank). A rank that throws between two collectives
// leaves its peers waiting in the next one, so fn must not throw after its
// first collective call: the forward's errors are checked before a step.
//
// Thread safety: one thread calls run() at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cohort::engine {

class RankThreads {
 public:
  // REQUIRES: n_ranks >= 1.
  explicit RankThreads(int n_ranks);
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  int n_ranks() const { return static_cast<int>(errors_.size()); }
  void run(const std::function<void(int)>& fn);

 private:
  void work(int rank);

  std::mutex mu_;
  std::condition_variable start_;  // a new job (or stop) for the workers
  std::condition_variable done_;   // a worker finished its part
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;  // bumped per job
  int pending_ = 0;          // workers still running the current job
  bool stop_ = false;
  std::vector<std::exception_ptr> errors_;  // [n_ranks], of the current job
  std::vector<std::thread> threads_;        // ranks 1..n-1
};

}  // namespace cohort::engine
