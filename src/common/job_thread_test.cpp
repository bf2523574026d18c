// JobThread: a job runs in the background while its owner goes on, wait()
// returns after it, an exception reaches the owner, and the destructor
// waits for a job in flight.
#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/job_thread.h"

namespace cohort {
namespace job_thread_test {

TEST(JobThread, TheOwnerGoesOnWhileTheJobRuns) {
  JobThread runner;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> stage{0};
  runner.start([&] {
    stage = 1;
    released.wait();  // holds the job until the owner has done its own work
    stage = 2;
  });
  EXPECT_TRUE(runner.busy());
  while (stage.load() == 0) std::this_thread::yield();
  EXPECT_EQ(stage.load(), 1);  // start() returned with the job still running
  release.set_value();
  runner.wait();
  EXPECT_EQ(stage.load(), 2);
  EXPECT_FALSE(runner.busy());
}

TEST(JobThread, RunsJobsOneAfterAnotherOnOneThread) {
  JobThread runner;
  std::thread::id first, second;
  runner.start([&] { first = std::this_thread::get_id(); });
  runner.wait();
  runner.start([&] { second = std::this_thread::get_id(); });
  runner.wait();
  EXPECT_EQ(first, second);
  EXPECT_NE(first, std::this_thread::get_id());
}

TEST(JobThread, AnExceptionReachesTheOwnerOnce) {
  JobThread runner;
  runner.start([] { throw std::runtime_error("step failed"); });
  EXPECT_THROW(runner.wait(), std::runtime_error);
  int ran = 0;
  runner.start([&] { ++ran; });
  EXPECT_NO_THROW(runner.wait());  // the next job starts clean
  EXPECT_EQ(ran, 1);
}

TEST(JobThread, TheDestructorWaitsForAJobInFlight) {
  std::atomic<bool> done{false};
  {
    JobThread runner;
    runner.start([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      done = true;
    });
  }
  EXPECT_TRUE(done.load());
}

// With a spin budget the same holds: jobs in order, each waited for, an
// exception delivered, jobs that outlast the spin and gaps between jobs
// longer than it (both sides then sleep), and a destructor while idle.
TEST(JobThread, SpinningBeforeSleepingChangesNothingButTheWakeUps) {
  JobThread runner(2'000'000);  // 2 ms
  std::vector<int> order;
  for (int i = 0; i < 50; ++i) {
    runner.start([&order, i] {
      if (i % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      order.push_back(i);
    });
    runner.wait();
    if (i % 10 == 4) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  runner.start([] { throw std::runtime_error("step failed"); });
  EXPECT_THROW(runner.wait(), std::runtime_error);
}

}  // namespace job_thread_test
}  // namespace cohort
