#include "engine/rank_threads.h"

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm/cpu_barrier.h"

namespace cohort::engine {
namespace rank_threads_test {

TEST(RankThreads, EveryRankRunsOnItsOwnThreadAtOnce) {
  for (int n : {1, 2, 3, 5}) {
    RankThreads threads(n);
    comm::CpuBarrier barrier(n, 0);  // would never open if the ranks ran one after another
    for (int round = 0; round < 50; ++round) {
      std::vector<std::thread::id> ids(static_cast<size_t>(n));
      threads.run([&](int r) {
        barrier.arrive_and_wait();
        ids[static_cast<size_t>(r)] = std::this_thread::get_id();
      });
      EXPECT_EQ(ids[0], std::this_thread::get_id()) << "rank 0 runs on the caller";
      EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), static_cast<size_t>(n));
    }
  }
}

TEST(RankThreads, RethrowsTheLowestRanksErrorAndStaysUsable) {
  RankThreads threads(3);
  EXPECT_THROW(threads.run([](int r) {
    if (r >= 1) throw std::runtime_error("rank " + std::to_string(r));
  }), std::runtime_error);
  try {
    threads.run([](int r) {
      if (r >= 1) throw std::runtime_error("rank " + std::to_string(r));
    });
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "rank 1");
  }
  std::atomic<int> ran{0};
  threads.run([&](int) { ++ran; });  // no error left over from the last job
  EXPECT_EQ(ran.load(), 3);
}

}  // namespace rank_threads_test
}  // namespace cohort::engine
