// fair_shares (how cohort splits -b among prefilling members) and serial's
// share: exact splits, conservation, determinism.
#include "sched/cohort_policy.h"

#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "sched/phase_policy.h"

namespace cohort::sched {
namespace cohort_policy_test {

std::vector<int> shares(std::vector<int> demand, int capacity) {
  std::vector<int> out;
  fair_shares(demand, capacity, out);
  return out;
}

TEST(FairShares, EqualDemandsSplitEvenlyWithTheRemainderToTheEarliest) {
  EXPECT_EQ(shares({100, 100, 100}, 64), (std::vector<int>{22, 21, 21}));
  EXPECT_EQ(shares({500, 200}, 64), (std::vector<int>{32, 32}));
}

TEST(FairShares, SmallDemandsAreMetWholeAndTheirLeftoverRedistributed) {
  EXPECT_EQ(shares({8, 308}, 64), (std::vector<int>{8, 56}));
  EXPECT_EQ(shares({100, 1, 100}, 10), (std::vector<int>{5, 1, 4}));
  EXPECT_EQ(shares({3, 4, 5}, 100), (std::vector<int>{3, 4, 5}));
}

TEST(FairShares, CapacityBelowTheMemberCountGoesToTheEarliest) {
  EXPECT_EQ(shares({10, 10, 10}, 2), (std::vector<int>{1, 1, 0}));
  EXPECT_EQ(shares({10, 10}, 0), (std::vector<int>{0, 0}));
  EXPECT_EQ(shares({}, 10), (std::vector<int>{}));
}

TEST(FairShares, RandomSplitsAreMaxMinFairAndUseAllTheyCan) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 5000; ++iter) {
    std::vector<int> demand(std::uniform_int_distribution<size_t>(1, 8)(rng));
    for (int& d : demand) d = std::uniform_int_distribution<int>(0, 300)(rng);
    const int capacity = std::uniform_int_distribution<int>(0, 1000)(rng);
    const std::vector<int> out = shares(demand, capacity);
    const int total = std::accumulate(demand.begin(), demand.end(), 0);
    EXPECT_EQ(std::accumulate(out.begin(), out.end(), 0), std::min(total, capacity));
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_LE(out[i], demand[i]);
      // Max-min: nobody short of its demand gets 2+ less than anyone else.
      for (size_t j = 0; j < out.size(); ++j) {
        if (out[i] < demand[i]) {
          ASSERT_GE(out[i] + 1, out[j]) << iter;
        }
      }
    }
  }
}

TEST(PolicyNames, ParseEveryNameAndRejectOthers) {
  for (PolicyKind k :
       {PolicyKind::kMixed, PolicyKind::kNoCont, PolicyKind::kCohort, PolicyKind::kSerial}) {
    EXPECT_EQ(parse_policy(policy_name(k)), k);
    EXPECT_EQ(make_policy(k, 0)->kind(), k);
  }
  EXPECT_THROW(parse_policy("fifo"), Error);
}

}  // namespace cohort_policy_test
}  // namespace cohort::sched
