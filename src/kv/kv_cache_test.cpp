// KvCache: layout [n_blocks, block_size, n_head_kv, head_dim] per layer,
// distinct storage for every (layer, K/V, slot), the size helpers, and the
// bytes of each cache type (-ctk/-ctv).
#include "kv/kv_cache.h"

#include <cstdint>
#include <set>

#include <gtest/gtest.h>

#include "common/error.h"

namespace cohort::kv {
namespace kv_cache_test {

KvCacheShape small_shape(TensorType type = TensorType::F32) {
  KvCacheShape s;
  s.n_layer = 2;
  s.n_blocks = 3;
  s.block_size = 4;
  s.n_head_kv = 2;
  s.head_dim = type == TensorType::Q8_0 ? 32 : 8;
  s.type_k = s.type_v = type;
  return s;
}

TEST(KvCache, SizeHelpers) {
  const KvCacheShape s = small_shape();
  EXPECT_EQ(s.row_elements(), 16);
  EXPECT_EQ(kv_bytes_per_block(s), 2u * 2 * 4 * 16 * sizeof(float));
  KvCacheShape h = s;
  h.type_k = h.type_v = TensorType::F16;
  EXPECT_EQ(kv_bytes_per_block(h), 2u * 2 * 4 * 16 * 2);
  h.type_v = TensorType::F32;  // K and V may differ
  EXPECT_EQ(kv_bytes_per_block(h), 2u * 4 * 16 * (2 + 4));
  EXPECT_EQ(kv_blocks_for_context(1000, 16), 63);
  EXPECT_EQ(kv_blocks_for_context(1024, 16), 64);
  EXPECT_EQ(kv_blocks_for_context(0, 16), 0);
  EXPECT_EQ(kv_blocks_for_bytes(10 * kv_bytes_per_block(s) + 5, s), 10);
  EXPECT_THROW(kv_blocks_for_context(100, 0), Error);
  EXPECT_THROW(kv_blocks_for_context(-1, 16), Error);
  EXPECT_EQ(KvCache(s).n_bytes(), 3 * kv_bytes_per_block(s));
}

// The bytes a cache takes against F32's: half for f16 and bf16, 34/128 for
// q8_0 (a 2-byte scale per 32 one-byte values).
TEST(KvCache, EachTypeTakesItsShareOfF32sBytes) {
  auto bytes = [](TensorType t) {
    KvCacheShape s = small_shape(TensorType::Q8_0);  // heads of 32 values, which every type stores
    s.type_k = s.type_v = t;
    return KvCache(s).n_bytes();
  };
  const size_t f32 = bytes(TensorType::F32);
  EXPECT_EQ(2 * bytes(TensorType::F16), f32);
  EXPECT_EQ(2 * bytes(TensorType::BF16), f32);
  EXPECT_EQ(128 * bytes(TensorType::Q8_0), 34 * f32);
}

TEST(KvCache, CacheTypesByNameAndTheirErrors) {
  EXPECT_EQ(cache_type("f16", "-ctk"), TensorType::F16);
  EXPECT_EQ(cache_type("Q8_0", "-ctv"), TensorType::Q8_0);
  EXPECT_EQ(cache_type("bf16", "-ctv"), TensorType::BF16);
  EXPECT_EQ(cache_type("f32", "-ctk"), TensorType::F32);
  for (const char* bad : {"q4_0", "q4_K", "int8", ""}) {
    try {
      cache_type(bad, "-ctk");
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("-ctk"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("f32, f16, bf16 or q8_0"), std::string::npos) << e.what();
    }
  }
  KvCacheShape s = small_shape(TensorType::F16);
  s.type_v = TensorType::Q8_0;  // heads of 8 values: not whole blocks of 32
  try {
    KvCache cache(s);
    FAIL() << "expected cohort::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-ctv q8_0"), std::string::npos) << e.what();
  }
}

TEST(KvCache, BlocksAndSlotsFollowTheDocumentedLayout) {
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::Q8_0}) {
    KvCache cache(small_shape(t));
    const auto row = static_cast<ptrdiff_t>(cache.shape().k_row_bytes());
    EXPECT_EQ(cache.k(0, Slot{1, 0}) - cache.k(0, Slot{0, 0}), 4 * row);
    EXPECT_EQ(cache.k(1, Slot{0, 0}) - cache.k(0, Slot{0, 0}), 3 * 4 * row);
    EXPECT_EQ(cache.v(0, Slot{2, 3}), cache.v(0, Slot{2, 0}) + 3 * row);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(cache.k(0, Slot{0, 0})) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(cache.v(0, Slot{0, 0})) % 64, 0u);
  }
}

TEST(KvCache, EveryRowHasItsOwnZeroFilledStorage) {
  const KvCacheShape s = small_shape();
  KvCache cache(s);
  std::set<const uint8_t*> rows;
  float value = 1.0f;
  for (int layer = 0; layer < s.n_layer; ++layer)
    for (BlockId b = 0; b < s.n_blocks; ++b)
      for (int o = 0; o < s.block_size; ++o) {
        for (uint8_t* bytes : {cache.k(layer, Slot{b, o}), cache.v(layer, Slot{b, o})}) {
          auto* p = reinterpret_cast<float*>(bytes);
          for (int64_t i = 0; i < s.row_elements(); ++i) {
            ASSERT_EQ(p[i], 0.0f);
            p[i] = value;
          }
          EXPECT_TRUE(rows.insert(bytes).second);
          value += 1.0f;
        }
      }
  value = 1.0f;
  const KvCache& read = cache;
  for (int layer = 0; layer < s.n_layer; ++layer)
    for (BlockId b = 0; b < s.n_blocks; ++b)
      for (int o = 0; o < s.block_size; ++o) {
        for (const uint8_t* bytes : {read.k(layer, Slot{b, o}), read.v(layer, Slot{b, o})}) {
          const auto* p = reinterpret_cast<const float*>(bytes);
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

}  // namespace kv_cache_test
}  // namespace cohort::kv
