// Scheduler under mixed (continuous batching) and no-cont (llama-server
// -nocb): decode rows first, prompt chunks fill the rest, a finished prompt
// decodes at once; no-cont holds prompts while anything decodes.
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "sched/sim_testing.h"

namespace cohort::sched {
namespace continuous_scheduler_test {

using testing::Life;
using testing::Simulation;
using testing::sim_options;

TEST(MixedScheduler, DecodeRowsComeFirstAndPromptChunksFillTheRest) {
  Simulation sim(sim_options(PolicyKind::kMixed, 2, 64),
                 {{.tick = 0, .n_prompt = 10, .max_new = 20},
                  {.tick = 2, .n_prompt = 200, .max_new = 3}});
  ASSERT_EQ(sim.run(), "");
  const Life& a = sim.life(0);
  const Life& b = sim.life(1);
  const BatchPlan& p = sim.plans()[2];  // B's first chunk shares the step with A
  ASSERT_EQ(p.rows.size(), 2u);
  EXPECT_EQ(p.rows[0].kind, RowKind::kDecode);
  EXPECT_EQ(p.rows[1].n_tokens, 63);
  EXPECT_EQ(p.phase, Phase::kMixed);
  EXPECT_EQ(b.pp_steps, (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(b.first_token_step, 5);  // sampled with its last chunk
  EXPECT_EQ(b.tg_steps.front(), 6);
  for (int64_t s = 1; s < 20; ++s) EXPECT_EQ(a.tg_steps[static_cast<size_t>(s - 1)], s);
}

TEST(MixedScheduler, TheFirstPromptGreedilyTakesTheWholeBatch) {
  Simulation sim(sim_options(PolicyKind::kMixed, 2, 64),
                 {{.tick = 0, .n_prompt = 100, .max_new = 2},
                  {.tick = 0, .n_prompt = 100, .max_new = 2}});
  ASSERT_EQ(sim.run(), "");
  ASSERT_EQ(sim.plans()[0].rows.size(), 1u);
  EXPECT_EQ(sim.plans()[0].rows[0].n_tokens, 64);
  EXPECT_EQ(sim.life(0).first_token_step, 1);  // 36 of A, then 28 of B
  EXPECT_EQ(sim.plans()[1].rows[1].n_tokens, 28);
}

TEST(NoContScheduler, PromptsWaitWhileAnythingDecodes) {
  Simulation sim(sim_options(PolicyKind::kNoCont, 2, 64),
                 {{.tick = 0, .n_prompt = 10, .max_new = 10},
                  {.tick = 2, .n_prompt = 200, .max_new = 3}});
  ASSERT_EQ(sim.run(), "");
  const Life& a = sim.life(0);
  const Life& b = sim.life(1);
  EXPECT_EQ(b.admit_step, 2);  // it gets a slot at once...
  EXPECT_GT(b.pp_steps.front(), a.tg_steps.back());  // ...but no prompt step
  EXPECT_GT(sim.scheduler().counters().n_steps, 0);
}

TEST(NoContScheduler, AHalfDonePromptStallsOnceAnotherRequestDecodes) {
  Simulation sim(sim_options(PolicyKind::kNoCont, 2, 64),
                 {{.tick = 0, .n_prompt = 100, .max_new = 5},
                  {.tick = 0, .n_prompt = 300, .max_new = 5}});
  ASSERT_EQ(sim.run(), "");
  const Life& a = sim.life(0);
  const Life& b = sim.life(1);
  EXPECT_EQ(a.first_token_step, 1);
  EXPECT_EQ(b.pp_steps.front(), 1);  // shared A's last prompt step
  EXPECT_EQ(a.tg_steps, (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(b.pp_steps[1], 6);       // then waited for A to finish
}

}  // namespace continuous_scheduler_test
}  // namespace cohort::sched
