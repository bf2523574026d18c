// The graph-key bucket of the block-table width (host code: runs without a
// GPU too), and when a step runs eagerly, is captured or replays.
#include "backend/cuda/step_graphs.h"

#include <gtest/gtest.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_test_util.h"

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

// Steps that capture nothing make empty graphs, which instantiate and
// launch like any other.
StepGraphs::Mode run_step(StepGraphs& graphs, GraphKey key, cudaStream_t stream) {
  const StepGraphs::Mode mode = graphs.begin(key, stream);
  graphs.launch(stream);
  return mode;
}

TEST(CudaStepGraphs, ANewKeyRunsEagerlyOnceUnlessOnlyItsTableWidthIsNew) {
  COHORT_REQUIRE_CUDA_DEVICE();
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  {
    using Mode = StepGraphs::Mode;
    StepGraphs graphs;
    EXPECT_EQ(run_step(graphs, {1, 1, 16}, stream), Mode::eager);  // uploads, library set-up
    EXPECT_EQ(run_step(graphs, {1, 1, 16}, stream), Mode::capture);
    EXPECT_EQ(run_step(graphs, {1, 1, 16}, stream), Mode::replay);
    // the context grew past its bucket: same kernels, other grids
    EXPECT_EQ(run_step(graphs, {1, 1, 32}, stream), Mode::capture);
    EXPECT_EQ(run_step(graphs, {1, 1, 32}, stream), Mode::replay);
    // another batch shape may launch kernels not run yet
    EXPECT_EQ(run_step(graphs, {2, 2, 32}, stream), Mode::eager);
    EXPECT_EQ(run_step(graphs, {2, 2, 64}, stream), Mode::capture);
    EXPECT_EQ(graphs.n_graphs(), 3u);
    // prompt steps and steps without logits are never graphed
    EXPECT_EQ(run_step(graphs, {kGraphMaxTokens + 1, 1, 16}, stream), Mode::eager);
    EXPECT_EQ(run_step(graphs, {kGraphMaxTokens + 1, 1, 16}, stream), Mode::eager);
    EXPECT_EQ(run_step(graphs, {1, 0, 16}, stream), Mode::eager);
    EXPECT_EQ(run_step(graphs, {1, 0, 16}, stream), Mode::eager);
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace cohort::cuda
