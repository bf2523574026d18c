// KvCache: layout [n_blocks, block_size, n_head_kv, head_dim] per layer,
// distinct storage for every (layer, K/V, slot), and the size helpers.
#include "kv/kv_cache.h"

#include <cstdint>
#include <set>

#include <gtest/gtest.h>

#include "common/error.h"

namespace cohort::kv {
namespace {

KvCacheShape small_shape() {
  KvCacheShape s;
  s.n_layer = 2;
  s.n_blocks = 3;
  s.block_size = 4;
  s.n_head_kv = 2;
  s.head_dim = 8;
  return s;
}

TEST(KvCache, SizeHelpers) {
  const KvCacheShape s = small_shape();
  EXPECT_EQ(s.row_elements(), 16);
  EXPECT_EQ(kv_bytes_per_block(s), 2u * 2 * 4 * 16 * sizeof(float));
  EXPECT_EQ(kv_bytes_per_block(s, 2), 2u * 2 * 4 * 16 * 2);
  EXPECT_EQ(kv_blocks_for_context(1000, 16), 63);
  EXPECT_EQ(kv_blocks_for_context(1024, 16), 64);
  EXPECT_EQ(kv_blocks_for_context(0, 16), 0);
  EXPECT_EQ(kv_blocks_for_bytes(10 * kv_bytes_per_block(s) + 5, s), 10);
  EXPECT_THROW(kv_blocks_for_context(100, 0), Error);
  EXPECT_THROW(kv_blocks_for_context(-1, 16), Error);
  EXPECT_EQ(KvCache(s).n_bytes(), 3 * kv_bytes_per_block(s));
}

TEST(KvCache, BlocksAndSlotsFollowTheDocumentedLayout) {
  KvCache cache(small_shape());
  const int64_t row = 16;
  EXPECT_EQ(cache.k(0, 1) - cache.k(0, 0), 4 * row);
  EXPECT_EQ(cache.k(1, 0) - cache.k(0, 0), 3 * 4 * row);
  EXPECT_EQ(cache.v(0, Slot{2, 3}), cache.v(0, 2) + 3 * row);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(cache.k(0, 0)) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(cache.v(0, 0)) % 64, 0u);
}

TEST(KvCache, EveryRowHasItsOwnZeroFilledStorage) {
  const KvCacheShape s = small_shape();
  KvCache cache(s);
  std::set<const float*> rows;
  float value = 1.0f;
  for (int layer = 0; layer < s.n_layer; ++layer)
    for (BlockId b = 0; b < s.n_blocks; ++b)
      for (int o = 0; o < s.block_size; ++o) {
        for (float* p : {cache.k(layer, Slot{b, o}), cache.v(layer, Slot{b, o})}) {
          for (int64_t i = 0; i < s.row_elements(); ++i) {
            ASSERT_EQ(p[i], 0.0f);
            p[i] = value;
          }
          EXPECT_TRUE(rows.insert(p).second);
          value += 1.0f;
        }
      }
  value = 1.0f;
  const KvCache& read = cache;
  for (int layer = 0; layer < s.n_layer; ++layer)
    for (BlockId b = 0; b < s.n_blocks; ++b)
      for (int o = 0; o < s.block_size; ++o) {
        for (const float* p : {read.k(layer, Slot{b, o}), read.v(layer, Slot{b, o})}) {
          EXPECT_EQ(p[0], value);
          EXPECT_EQ(p[s.row_elements() - 1], value);
          value += 1.0f;
        }
      }
}

TEST(KvCache, RejectsABadShapeNamingTheField) {
  KvCacheShape s = small_shape();
  s.head_dim = 0;
  try {
    KvCache cache(s);
    FAIL() << "expected cohort::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim"), std::string::npos);
  }
  s = small_shape();
  s.n_blocks = -1;
  EXPECT_THROW(KvCache{s}, Error);
  s.n_blocks = 0;
  EXPECT_EQ(KvCache(s).n_bytes(), 0u);
}

}  // namespace
}  // namespace cohort::kv
