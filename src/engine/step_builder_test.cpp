// The step input of a micro-batch: slots, packed block tables, context
// lengths and logit rows, from a batch and the block manager.
#include "engine/step_builder.h"

#include <gtest/gtest.h>

namespace cohort::engine {
namespace step_builder_test {

constexpr int kBlockSize = 4;

TEST(StepBuilder, PacksSequencesInOrderOfFirstAppearance) {
  kv::BlockManager blocks(16, kBlockSize);
  blocks.allocate(5, 6);   // two blocks
  blocks.allocate(2, 3);   // one block
  Batch b;
  for (int p = 0; p < 6; ++p) b.add(100 + p, p, 5, p == 5);
  for (int p = 0; p < 3; ++p) b.add(200 + p, p, 2, p == 2);
  StepBuilder builder(16, blocks.n_blocks(), kBlockSize);
  const backend::StepInput& in = builder.build(b, 0, b.n_tokens(), blocks);
  ASSERT_EQ(in.n_tok, 9);
  ASSERT_EQ(in.n_seq, 2);
  EXPECT_EQ(in.seq_index[0], 0);
  EXPECT_EQ(in.seq_index[8], 1);
  EXPECT_EQ(in.block_table(0)[1], blocks.block_table(5)[1]);
  EXPECT_EQ(in.block_table(1)[0], blocks.block_table(2)[0]);
  EXPECT_EQ(in.context_lens[0], 6);
  EXPECT_EQ(in.context_lens[1], 3);
  for (int t = 0; t < 6; ++t) {
    EXPECT_EQ(in.kv_slots[static_cast<size_t>(t)], blocks.slot_of(5, t).index(kBlockSize));
  }
  EXPECT_EQ(in.kv_slots[7], blocks.slot_of(2, 1).index(kBlockSize));
  ASSERT_EQ(in.n_logits(), 2);
  EXPECT_EQ(in.logit_rows[0], 5);
  EXPECT_EQ(in.logit_rows[1], 8);
}

TEST(StepBuilder, MicroBatchesKeepTheirBuffersAndCountRowsFromTheirStart) {
  kv::BlockManager blocks(16, kBlockSize);
  blocks.allocate(0, 8);
  blocks.allocate(1, 8);
  Batch b;
  for (int p = 0; p < 8; ++p) {
    b.add(p, p, 0, p % 3 == 0);
    b.add(p, p, 1, false);
  }
  StepBuilder builder(6, blocks.n_blocks(), kBlockSize);
  const backend::StepInput& first = builder.build(b, 0, 6, blocks);
  const int32_t* tokens = first.tokens.data();
  const backend::StepInput& last = builder.build(b, 12, 16, blocks);
  EXPECT_EQ(last.tokens.data(), tokens);  // same buffer, new contents
  ASSERT_EQ(last.n_tok, 4);
  EXPECT_EQ(last.positions[0], 6);
  EXPECT_EQ(last.context_lens[last.seq_index[3]], 8);
  ASSERT_EQ(last.n_logits(), 1);  // position 6 of sequence 0, row 12 of the batch
  EXPECT_EQ(last.logit_rows[0], 0);
}

}  // namespace step_builder_test
}  // namespace cohort::engine
