// The graph-key bucket of the block-table width (host code: runs without a
// GPU too).
#include "backend/cuda/step_graphs.h"

#include <gtest/gtest.h>

namespace cohort::cuda {
namespace {

TEST(CudaStepGraphs, TableWidthBucketCoversTheContextAndIsAPowerOfTwoFromSixteen) {
  for (int32_t max_blocks : {16, 100, 256, 11250}) {
    for (int32_t ctx = 0; ctx <= max_blocks * 16; ctx += 7) {
      const int32_t w = table_width_bucket(ctx, 16, max_blocks);
      ASSERT_GE(w * 16, ctx) << ctx;
      ASSERT_LE(w, max_blocks);
      if (w < max_blocks) {
        ASSERT_GE(w, 16);
        ASSERT_EQ(w & (w - 1), 0) << w;  // a power of two
        ASSERT_LT((w / 2) * 16, std::max(ctx, 16 * 16)) << "not the smallest bucket for " << ctx;
      }
    }
  }
}

TEST(CudaStepGraphs, StepsOfAGrowingContextShareABucket) {
  EXPECT_EQ(table_width_bucket(1, 16, 256), table_width_bucket(256, 16, 256));
  EXPECT_EQ(table_width_bucket(257, 16, 256), 32);
  EXPECT_EQ(table_width_bucket(4000, 16, 256), 256);
}

}  // namespace
}  // namespace cohort::cuda
