// Scheduler under cohort and serial, on the acceptance cases of
// REQUIREMENTS.md §1: unequal prompts, arrivals during TG, staggered
// arrivals, cancellation of waiting and active members, --tg-quantum, and
// cached prompts. Every plan is also checked by check_plan (sim_testing.h).
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "sched/sim_testing.h"

namespace cohort::sched {
namespace cohort_scheduler_test {

using testing::Arrival;
using testing::Life;
using testing::SimOptions;
using testing::Simulation;
using testing::sim_options;

bool has_row_of(const BatchPlan& plan, RequestId id, RowKind kind) {
  return std::any_of(plan.rows.begin(), plan.rows.end(),
                     [&](const PlanRow& r) { return r.id == id && r.kind == kind; });
}

TEST(CohortScheduler, ShorterPromptWaitsForTheLongerAtTheBarrier) {
  Simulation sim(sim_options(PolicyKind::kCohort, 2, 64),
                 {{.tick = 0, .n_prompt = 200, .max_new = 5},
                  {.tick = 0, .n_prompt = 500, .max_new = 5}});
  ASSERT_EQ(sim.run(), "");
  const Life& a = sim.life(0);
  const Life& b = sim.life(1);
  EXPECT_GE(a.pp_steps.size(), 2u);  // both need several chunks of -b
  EXPECT_GE(b.pp_steps.size(), 2u);
  // They prefill together: fair shares of 32 + 32 until A is done.
  EXPECT_EQ(a.pp_steps, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(sim.plans()[0].rows[0].n_tokens, 32);
  // A waits READY: no token for A until B's prompt is done.
  EXPECT_EQ(a.first_token_step, b.pp_steps.back());
  EXPECT_EQ(b.first_token_step, b.pp_steps.back());
  EXPECT_GT(a.tg_steps.front(), b.pp_steps.back());
  EXPECT_EQ(a.tg_steps, b.tg_steps);  // then they decode together
  EXPECT_EQ(a.reason, EndReason::kLength);
  EXPECT_EQ(a.n_generated, 5);
}

TEST(CohortScheduler, MixedLetsTheShorterPromptDecodeWhileTheLongerPrefills) {
  // The same workload under mixed: the case the cohort policy exists for.
  Simulation sim(sim_options(PolicyKind::kMixed, 2, 64),
                 {{.tick = 0, .n_prompt = 200, .max_new = 5},
                  {.tick = 0, .n_prompt = 500, .max_new = 5}});
  ASSERT_EQ(sim.run(), "");
  EXPECT_LT(sim.life(0).first_token_step, sim.life(1).pp_steps.back());
}

TEST(CohortScheduler, ArrivalDuringDecodeWaitsForThePhaseToEnd) {
  Simulation sim(sim_options(PolicyKind::kCohort, 4, 64),
                 {{.tick = 0, .n_prompt = 10, .max_new = 20},
                  {.tick = 0, .n_prompt = 12, .max_new = 20},
                  {.tick = 5, .n_prompt = 30, .max_new = 2}});
  ASSERT_EQ(sim.run(), "");
  const Life& a = sim.life(0);
  const Life& b = sim.life(1);
  const Life& c = sim.life(2);
  EXPECT_EQ(a.tg_steps, b.tg_steps);  // same-phase concurrency
  EXPECT_EQ(a.tg_steps.size(), 19u);
  EXPECT_GT(c.admit_step, a.tg_steps.back());  // a slot was free all along
  EXPECT_GT(c.pp_steps.front(), std::max(a.tg_steps.back(), b.tg_steps.back()));
  for (const BatchPlan& p : sim.plans()) {
    if (p.step >= 5 && p.step <= a.tg_steps.back()) {
      EXPECT_FALSE(p.has_kind(RowKind::kPrompt)) << p.step;
    }
  }
}

// Requests sent together reach the server a little apart: one that arrives
// while the step finishing the first prompts runs still joins their cohort;
// one that arrives after that step waits for the next.
TEST(CohortScheduler, ArrivalsDuringTheStepThatFinishesThePromptsJoinTheCohort) {
  Simulation sim(sim_options(PolicyKind::kCohort, 4, 64),
                 {{.tick = 0, .n_prompt = 10, .max_new = 6},
                  {.tick = 0, .n_prompt = 10, .max_new = 6},
                  {.tick = 1, .n_prompt = 12, .max_new = 6},
                  {.tick = 2, .n_prompt = 12, .max_new = 6}});
  ASSERT_EQ(sim.run(), "");
  const Life& a = sim.life(0);
  const Life& c = sim.life(2);
  const Life& d = sim.life(3);
  EXPECT_EQ(a.pp_steps, (std::vector<int64_t>{0}));
  EXPECT_EQ(c.admit_step, 1);
  EXPECT_EQ(c.pp_steps, (std::vector<int64_t>{1}));
  EXPECT_EQ(a.first_token_step, 1);  // A waited READY for C
  EXPECT_EQ(c.first_token_step, 1);
  EXPECT_EQ(sim.life(1).tg_steps, c.tg_steps);
  EXPECT_EQ(a.tg_steps, c.tg_steps);
  EXPECT_GT(d.admit_step, c.tg_steps.back());  // sealed at step 1
}

// A lone short prompt: the step after its only chunk opens the barrier
// without rows.
TEST(CohortScheduler, APromptFinishedInOneStepOpensTheBarrierAStepLater) {
  Simulation sim(sim_options(PolicyKind::kCohort, 2, 64), {{.tick = 0, .n_prompt = 10, .max_new = 3}});
  ASSERT_EQ(sim.run(), "");
  ASSERT_GE(sim.plans().size(), 2u);
  EXPECT_TRUE(sim.plans()[1].rows.empty());
  ASSERT_EQ(sim.plans()[1].first_tokens.size(), 1u);
  EXPECT_EQ(sim.life(0).first_token_step, 1);
  EXPECT_EQ(sim.life(0).tg_steps, (std::vector<int64_t>{2, 3}));
}

TEST(CohortScheduler, BlockedRequestsAreCountedDuringDecode) {
  Simulation sim(sim_options(PolicyKind::kCohort, 4, 64),
                 {{.tick = 0, .n_prompt = 10, .max_new = 20},
                  {.tick = 3, .n_prompt = 30, .max_new = 2}});
  for (int i = 0; i < 5; ++i) ASSERT_EQ(sim.tick(), "");
  const SchedulerCounters c = sim.scheduler().counters();
  EXPECT_EQ(c.phase, Phase::kDecode);
  EXPECT_EQ(c.n_queued, 1);
  EXPECT_EQ(c.n_blocked, 1);
  EXPECT_EQ(c.cohort_size, 1);
  EXPECT_EQ(c.n_processing, 1);
  ASSERT_EQ(sim.run(), "");
}

TEST(CohortScheduler, StaggeredArrivalsCannotHoldTheCohortOpen) {
  std::vector<Arrival> arrivals;
  for (int i = 0; i < 40; ++i) arrivals.push_back({.tick = i, .n_prompt = 40, .max_new = 3});
  Simulation sim(sim_options(PolicyKind::kCohort, 64, 16), arrivals);
  ASSERT_EQ(sim.run(), "");
  // The first member finishes its prompt within a bounded number of steps,
  // and the cohort is sealed then: not all 40 join the first cohort.
  const int64_t first_barrier = sim.life(0).first_token_step;
  EXPECT_LT(first_barrier, 40);
  int n_first_cohort = 0;
  for (const Life& l : sim.lives()) n_first_cohort += l.first_token_step == first_barrier;
  EXPECT_GT(n_first_cohort, 1);
  EXPECT_LT(n_first_cohort, 40);
  for (const Life& l : sim.lives()) EXPECT_EQ(l.reason, EndReason::kLength);
}

TEST(CohortScheduler, CancellingAWaitingMemberReleasesItAndTheBarrier) {
  Simulation sim(sim_options(PolicyKind::kCohort, 2, 32),
                 {{.tick = 0, .n_prompt = 10, .max_new = 4, .cancel_tick = 3},
                  {.tick = 0, .n_prompt = 300, .max_new = 4}});
  for (int i = 0; i < 3; ++i) ASSERT_EQ(sim.tick(), "");
  EXPECT_EQ(sim.scheduler().find(sim.life(0).id)->state, RequestState::kReady);
  ASSERT_EQ(sim.tick(), "");  // tick 3: the cancel takes effect
  EXPECT_EQ(sim.life(0).reason, EndReason::kCancelled);
  EXPECT_FALSE(sim.blocks().contains(0));
  EXPECT_EQ(sim.scheduler().counters().n_processing, 1);
  ASSERT_EQ(sim.run(), "");
  EXPECT_EQ(sim.life(0).first_token_step, -1);
  EXPECT_EQ(sim.life(1).reason, EndReason::kLength);
}

TEST(CohortScheduler, CancellingThePrefillingMemberOpensTheBarrierForTheOthers) {
  Simulation sim(sim_options(PolicyKind::kCohort, 2, 32),
                 {{.tick = 0, .n_prompt = 10, .max_new = 4},
                  {.tick = 0, .n_prompt = 300, .max_new = 4, .cancel_tick = 3}});
  ASSERT_EQ(sim.run(), "");
  EXPECT_EQ(sim.life(1).reason, EndReason::kCancelled);
  // The plan of tick 3 opens the barrier for A alone, without a forward.
  const BatchPlan& barrier = sim.plans()[3];
  EXPECT_TRUE(barrier.rows.empty());
  ASSERT_EQ(barrier.first_tokens.size(), 1u);
  EXPECT_EQ(barrier.first_tokens[0].id, sim.life(0).id);
  EXPECT_EQ(sim.life(0).reason, EndReason::kLength);
  EXPECT_EQ(sim.life(0).n_generated, 4);
}

TEST(CohortScheduler, CancellingADecodingMemberLeavesTheOthersDecoding) {
  Simulation sim(sim_options(PolicyKind::kCohort, 3, 64),
                 {{.tick = 0, .n_prompt = 10, .max_new = 10, .cancel_tick = 4},
                  {.tick = 0, .n_prompt = 10, .max_new = 10},
                  {.tick = 2, .n_prompt = 10, .max_new = 2, .cancel_tick = 3}});
  ASSERT_EQ(sim.run(), "");
  EXPECT_EQ(sim.life(0).reason, EndReason::kCancelled);
  EXPECT_EQ(sim.life(0).n_generated, 3);  // first tokens at step 1 (the barrier), then steps 2 and 3
  EXPECT_EQ(sim.life(1).reason, EndReason::kLength);
  EXPECT_EQ(sim.life(2).reason, EndReason::kCancelled);  // cancelled while queued
  EXPECT_EQ(sim.life(2).admit_step, -1);
}

TEST(CohortScheduler, TgQuantumParksDecodersForTheNextPromptWithoutMixing) {
  Simulation sim(sim_options(PolicyKind::kCohort, 4, 64, /*tg_quantum=*/4),
                 {{.tick = 0, .n_prompt = 8, .max_new = 30},
                  {.tick = 3, .n_prompt = 100, .max_new = 10}});
  ASSERT_EQ(sim.run(), "");
  const Life& a = sim.life(0);
  const Life& b = sim.life(1);
  // A's prompt finishes at step 0; the barrier (no rows) is step 1.
  EXPECT_EQ(a.first_token_step, 1);
  EXPECT_EQ(b.admit_step, 6);                      // after 4 TG steps (2..5)
  EXPECT_EQ(b.pp_steps, (std::vector<int64_t>{6, 7}));
  EXPECT_EQ(sim.plans()[6].parked.size(), 1u);
  EXPECT_EQ(sim.plans()[8].unparked.size(), 1u);   // the barrier unparks A, a step after B's last chunk
  for (int64_t step : {6, 7, 8}) EXPECT_FALSE(std::count(a.tg_steps.begin(), a.tg_steps.end(), step));
  EXPECT_TRUE(has_row_of(sim.plans()[9], a.id, RowKind::kDecode));
  EXPECT_TRUE(has_row_of(sim.plans()[9], b.id, RowKind::kDecode));
  EXPECT_EQ(a.n_generated, 30);
}

TEST(CohortScheduler, TgQuantumWithoutQueuedWorkKeepsDecoding) {
  Simulation sim(sim_options(PolicyKind::kCohort, 2, 64, /*tg_quantum=*/2),
                 {{.tick = 0, .n_prompt = 8, .max_new = 12}});
  ASSERT_EQ(sim.run(), "");
  for (const BatchPlan& p : sim.plans()) EXPECT_TRUE(p.parked.empty());
  EXPECT_EQ(sim.life(0).tg_steps.size(), 11u);
}

TEST(CohortScheduler, UnlimitedGenerationDoesNotStarveTheQueueWithAQuantum) {
  Simulation sim(sim_options(PolicyKind::kCohort, 2, 64, /*tg_quantum=*/8),
                 {{.tick = 0, .n_prompt = 8, .max_new = kNoLimit, .cancel_tick = 200},
                  {.tick = 10, .n_prompt = 50, .max_new = 5}});
  ASSERT_EQ(sim.run(), "");
  EXPECT_EQ(sim.life(1).reason, EndReason::kLength);
  EXPECT_LT(sim.life(1).end_step, 40);
  EXPECT_EQ(sim.life(0).reason, EndReason::kCancelled);
}

TEST(SerialScheduler, OnePromptOwnsEachStepAndAllWaitAtTheBarrier) {
  Simulation sim(sim_options(PolicyKind::kSerial, 2, 64),
                 {{.tick = 0, .n_prompt = 100, .max_new = 3},
                  {.tick = 0, .n_prompt = 100, .max_new = 3}});
  ASSERT_EQ(sim.run(), "");
  EXPECT_EQ(sim.life(0).pp_steps, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(sim.life(1).pp_steps, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(sim.life(0).first_token_step, 3);
  EXPECT_EQ(sim.life(1).first_token_step, 3);
}

TEST(CohortScheduler, AFullyCachedPromptStillPrefillsOneTokenAndWaits) {
  SimOptions o = sim_options(PolicyKind::kCohort, 2, 32);
  o.prefix_len = 64;
  Simulation sim(o, {{.tick = 0, .n_prompt = 65, .max_new = 1, .prefix = 0},
                     {.tick = 10, .n_prompt = 65, .max_new = 2, .prefix = 0},
                     {.tick = 10, .n_prompt = 200, .max_new = 2}});
  ASSERT_EQ(sim.run(), "");
  const Life& b = sim.life(1);
  EXPECT_EQ(b.n_cached, 64);
  EXPECT_EQ(b.pp_steps.size(), 1u);
  EXPECT_EQ(b.first_token_step, sim.life(2).first_token_step);
  EXPECT_GT(b.first_token_step, b.pp_steps.front());
}

}  // namespace cohort_scheduler_test
}  // namespace cohort::sched
