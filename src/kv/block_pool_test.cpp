// BlockPool: the three block states, reference counts, the prefix-cache hash
// map and LRU eviction of cached blocks.
#include "kv/block_pool.h"

#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"

namespace cohort::kv {
namespace block_pool_test {

std::vector<int32_t> tokens(int32_t first, int n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + i;
  return t;
}

TEST(BlockPool, HandsOutFreeBlocksLowestIdFirst) {
  BlockPool pool(3, 4);
  EXPECT_EQ(pool.n_free_blocks(), 3);
  EXPECT_EQ(pool.acquire(), 0);
  EXPECT_EQ(pool.acquire(), 1);
  EXPECT_EQ(pool.ref_count(1), 1);
  EXPECT_EQ(pool.n_free_blocks(), 1);
  EXPECT_EQ(pool.audit(), "");
}

TEST(BlockPool, UnhashedBlockIsFreeAgainAfterLastUnref) {
  BlockPool pool(2, 4);
  const BlockId b = pool.acquire();
  pool.ref(b);
  pool.unref(b);
  EXPECT_EQ(pool.n_free_blocks(), 1);
  pool.unref(b);
  EXPECT_EQ(pool.n_free_blocks(), 2);
  EXPECT_EQ(pool.n_cached_blocks(), 0);
  EXPECT_EQ(pool.audit(), "");
}

TEST(BlockPool, RegisteredBlockIsCachedAfterReleaseAndFoundByLookup) {
  BlockPool pool(2, 4);
  const BlockId b = pool.acquire();
  const auto t = tokens(10, 4);
  const BlockHash h = pool.register_full(b, kRootHash, t);
  EXPECT_EQ(h, hash_block(kRootHash, t));
  EXPECT_EQ(pool.lookup(kRootHash, t), b);
  pool.unref(b);
  EXPECT_EQ(pool.n_cached_blocks(), 1);
  EXPECT_EQ(pool.n_free_blocks(), 2);  // cached blocks can still be handed out
  EXPECT_EQ(pool.lookup(kRootHash, t), b);
  pool.ref(b);  // revived: no longer evictable
  EXPECT_EQ(pool.n_cached_blocks(), 0);
  EXPECT_EQ(pool.n_free_blocks(), 1);
  EXPECT_EQ(pool.audit(), "");
}

TEST(BlockPool, LookupRequiresTheSameParentAndTokens) {
  BlockPool pool(2, 4);
  const BlockId b = pool.acquire();
  const BlockHash parent = hash_block(kRootHash, tokens(0, 4));
  pool.register_full(b, parent, tokens(10, 4));
  EXPECT_EQ(pool.lookup(parent, tokens(10, 4)), b);
  EXPECT_EQ(pool.lookup(kRootHash, tokens(10, 4)), kNoBlock);
  EXPECT_EQ(pool.lookup(parent, tokens(11, 4)), kNoBlock);
}

TEST(BlockPool, HashDependsOnParentAndTokenOrder) {
  const std::vector<int32_t> a{1, 2, 3, 4};
  const std::vector<int32_t> b{2, 1, 3, 4};
  EXPECT_NE(hash_block(kRootHash, a), hash_block(kRootHash, b));
  EXPECT_NE(hash_block(kRootHash, a), hash_block(hash_block(kRootHash, a), a));
  EXPECT_EQ(hash_block(7, a), hash_block(7, a));
}

TEST(BlockPool, SecondBlockWithTheSameContentStaysUnhashed) {
  BlockPool pool(2, 4);
  const BlockId a = pool.acquire();
  const BlockId b = pool.acquire();
  pool.register_full(a, kRootHash, tokens(0, 4));
  pool.register_full(b, kRootHash, tokens(0, 4));
  EXPECT_TRUE(pool.is_hashed(a));
  EXPECT_FALSE(pool.is_hashed(b));
  pool.unref(b);
  EXPECT_EQ(pool.n_cached_blocks(), 0);  // b went back to the free list
  EXPECT_EQ(pool.audit(), "");
}

TEST(BlockPool, EvictsOnlyWhenNoFreeBlockIsLeftLeastRecentlyReleasedFirst) {
  BlockPool pool(4, 2);
  std::vector<BlockId> b;
  for (int i = 0; i < 3; ++i) {
    b.push_back(pool.acquire());
    pool.register_full(b.back(), kRootHash, tokens(10 * i, 2));
  }
  pool.unref(b[1]);  // released in the order 1, 0, 2
  pool.unref(b[0]);
  pool.unref(b[2]);
  EXPECT_EQ(pool.acquire(), 3);  // the never-used block goes first
  EXPECT_EQ(pool.n_cached_blocks(), 3);
  EXPECT_EQ(pool.acquire(), b[1]);
  EXPECT_FALSE(pool.is_hashed(b[1]));
  EXPECT_EQ(pool.lookup(kRootHash, tokens(10, 2)), kNoBlock);
  EXPECT_EQ(pool.lookup(kRootHash, tokens(0, 2)), b[0]);
  pool.ref(b[0]);  // reuse moves b[0] out of the LRU: b[2] is next
  EXPECT_EQ(pool.acquire(), b[2]);
  EXPECT_EQ(pool.n_free_blocks(), 0);
  EXPECT_EQ(pool.audit(), "");
}

TEST(BlockPool, AcquireFromAnExhaustedPoolThrows) {
  BlockPool pool(1, 16);
  pool.acquire();
  try {
    pool.acquire();
    FAIL() << "expected cohort::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of KV cache blocks"), std::string::npos);
  }
  EXPECT_EQ(pool.audit(), "");
}

TEST(BlockPool, RejectsBadSizes) {
  EXPECT_THROW(BlockPool(-1, 16), Error);
  EXPECT_THROW(BlockPool(4, 0), Error);
  BlockPool empty(0, 16);
  EXPECT_EQ(empty.n_free_blocks(), 0);
  EXPECT_THROW(empty.acquire(), Error);
}

}  // namespace block_pool_test
}  // namespace cohort::kv
