// Randomized property test: thousands of random workloads (arrivals, prompt
// lengths, shared prefixes, generation limits, stops, cancellations at any
// moment, failed steps and samplings, tight KV caches, tiny and large -b,
// --tg-quantum), for every policy. Each plan is checked against the rules of
// its policy (plan_checks_testing.h) and against the fake executor's record
// (sim_testing.h): tokens <= -b, at most -np requests in slots, every prompt
// token processed exactly once and in order, no first token before the
// barrier, no step mixing PP and TG under cohort and serial. Each run must
// end with every request finished or cancelled, no slot or KV block held.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "sched/sim_testing.h"

namespace cohort::sched {
namespace policy_property_test {

using testing::Arrival;
using testing::SimOptions;
using testing::Simulation;

int pick(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

bool chance(std::mt19937& rng, double p) { return std::bernoulli_distribution(p)(rng); }

SimOptions random_options(std::mt19937& rng, PolicyKind policy, int max_prompt) {
  SimOptions o;
  o.sched.policy = policy;
  o.sched.n_slots = pick(rng, 1, 5);
  constexpr int kBatches[] = {1, 2, 3, 8, 16, 33, 64, 128};
  o.sched.n_batch = kBatches[pick(rng, 0, 7)];
  o.sched.tg_quantum = chance(rng, 0.5) ? 0 : pick(rng, 1, 6);
  o.block_size = chance(rng, 0.5) ? 4 : 16;
  o.prefix_len = chance(rng, 0.5) ? 0 : 2 * o.block_size;
  const int blocks_per_prompt = (max_prompt + o.block_size - 1) / o.block_size;
  // Tight caches make admission wait and decode room run out.
  o.n_kv_blocks = chance(rng, 0.3) ? pick(rng, blocks_per_prompt / 2, 3 * blocks_per_prompt)
                                   : 64 * blocks_per_prompt;
  o.step_fail_p = chance(rng, 0.2) ? 0.01 : 0;
  o.slot_fail_p = chance(rng, 0.2) ? 0.02 : 0;
  o.seed = static_cast<uint32_t>(rng());
  return o;
}

std::vector<Arrival> random_arrivals(std::mt19937& rng, int max_prompt) {
  std::vector<Arrival> arrivals(static_cast<size_t>(pick(rng, 1, 12)));
  for (Arrival& a : arrivals) {
    a.tick = pick(rng, 0, 60);
    a.n_prompt = pick(rng, 1, max_prompt);
    a.max_new = pick(rng, 1, 25);
    if (chance(rng, 0.3)) a.stop_after = pick(rng, 1, a.max_new);
    if (chance(rng, 0.2)) a.cancel_tick = a.tick + pick(rng, 0, 80);
    if (chance(rng, 0.5)) a.prefix = pick(rng, 0, 2);
  }
  return arrivals;
}

void run_random_workloads(PolicyKind policy, int n_workloads) {
  for (int w = 0; w < n_workloads; ++w) {
    const uint32_t seed = static_cast<uint32_t>(w) * 4 + static_cast<uint32_t>(policy);
    std::mt19937 rng(seed);
    const int max_prompt = chance(rng, 0.5) ? 40 : 150;
    const SimOptions o = random_options(rng, policy, max_prompt);
    Simulation sim(o, random_arrivals(rng, max_prompt));
    ASSERT_EQ(sim.run(), "") << policy_name(policy) << " seed " << seed;
    for (const testing::Life& l : sim.lives()) ASSERT_TRUE(l.reason.has_value()) << seed;
  }
}

// Under the sanitizers (50x slower here) the first fifth of the workloads:
// they check the memory of the same code paths; the invariants are checked
// on all of them by the release build.
#ifdef COHORT_SANITIZED_TESTS
constexpr int kWorkloads = 500;
#else
constexpr int kWorkloads = 2500;
#endif

TEST(PolicyProperty, MixedRandomWorkloads) { run_random_workloads(PolicyKind::kMixed, kWorkloads); }
TEST(PolicyProperty, NoContRandomWorkloads) { run_random_workloads(PolicyKind::kNoCont, kWorkloads); }
TEST(PolicyProperty, CohortRandomWorkloads) { run_random_workloads(PolicyKind::kCohort, kWorkloads); }
TEST(PolicyProperty, SerialRandomWorkloads) { run_random_workloads(PolicyKind::kSerial, kWorkloads); }

}  // namespace policy_property_test
}  // namespace cohort::sched
