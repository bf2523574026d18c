// A fixed pool of worker threads for data-parallel loops in the CPU forward
// pass: parallel_for splits [0, n) into one contiguous range per thread, and
// the calling thread works on the first range itself.
//
// A forward step issues hundreds of short loops, so dispatch must cost
// microseconds: workers spin on a generation counter for a short while after
// each loop and only then block on a condition variable (an idle pool uses no
// CPU). Not reentrant: parallel_for must not be called from inside a task,
// nor from two threads at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cohort {

class ThreadPool {
 public:
  // n_threads counts the caller: n_threads - 1 workers are started.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Calls fn(begin, end, thread_index) on disjoint ranges covering [0, n);
  // returns when all are done. Ranges are multiples of `grain` except the last.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                    int64_t grain = 1);

 private:
  void worker(int index);
  void run_share(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  // The current loop (written by the caller before the generation is bumped).
  const std::function<void(int64_t, int64_t, int)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t grain_ = 1;
  // Bumped (release) to start a loop; workers acquire it, so the loop fields
  // above are visible to them.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};  // workers still running the current loop
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace cohort
