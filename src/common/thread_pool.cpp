#include "common/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#define COHORT_PAUSE() _mm_pause()
#else
#define COHORT_PAUSE() std::this_thread::yield()
#endif

namespace cohort {
namespace {
// Spin iterations before a worker blocks: about 100 us, several forward ops,
// so that back-to-back loops never pay a wake-up. (Measured: a blocking
// wake-up costs 20-50 us on the development machine.)
constexpr int kSpinIterations = 20000;
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_share(int index) {
  const int64_t blocks = (n_ + grain_ - 1) / grain_;
  const int64_t per = blocks / n_threads_;
  const int64_t extra = blocks % n_threads_;
  const int64_t b0 = index * per + std::min<int64_t>(index, extra);
  const int64_t b1 = b0 + per + (index < extra ? 1 : 0);
  const int64_t begin = b0 * grain_;
  const int64_t end = std::min(n_, b1 * grain_);
  if (begin < end) (*fn_)(begin, end, index);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                              int64_t grain) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n <= grain) {
    fn(0, n, 0);
    return;
  }
  fn_ = &fn;
  n_ = n;
  grain_ = std::max<int64_t>(1, grain);
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    // The lock orders the bump against a worker that is about to block.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run_share(0);
  // Acquire pairs with the workers' release: their writes are visible after.
  while (pending_.load(std::memory_order_acquire) != 0) COHORT_PAUSE();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
      COHORT_PAUSE();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    run_share(index);
    pending_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace cohort
