// rope_store_kv (rope_store.cu) against the three launches it replaces:
// rope of q, rope of k and kv_store of the rotated k, each checked against
// its own reference elsewhere (elementwise_test.cpp, attention_test.cpp).
// The fused launch must give their bits: q, k and the cache (scales too).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_test_util.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernel_test_util.h"
#include "backend/cuda/kv_test_util.h"
#include "common/error.h"

namespace cohort::cuda {
namespace rope_store_test {

struct Shape {
  int64_t n_head_kv, gqa, head_dim, n_rot, n_tok;
  bool neox;
  bool yarn = false;
  bool freq_factors = false;
};

// The cache of `type` for n_blocks blocks, every byte poisoned.
testing::HostKv poisoned_cache(int64_t n_blocks, int64_t row, KvType type) {
  testing::HostKv h = testing::encode_kv(std::vector<float>(static_cast<size_t>(n_blocks * kKvBlockSize * row)), type);
  std::fill(h.data.begin(), h.data.end(), uint8_t{0xFF});
  std::fill(h.scales.begin(), h.scales.end(), uint16_t{0xFFFF});
  return h;
}

void check_fused_equals_separate(const Shape& s, KvType type, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t n_head = s.n_head_kv * s.gqa, d = s.head_dim, row = s.n_head_kv * d, n_blocks = 5;
  const testing::Bf16Data q = testing::random_bf16(static_cast<size_t>(s.n_tok * n_head * d), rng, 3.0f);
  const testing::Bf16Data k = testing::random_bf16(static_cast<size_t>(s.n_tok * row), rng, 3.0f);
  const testing::Bf16Data v = testing::random_bf16(static_cast<size_t>(s.n_tok * row), rng);
  std::vector<int32_t> positions(static_cast<size_t>(s.n_tok)), slots(static_cast<size_t>(s.n_tok));
  for (auto& p : positions) p = std::uniform_int_distribution<int32_t>(0, 40000)(rng);
  std::vector<int32_t> pool(static_cast<size_t>(n_blocks * kKvBlockSize));
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::copy_n(pool.begin(), slots.size(), slots.begin());
  if (s.n_tok > 1) slots[1] = -1;  // padding: rotated, not stored
  std::vector<float> factors(static_cast<size_t>(s.n_rot / 2));
  for (auto& f : factors) f = std::uniform_real_distribution<float>(1.0f, 8.0f)(rng);
  DeviceBuffer<float> dfactors(factors.size());
  dfactors.upload(factors);

  RopeConfig c;
  c.n_rot = s.n_rot;
  c.freq_base = 500000.0f;
  c.neox = s.neox;
  if (s.freq_factors) c.freq_factors = dfactors.data();
  if (s.yarn) {
    c.freq_scale = 0.25f;
    c.ext_factor = 1.0f;
    c.n_ctx_orig = 4096;
  }
  DeviceBuffer<int32_t> dpos(positions.size()), dslots(slots.size());
  dpos.upload(positions);
  dslots.upload(slots);
  DeviceBuffer<uint16_t> dv(v.bits.size());
  dv.upload(v.bits);
  struct Run {
    DeviceBuffer<uint16_t> q, k;
    testing::DeviceKv ck, cv;
  };
  const testing::HostKv empty = poisoned_cache(n_blocks, row, type);
  auto start = [&] {
    Run r{DeviceBuffer<uint16_t>(q.bits.size()), DeviceBuffer<uint16_t>(k.bits.size()), testing::DeviceKv(empty),
          testing::DeviceKv(empty)};
    r.q.upload(q.bits);
    r.k.upload(k.bits);
    return r;
  };
  Run separate = start(), fused = start();
  const KvCacheView sc = testing::view_of(separate.ck, separate.cv, n_blocks, s.n_head_kv, d, type);
  rope(c, testing::as_bf16(separate.q), n_head * d, dpos.data(), s.n_tok, n_head, d, nullptr);
  rope(c, testing::as_bf16(separate.k), row, dpos.data(), s.n_tok, s.n_head_kv, d, nullptr);
  kv_store(sc, testing::as_bf16(separate.k), testing::as_bf16(dv), row, dslots.data(), s.n_tok, nullptr);
  const KvCacheView fc = testing::view_of(fused.ck, fused.cv, n_blocks, s.n_head_kv, d, type);
  rope_store_kv(c, testing::as_bf16(fused.q), n_head * d, n_head, testing::as_bf16(fused.k), testing::as_bf16(dv), row,
                dpos.data(), fc, dslots.data(), s.n_tok, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::string what = testing::kv_type_name(type) + " head_dim " + std::to_string(d) + " n_rot " +
                           std::to_string(s.n_rot) + (s.neox ? " neox" : " norm") + (s.yarn ? " yarn" : "") +
                           (s.freq_factors ? " factors" : "") + " n_tok " + std::to_string(s.n_tok);
  EXPECT_TRUE(fused.q.download() == separate.q.download()) << what;
  EXPECT_TRUE(fused.k.download() == separate.k.download()) << what;
  EXPECT_TRUE(fused.q.download() != q.bits) << what << ": q was not rotated";
  EXPECT_TRUE(fused.ck.data.download() == separate.ck.data.download()) << what;
  EXPECT_TRUE(fused.cv.data.download() == separate.cv.data.download()) << what;
  EXPECT_TRUE(fused.ck.scales.download() == separate.ck.scales.download()) << what;
  EXPECT_TRUE(fused.cv.scales.download() == separate.cv.scales.download()) << what;
  EXPECT_TRUE(fused.ck.data.download() != empty.data) << what << ": nothing stored";
}

TEST(CudaRopeStore, GivesTheBitsOfRopeRopeAndKvStore) {
  COHORT_REQUIRE_CUDA_DEVICE();
  const Shape shapes[] = {
      {8, 4, 128, 128, 1, false},                // an 8B model's decode step (llama: pairs 2p, 2p + 1)
      {8, 4, 128, 128, 3, true, false, true},    // neox, llama3-style frequency factors, a padded slot
      {2, 7, 64, 64, 4, true, true},             // YaRN, head_dim 64
      {4, 2, 256, 256, 2, false},                // head_dim 256: the vectors loop
      {2, 3, 128, 64, 2, true},                  // partial rotation
  };
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    for (KvType t : testing::kKvTypes) check_fused_equals_separate(s, t, seed++);
  }
}

TEST(CudaRopeStore, RejectsBadShapes) {
  COHORT_REQUIRE_CUDA_DEVICE();
  testing::HostKv h = poisoned_cache(1, 8 * 48, KvType::kF16);
  testing::DeviceKv ck(h), cv(h);
  DeviceBuffer<uint16_t> x(16 * 48 * 8);
  DeviceBuffer<int32_t> ints(4);
  RopeConfig c;
  c.n_rot = 48;
  const KvCacheView cache = testing::view_of(ck, cv, 1, 8, 48, KvType::kF16);  // head_dim 48: not whole 32-blocks
  EXPECT_THROW(rope_store_kv(c, testing::as_bf16(x), 8 * 48, 8, testing::as_bf16(x), testing::as_bf16(x), 8 * 48,
                             ints.data(), cache, ints.data(), 1, nullptr),
               Error);
}

}  // namespace rope_store_test
}  // namespace cohort::cuda
