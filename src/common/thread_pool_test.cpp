// ThreadPool: every index run exactly once in grain-aligned ranges, one range
// at a time per thread index, workers woken from sleep (poll 0) and spinning
// (poll 100), back-to-back loops that the caller may finish alone, and
// destruction with the workers asleep.
#include "common/thread_pool.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

namespace cohort {
namespace thread_pool_test {

struct Seen {
  explicit Seen(int64_t n, int n_threads)
      : hits(static_cast<size_t>(n)), busy(static_cast<size_t>(n_threads)) {}
  std::vector<std::atomic<int>> hits;   // [n] times each index ran
  std::vector<std::atomic<int>> busy;   // [n_threads] ranges in progress per thread index
  std::atomic<int> overlaps{0};         // a thread index ran two ranges at once
  std::atomic<int> misaligned{0};       // a range not on grain boundaries
  std::atomic<int> bad_index{0};
};

void run_and_check(ThreadPool& pool, int64_t n, int64_t grain) {
  SCOPED_TRACE(::testing::Message() << pool.n_threads() << " threads, poll " << pool.poll() << ", n " << n
                                    << ", grain " << grain);
  Seen s(n, pool.n_threads());
  pool.parallel_for(n, [&](int64_t begin, int64_t end, int thread) {
    if (thread < 0 || thread >= pool.n_threads()) {
      ++s.bad_index;
      return;
    }
    if (s.busy[static_cast<size_t>(thread)].fetch_add(1) != 0) ++s.overlaps;
    if (begin % grain != 0 || (end % grain != 0 && end != n) || begin >= end) ++s.misaligned;
    for (int64_t i = begin; i < end; ++i) s.hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
    s.busy[static_cast<size_t>(thread)].fetch_sub(1);
  }, grain);
  // parallel_for returned: every task's writes are visible here.
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(s.hits[static_cast<size_t>(i)].load(), 1) << "index " << i;
  EXPECT_EQ(s.overlaps.load(), 0);
  EXPECT_EQ(s.misaligned.load(), 0);
  EXPECT_EQ(s.bad_index.load(), 0);
}

TEST(ThreadPool, EveryIndexRunsExactlyOnceInGrainAlignedRanges) {
  for (int poll : {0, 50, 100}) {
    for (int n_threads : {1, 2, 3, 8}) {
      ThreadPool pool(n_threads, poll);
      for (int64_t n : {1, 2, 7, 16, 100, 1000, 4099}) {
        for (int64_t grain : {1, 3, 16, 2000}) run_and_check(pool, n, grain);
      }
    }
  }
}

// Back-to-back small loops: a worker often wakes for a loop that the others
// already finished and claims in the next one. Nothing may run twice.
TEST(ThreadPool, ManyShortLoopsInARow) {
  for (int poll : {0, 100}) {
    ThreadPool pool(4, poll);
    for (int loop = 0; loop < 3000; ++loop) {
      run_and_check(pool, 2 + loop % 40, 1 + loop % 3);
      if (HasFatalFailure()) return;
    }
  }
}

// A loop of n_threads single-index chunks whose tasks all wait for each
// other: it completes only if every worker woke and took one. With poll 0 the
// workers sleep at once after each loop, so every round wakes them from
// sleep. (The wait has a deadline so that a failure does not hang the suite.)
TEST(ThreadPool, WorkersWakeFromSleepForEachLoop) {
  for (int poll : {0, 100}) {
    constexpr int kThreads = 4;
    ThreadPool pool(kThreads, poll);
    for (int round = 0; round < 50; ++round) {
      std::atomic<int> arrived{0};
      std::atomic<bool> timed_out{false};
      pool.parallel_for(kThreads, [&](int64_t, int64_t, int) {
        arrived.fetch_add(1);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (arrived.load() < kThreads) {
          if (std::chrono::steady_clock::now() > deadline) {
            timed_out = true;
            return;
          }
        }
      });
      ASSERT_FALSE(timed_out.load()) << "poll " << poll << " round " << round << ": only " << arrived.load()
                                     << " of " << kThreads << " threads ran";
    }
  }
}

TEST(ThreadPool, DestroyedWhileWorkersSleepOrSpin) {
  for (int poll : {0, 100}) {
    // Never used: the workers may not even have started waiting.
    { ThreadPool pool(3, poll); }
    // Used, then destroyed with the workers asleep (poll 0) or spinning.
    auto pool = std::make_unique<ThreadPool>(3, poll);
    run_and_check(*pool, 100, 1);
    pool.reset();
    SUCCEED();
  }
}

TEST(ThreadPool, PollIsClampedToItsRange) {
  EXPECT_EQ(ThreadPool(2, -5).poll(), 0);
  EXPECT_EQ(ThreadPool(2, 500).poll(), 100);
  EXPECT_EQ(ThreadPool(2).poll(), kDefaultPoll);
  EXPECT_EQ(ThreadPool(0).n_threads(), 1);
}

}  // namespace thread_pool_test
}  // namespace cohort
