// The chunking of host outputs (logits_copy.h); the copies themselves are
// checked by the forward on the GPU (cuda_forward_test.cpp, "logits in
// chunks").
#include "backend/cuda/logits_copy.h"

#include <gtest/gtest.h>

namespace cohort::cuda {
namespace logits_copy_test {

TEST(LogitsCopy, ChunksCoverTheRowsInWholeBlocksOf256) {
  EXPECT_EQ(logits_chunk_rows(128256), 16128);  // 7 x 16,128 + 15,360
  EXPECT_EQ(logits_chunk_rows(151936), 19200);
  EXPECT_EQ(logits_chunk_rows(512), 256);  // two chunks
  EXPECT_EQ(logits_chunk_rows(1), 256);    // one
  for (int64_t n : {1, 255, 1024, 49152, 128256}) {
    const int64_t c = logits_chunk_rows(n);
    EXPECT_EQ(c % 256, 0) << n;
    EXPECT_LE((n + c - 1) / c, kLogitsChunks) << n;
  }
}

}  // namespace logits_copy_test
}  // namespace cohort::cuda
