// BlockManager: block accounting of allocate / append / free, the slot
// mapping, prefix sharing through commit, and running out of blocks.
#include "kv/block_manager.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "kv/kv_testing.h"

namespace cohort::kv {
namespace block_manager_test {

using testing::iota_tokens;

std::string error_of(auto&& act) {
  try {
    act();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(BlockManager, AllocateReservesWholeBlocks) {
  BlockManager m(10, 16);
  m.allocate(0, 33);
  EXPECT_EQ(m.block_table(0).size(), 3u);
  EXPECT_EQ(m.n_tokens(0), 33);
  EXPECT_EQ(m.n_committed(0), 0);
  EXPECT_EQ(m.n_free_blocks(), 7);
  m.allocate(1, 0);
  EXPECT_TRUE(m.block_table(1).empty());
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManager, AppendTakesABlockOnlyAtABlockBoundary) {
  BlockManager m(10, 4);
  m.allocate(0, 3);
  m.append(0, 1);
  EXPECT_EQ(m.block_table(0).size(), 1u);
  m.append(0, 1);
  EXPECT_EQ(m.block_table(0).size(), 2u);
  m.append(0, 0);
  EXPECT_EQ(m.n_tokens(0), 5);
  EXPECT_EQ(m.n_free_blocks(), 8);
}

TEST(BlockManager, FreeReturnsEveryBlock) {
  BlockManager m(8, 4);
  m.allocate(3, 10);
  m.allocate(4, 7);
  m.free(3);
  EXPECT_FALSE(m.contains(3));
  m.free(4);
  EXPECT_EQ(m.n_free_blocks(), 8);
  EXPECT_EQ(m.n_seqs(), 0);
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManager, SlotOfMapsPositionsThroughTheBlockTable) {
  BlockManager m(8, 4);
  m.allocate(0, 2);  // blocks are handed out lowest id first
  m.allocate(1, 4);
  m.append(0, 5);    // seq 0: blocks 0, 2
  ASSERT_EQ(m.block_table(0)[1], 2);
  EXPECT_EQ(m.slot_of(0, 1).block, 0);
  EXPECT_EQ(m.slot_of(0, 1).offset, 1);
  const Slot s = m.slot_of(0, 6);
  EXPECT_EQ(s.block, 2);
  EXPECT_EQ(s.offset, 2);
  EXPECT_EQ(s.index(4), 10);
  EXPECT_EQ(slot_of(m.block_table(1), 4, 3).block, 1);
}

TEST(BlockManager, OutOfBlocksIsReportedAndChangesNothing) {
  BlockManager m(4, 4);
  m.allocate(0, 12);
  EXPECT_TRUE(m.can_allocate(1, 4));
  EXPECT_FALSE(m.can_allocate(1, 5));
  EXPECT_NE(error_of([&] { m.allocate(1, 5); }).find("out of KV cache blocks: sequence 1"),
            std::string::npos);
  EXPECT_FALSE(m.contains(1));
  EXPECT_TRUE(m.can_append(0, 4));
  EXPECT_FALSE(m.can_append(0, 5));
  EXPECT_NE(error_of([&] { m.append(0, 5); }).find("out of KV cache blocks"), std::string::npos);
  EXPECT_EQ(m.n_tokens(0), 12);
  EXPECT_EQ(m.n_free_blocks(), 1);
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManager, MisuseThrowsNamingTheSequence) {
  BlockManager m(4, 4);
  m.allocate(7, 2);
  EXPECT_FALSE(m.can_allocate(7, 1));
  EXPECT_NE(error_of([&] { m.allocate(7, 1); }).find("sequence 7 already"), std::string::npos);
  EXPECT_FALSE(m.can_append(8, 1));
  EXPECT_NE(error_of([&] { m.append(8, 1); }).find("unknown sequence 8"), std::string::npos);
  EXPECT_THROW(m.free(8), Error);
  EXPECT_FALSE(m.can_append(7, -1));
  EXPECT_THROW(m.append(7, -1), Error);
  EXPECT_THROW(m.allocate(9, -1), Error);
  const std::vector<int32_t> three{1, 2, 3};
  EXPECT_NE(error_of([&] { m.commit(7, three); }).find("passes its 2 positions"),
            std::string::npos);
  EXPECT_EQ(m.n_committed(7), 0);
}

TEST(BlockManager, OnlyCommittedFullBlocksArePrefixCached) {
  BlockManager m(8, 4);
  const auto prompt = iota_tokens(10);
  m.allocate(0, prompt);
  EXPECT_EQ(m.match_prefix(prompt), 0);
  m.commit(0, std::span(prompt).first(7));
  EXPECT_EQ(m.match_prefix(prompt), 4);  // the second block is not full yet
  m.commit(0, std::span(prompt).subspan(7));
  EXPECT_EQ(m.match_prefix(prompt), 8);
  EXPECT_EQ(m.match_prefix(std::span(prompt).first(7)), 4);
  auto other = prompt;
  other[5] = 0;
  EXPECT_EQ(m.match_prefix(other), 4);
}

TEST(BlockManager, SharedPrefixBlocksAreReferenceCounted) {
  BlockManager m(8, 4);
  const auto prompt = iota_tokens(10);
  m.allocate(0, prompt);
  m.commit(0, prompt);
  auto longer = prompt;
  longer.insert(longer.end(), {1, 2, 3});  // 13 tokens
  EXPECT_EQ(m.allocate(1, longer), 8);
  EXPECT_EQ(m.n_committed(1), 8);
  EXPECT_EQ(m.n_tokens(1), 13);
  ASSERT_EQ(m.block_table(1).size(), 4u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(m.block_table(1)[i], m.block_table(0)[i]);
    EXPECT_EQ(m.pool().ref_count(m.block_table(0)[i]), 2);
  }
  EXPECT_NE(m.block_table(1)[2], m.block_table(0)[2]);
  EXPECT_EQ(m.n_free_blocks(), 3);  // 3 for seq 0, 2 more for seq 1
  m.free(0);
  EXPECT_EQ(m.pool().ref_count(m.block_table(1)[0]), 1);
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManager, AFullyCachedPromptStillLeavesItsLastTokenToCompute) {
  BlockManager m(8, 4);
  const auto prompt = iota_tokens(8);
  m.allocate(0, prompt);
  m.commit(0, prompt);
  EXPECT_EQ(m.match_prefix(prompt), 8);
  // The first block is shared; three rows of the second are copied into a
  // private block, which the last token's row is then written into.
  EXPECT_EQ(m.allocate(1, prompt), 7);
  EXPECT_EQ(m.block_table(1)[0], m.block_table(0)[0]);
  EXPECT_NE(m.block_table(1)[1], m.block_table(0)[1]);
  EXPECT_EQ(m.pool().ref_count(m.block_table(1)[1]), 1);  // private: it will be written
  std::vector<BlockCopy> copies;
  m.take_copies(copies);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, m.block_table(0)[1]);
  EXPECT_EQ(copies[0].dst, m.block_table(1)[1]);
  EXPECT_EQ(copies[0].n_rows, 3);
  m.take_copies(copies);
  EXPECT_TRUE(copies.empty());  // each copy is handed out once
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManager, AFreedSequencesPartlyFilledBlockIsCopiedForTheSamePrompt) {
  BlockManager m(8, 4);
  const auto prompt = iota_tokens(7);  // one full block and three rows of the next
  m.allocate(0, prompt);
  m.commit(0, prompt);
  const BlockId open = m.block_table(0)[1];
  m.free(0);
  EXPECT_EQ(m.n_cached_blocks(), 2);  // the full block and the partly filled one
  EXPECT_EQ(m.n_free_blocks(), 8);
  EXPECT_EQ(m.allocate(1, prompt), 6);  // 4 shared, 2 copied, the last token to compute
  std::vector<BlockCopy> copies;
  m.take_copies(copies);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, open);
  EXPECT_NE(copies[0].dst, open);  // held while the new block was taken
  EXPECT_EQ(copies[0].dst, m.block_table(1)[1]);
  EXPECT_EQ(copies[0].n_rows, 2);
  // The copied rows count as committed: the block fills and registers under
  // the prompt's hash as if it had been computed here.
  m.append(1, 1);
  m.commit(1, std::vector<int32_t>{106, 107});
  EXPECT_EQ(m.match_prefix(iota_tokens(8)), 8);
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManager, OnlyTheRowsThatAgreeAreCopied) {
  BlockManager m(8, 4);
  m.allocate(0, iota_tokens(8));
  m.commit(0, iota_tokens(8));
  m.free(0);
  std::vector<int32_t> other = iota_tokens(10);
  other[6] = 99;  // agrees with the second block in rows 0 and 1 only
  EXPECT_EQ(m.allocate(1, other), 6);
  std::vector<BlockCopy> copies;
  m.take_copies(copies);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].n_rows, 2);
  // A prompt that agrees with no row after the shared block copies nothing.
  std::vector<int32_t> third = iota_tokens(6);
  third[4] = 77;
  EXPECT_EQ(m.allocate(2, third), 4);
  m.take_copies(copies);
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManager, APartlyFilledBlockIsEvictedLikeACachedOne) {
  BlockManager m(2, 4);
  m.allocate(0, iota_tokens(3));
  m.commit(0, iota_tokens(3));
  m.free(0);
  EXPECT_EQ(m.n_cached_blocks(), 1);
  m.allocate(1, 8);  // both blocks: the partial one is evicted
  EXPECT_EQ(m.n_cached_blocks(), 0);
  m.free(1);
  EXPECT_EQ(m.allocate(2, iota_tokens(3)), 0);
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManager, NoRowsAreCopiedWhereHoldingTheSourceLeavesTooFewBlocks) {
  BlockManager m(2, 4);
  m.allocate(0, iota_tokens(3));
  m.commit(0, iota_tokens(3));
  m.free(0);
  m.allocate(5, 4);  // one block left, and it is the cached partial one
  ASSERT_TRUE(m.can_allocate(1, iota_tokens(3)));
  EXPECT_EQ(m.allocate(1, iota_tokens(3)), 0);  // it is taken, not copied from
  std::vector<BlockCopy> copies;
  m.take_copies(copies);
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManager, FreedPrefixStaysCachedUntilEvictedTailFirst) {
  BlockManager m(4, 4);
  const auto prompt = iota_tokens(12);
  m.allocate(0, prompt);
  m.commit(0, prompt);
  m.free(0);
  EXPECT_EQ(m.n_cached_blocks(), 3);
  EXPECT_EQ(m.n_free_blocks(), 4);
  m.allocate(1, 4);  // takes the never-used block
  EXPECT_EQ(m.match_prefix(prompt), 12);
  m.append(1, 4);    // evicts the prompt's last block: it was released first
  EXPECT_EQ(m.match_prefix(prompt), 8);
  m.append(1, 4);
  EXPECT_EQ(m.match_prefix(prompt), 4);
  EXPECT_EQ(m.n_cached_blocks(), 1);
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManager, CanAllocateCountsRevivedCachedBlocksAsTaken) {
  BlockManager m(4, 4);
  const auto prompt = iota_tokens(12);
  m.allocate(0, prompt);
  m.commit(0, prompt);
  m.free(0);  // 3 cached + 1 free
  auto next = prompt;
  next.push_back(7);  // 13 tokens: shares 3 blocks, needs 1 new
  EXPECT_TRUE(m.can_allocate(1, next));
  next.insert(next.end(), {1, 2, 3, 4});  // 17 tokens: needs 2 new, only 1 is not shared
  EXPECT_FALSE(m.can_allocate(1, next));
  EXPECT_NE(error_of([&] { m.allocate(1, next); }).find("needs 2 more blocks"),
            std::string::npos);
  EXPECT_EQ(m.n_cached_blocks(), 3);
  EXPECT_TRUE(m.can_allocate(1, iota_tokens(16, 500)));  // unrelated: evicts all 3
  EXPECT_EQ(m.allocate(1, iota_tokens(16, 500)), 0);
  EXPECT_EQ(m.n_cached_blocks(), 0);
  EXPECT_EQ(m.audit(), "");
}

TEST(BlockManager, EmptyPromptAllocatesNothing) {
  BlockManager m(2, 4);
  EXPECT_EQ(m.allocate(0, std::span<const int32_t>()), 0);
  EXPECT_TRUE(m.block_table(0).empty());
}

TEST(BlockManager, SlotOfARowIndexIsIndexsInverse) {
  for (int block_size : {1, 16, 64}) {
    for (int32_t row : {0, 1, block_size - 1, block_size, 5 * block_size + 3, 1000 * block_size - 1}) {
      const Slot s = Slot::at(row, block_size);
      EXPECT_GE(s.offset, 0);
      EXPECT_LT(s.offset, block_size);
      EXPECT_EQ(s.index(block_size), row) << "block size " << block_size;
    }
  }
  EXPECT_EQ(Slot::at(37, 16).block, 2);
  EXPECT_EQ(Slot::at(37, 16).offset, 5);
}

}  // namespace block_manager_test
}  // namespace cohort::kv
