// Prompt-only requests (embeddings): under every policy they prefill beside
// generation requests, end FINISHED with their last prompt chunk, and never
// sample, keep logits or decode; their KV sequence shares no cached prefix.
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/sim_testing.h"

namespace cohort::sched {
namespace prompt_only_test {

using testing::kAllPolicies;

bool lists(const std::vector<SlotRef>& refs, RequestId id) {
  for (const SlotRef& r : refs) {
    if (r.id == id) return true;
  }
  return false;
}

TEST(PromptOnly, EndsWithItsPromptBesideAGenerationUnderEveryPolicy) {
  for (PolicyKind policy : kAllPolicies) {
    SCOPED_TRACE(policy_name(policy));
    kv::BlockManager blocks(64, 4);
    std::vector<int32_t> prompt(10, 1);
    PagedKvRoom room(blocks, [&](RequestId) { return std::span<const int32_t>(prompt); });
    SchedulerOptions o;
    o.n_slots = 2;
    o.n_batch = 4;  // the prompts take several steps
    o.policy = policy;
    Scheduler sched(o, room);
    const RequestId gen = sched.submit({10, 3});
    const RequestId embd = sched.submit({10, 1, true});
    bool embd_ended = false, gen_ended = false;
    int embd_prompt_rows = 0, last_chunk_step = -1;
    for (int step = 0; step < 100 && !(embd_ended && gen_ended); ++step) {
      const BatchPlan& plan = sched.plan();
      for (const Ending& e : plan.ended) {
        if (e.id == embd) {
          EXPECT_EQ(e.reason, EndReason::kStop);
          EXPECT_EQ(step, last_chunk_step + 1) << "it ends at the plan after its last chunk";
          embd_ended = true;
        }
        if (e.id == gen) gen_ended = true;
      }
      EXPECT_FALSE(lists(plan.first_tokens, embd));
      EXPECT_FALSE(lists(plan.keep_logits, embd));
      for (const PlanRow& row : plan.rows) {
        if (row.id != embd) continue;
        EXPECT_EQ(row.kind, RowKind::kPrompt);
        embd_prompt_rows += row.n_tokens;
        if (row.last_chunk) last_chunk_step = step;
      }
      if (plan.has_work()) sched.on_step_done({});
    }
    EXPECT_TRUE(embd_ended);
    EXPECT_TRUE(gen_ended);
    EXPECT_EQ(embd_prompt_rows, 10);
    EXPECT_TRUE(sched.idle());
    EXPECT_EQ(sched.counters().n_finished, 2);
    EXPECT_EQ(sched.counters().n_first_tokens, 1);
  }
}

TEST(PromptOnly, KvRoomGivesItAFreshSequenceWithoutTheCachedPrefix) {
  kv::BlockManager blocks(16, 4);
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  PagedKvRoom room(blocks, [&](RequestId) { return std::span<const int32_t>(prompt); });
  ASSERT_EQ(room.admit(0, 0, 9, true), 0);
  blocks.commit(0, prompt);  // two full blocks become a reusable prefix
  EXPECT_EQ(room.admit(1, 1, 9, true), 8);
  EXPECT_TRUE(room.can_admit(2, 2, 9, false));
  EXPECT_EQ(room.admit(2, 2, 9, false), 0);
  EXPECT_EQ(blocks.n_committed(2), 0);
}

}  // namespace prompt_only_test
}  // namespace cohort::sched
