// Scheduler mechanics common to every policy: KV room (a prompt that never
// fits, decode room running out), executor failures, stop and length,
// option and request validation, submission from other threads.
#include "sched/scheduler.h"

#include <algorithm>
#include <chrono>
#include <span>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "sched/sim_testing.h"

namespace cohort::sched {
namespace scheduler_test {

using testing::kAllPolicies;
using testing::SimOptions;
using testing::Simulation;
using testing::sim_options;

TEST(Scheduler, APromptLargerThanTheWholeCacheEndsWithNoKvRoom) {
  for (PolicyKind policy : kAllPolicies) {
    SimOptions o = sim_options(policy, 2, 64);
    o.n_kv_blocks = 4;  // 64 tokens of 16
    Simulation sim(o, {{.tick = 0, .n_prompt = 100, .max_new = 2},
                       {.tick = 0, .n_prompt = 20, .max_new = 2}});
    ASSERT_EQ(sim.run(), "") << policy_name(policy);
    EXPECT_EQ(sim.life(0).reason, EndReason::kNoKvRoom);
    EXPECT_EQ(sim.life(1).reason, EndReason::kLength);
  }
}

TEST(Scheduler, RunningOutOfDecodeRoomEndsTheLatestArrivalNotEveryone) {
  for (PolicyKind policy : kAllPolicies) {
    SimOptions o = sim_options(policy, 2, 64);
    o.n_kv_blocks = 4;
    Simulation sim(o, {{.tick = 0, .n_prompt = 30, .max_new = 20},
                       {.tick = 0, .n_prompt = 30, .max_new = 20}});
    ASSERT_EQ(sim.run(), "") << policy_name(policy);
    EXPECT_EQ(sim.life(0).reason, EndReason::kLength) << policy_name(policy);
    EXPECT_EQ(sim.life(1).reason, EndReason::kNoKvRoom) << policy_name(policy);
  }
}

TEST(Scheduler, AFailedStepEndsItsRequestsWithAnErrorAndFreesTheirSlots) {
  SimOptions o = sim_options(PolicyKind::kCohort, 2, 64);
  o.step_fail_p = 1.0;
  Simulation sim(o, {{.tick = 0, .n_prompt = 30, .max_new = 2},
                     {.tick = 0, .n_prompt = 50, .max_new = 2}});
  ASSERT_EQ(sim.run(), "");
  EXPECT_EQ(sim.life(0).reason, EndReason::kError);
  EXPECT_EQ(sim.life(1).reason, EndReason::kError);
  EXPECT_EQ(sim.blocks().n_free_blocks(), sim.blocks().n_blocks());
}

TEST(Scheduler, StopAndLengthEndRequestsAtTheRightToken) {
  Simulation sim(sim_options(PolicyKind::kCohort, 3, 64),
                 {{.tick = 0, .n_prompt = 5, .max_new = 10, .stop_after = 3},
                  {.tick = 0, .n_prompt = 5, .max_new = 1},
                  {.tick = 0, .n_prompt = 5, .max_new = 4}});
  ASSERT_EQ(sim.run(), "");
  EXPECT_EQ(sim.life(0).reason, EndReason::kStop);
  EXPECT_EQ(sim.life(0).n_generated, 3);
  EXPECT_EQ(sim.life(1).reason, EndReason::kLength);
  EXPECT_TRUE(sim.life(1).tg_steps.empty());  // its first token was its last
  EXPECT_EQ(sim.life(2).n_generated, 4);
  const SchedulerCounters c = sim.scheduler().counters();
  EXPECT_EQ(c.n_finished, 3);
  EXPECT_EQ(c.n_first_tokens, 3);
  EXPECT_EQ(c.n_prompt_tokens, 15);
  EXPECT_EQ(c.n_decode_tokens, 2 + 3);
}

TEST(Scheduler, ContextShiftDecodesPastAFullContextUnderEveryPolicy) {
  for (PolicyKind policy : kAllPolicies) {
    // Three requests whose context of 40 positions fills many times over;
    // the second shares its prompt's blocks with the first.
    SimOptions o = sim_options(policy, 3, 64);
    o.prefix_len = 32;
    Simulation sim(o, {{.tick = 0, .n_prompt = 35, .max_new = 100, .prefix = 0, .shift_ctx = 40, .shift_keep = 3},
                       {.tick = 0, .n_prompt = 36, .max_new = 90, .prefix = 0, .shift_ctx = 40, .shift_discard = 5},
                       {.tick = 2, .n_prompt = 10, .max_new = kNoLimit, .stop_after = 120, .shift_ctx = 40,
                        .shift_keep = 3}});
    ASSERT_EQ(sim.run(), "") << policy_name(policy);
    EXPECT_EQ(sim.life(0).reason, EndReason::kLength) << policy_name(policy);
    EXPECT_EQ(sim.life(0).n_generated, 100);
    EXPECT_GT(sim.life(0).n_shifted, 0);
    EXPECT_EQ(sim.life(1).n_generated, 90);
    EXPECT_EQ(sim.life(1).n_shifted % 5, 0);
    EXPECT_EQ(sim.life(2).reason, EndReason::kStop);
    EXPECT_EQ(sim.life(2).n_generated, 120);
    EXPECT_EQ(sim.blocks().audit(), "");
    EXPECT_EQ(sim.blocks().n_seqs(), 0);
  }
}

TEST(Scheduler, WithoutContextShiftNoShiftHappens) {
  Simulation sim(sim_options(PolicyKind::kCohort, 1, 64), {{.tick = 0, .n_prompt = 35, .max_new = 100}});
  ASSERT_EQ(sim.run(), "");
  EXPECT_EQ(sim.life(0).n_generated, 100);
  EXPECT_EQ(sim.life(0).n_shifted, 0);
}

TEST(Scheduler, InvalidOptionsAndRequestsAreRejectedWithTheirName) {
  kv::BlockManager blocks(4);
  PagedKvRoom room(blocks, [](RequestId) { return std::span<const int32_t>(); });
  SchedulerOptions bad;
  bad.n_slots = 0;
  EXPECT_THROW(Scheduler(bad, room), Error);
  bad = {};
  bad.tg_quantum = -1;
  EXPECT_THROW(Scheduler(bad, room), Error);
  Scheduler s({}, room);
  EXPECT_THROW(s.submit({0, 5}), Error);
  EXPECT_THROW(s.submit({5, 0}), Error);
  EXPECT_NO_THROW(s.submit({5, kNoLimit}));
  EXPECT_THROW(s.submit({5, 5, false, {.n_ctx = 8, .n_keep = 5}}), Error);  // n_keep > n_ctx - 4
  EXPECT_THROW(s.submit({5, 5, false, {.n_ctx = 8, .n_discard = -1}}), Error);
  EXPECT_NO_THROW(s.submit({5, 5, false, {.n_ctx = 8, .n_keep = 4}}));
}

TEST(Scheduler, SubmissionsFromOtherThreadsKeepTheirOrderAndIds) {
  kv::BlockManager blocks(1024);
  std::vector<int32_t> prompt(8, 1);
  PagedKvRoom room(blocks, [&](RequestId) { return std::span<const int32_t>(prompt); });
  SchedulerOptions o;
  o.n_slots = 4;
  Scheduler sched(o, room);
  std::vector<std::thread> threads;
  std::vector<std::vector<RequestId>> ids(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) ids[static_cast<size_t>(t)].push_back(sched.submit({8, 1}));
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(sched.wait_for_work(std::chrono::milliseconds(0)));
  for (const std::vector<RequestId>& v : ids) EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  sched.plan();
  EXPECT_EQ(sched.n_queued(), 400 - 4);
  EXPECT_EQ(sched.slots()[0]->id, 0);  // admission in id order
  EXPECT_EQ(sched.slots()[3]->id, 3);
}

}  // namespace scheduler_test
}  // namespace cohort::sched
