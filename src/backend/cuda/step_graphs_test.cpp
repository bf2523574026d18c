// The graph-key bucket of the block-table width (host code: runs without a
// GPU too), and when a step runs eagerly, is captured or replays.
#include "backend/cuda/step_graphs.h"

#include <gtest/gtest.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_test_util.h"

namespace cohort::cuda {
namespace step_graphs_test {

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

// A step whose only kernel-like work is a memset of `value` into `out`:
// what a captured step records depends on its key, as a forward's grids do.
StepGraphs::Mode run_step(StepGraphs& graphs, GraphKey key, cudaStream_t stream, int32_t* out = nullptr) {
  const StepGraphs::Mode mode = graphs.begin(key, stream);
  if (out != nullptr && mode != StepGraphs::Mode::replay) {
    CUDA_CHECK(cudaMemsetAsync(out, key.table_width, sizeof(int32_t), stream));
  }
  graphs.launch(stream);
  return mode;
}

int32_t read(const int32_t* out, cudaStream_t stream) {
  int32_t v = 0;
  CUDA_CHECK(cudaMemcpyAsync(&v, out, sizeof v, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return v;
}

TEST(CudaStepGraphs, AShapeRunsEagerlyOnceThenItsGraphFollowsTheTableWidth) {
  COHORT_REQUIRE_CUDA_DEVICE();
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  int32_t* out = nullptr;
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&out), sizeof(int32_t)));
  {
    using Mode = StepGraphs::Mode;
    StepGraphs graphs;
    EXPECT_EQ(run_step(graphs, {1, 1, 16}, stream), Mode::eager);  // uploads, library set-up
    EXPECT_EQ(run_step(graphs, {1, 1, 16}, stream, out), Mode::capture);
    EXPECT_EQ(run_step(graphs, {1, 1, 16}, stream), Mode::replay);
    // the context grew past its bucket: same kernels, other grids; the
    // graph is updated in place and replays what the new step recorded
    CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(int32_t), stream));
    EXPECT_EQ(run_step(graphs, {1, 1, 32}, stream, out), Mode::capture);
    CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(int32_t), stream));
    EXPECT_EQ(run_step(graphs, {1, 1, 32}, stream), Mode::replay);
    EXPECT_EQ(read(out, stream), 0x20202020);
    EXPECT_EQ(run_step(graphs, {1, 1, 16}, stream, out), Mode::capture);
    EXPECT_EQ(run_step(graphs, {1, 1, 16}, stream), Mode::replay);
    EXPECT_EQ(read(out, stream), 0x10101010);
    // another batch shape may launch kernels not run yet
    EXPECT_EQ(run_step(graphs, {2, 2, 32}, stream), Mode::eager);
    EXPECT_EQ(run_step(graphs, {2, 2, 64}, stream), Mode::capture);
    EXPECT_EQ(graphs.n_graphs(), 2u);
    EXPECT_EQ(graphs.n_instantiated(), 2);
    EXPECT_EQ(graphs.n_updated(), 2);
    // prompt steps and steps without logits are never graphed
    EXPECT_EQ(run_step(graphs, {kGraphMaxTokens + 1, 1, 16}, stream), Mode::eager);
    EXPECT_EQ(run_step(graphs, {kGraphMaxTokens + 1, 1, 16}, stream), Mode::eager);
    EXPECT_EQ(run_step(graphs, {1, 0, 16}, stream), Mode::eager);
    EXPECT_EQ(run_step(graphs, {1, 0, 16}, stream), Mode::eager);
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  CUDA_CHECK(cudaFree(out));
  CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace step_graphs_test
}  // namespace cohort::cuda
