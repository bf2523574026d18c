#include "backend/cuda/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_test_util.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/kernel_test_util.h"
#include "backend/cuda/kv_test_util.h"
#include "backend/cuda/matvec_q8.h"
#include "common/error.h"
#include "common/half.h"

namespace cohort::cuda {
namespace attention_test {

using testing::within;

// The output is BF16 (rounding RMS about 1.6e-3 relative); softmax and the
// weighted sum in F32 add ~1e-6. 5e-3 is three times the rounding.
constexpr double kTol = 5e-3;

struct Case {
  int64_t n_head_kv, gqa, head_dim;
  std::vector<int32_t> ctx;  // per sequence
  KvType type = KvType::kF16;  // -ctk/-ctv
};

void check_attention(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t n_seq = static_cast<int64_t>(c.ctx.size()), n_head = c.n_head_kv * c.gqa, d = c.head_dim;
  const int64_t max_ctx = *std::max_element(c.ctx.begin(), c.ctx.end());
  const int64_t max_blocks = (max_ctx + kKvBlockSize - 1) / kKvBlockSize + 1;  // one spare column
  int64_t used = 0;
  for (int32_t n : c.ctx) used += (n + kKvBlockSize - 1) / kKvBlockSize;
  const int64_t n_blocks = used + 7;  // some blocks belong to nobody
  // Shuffled, non-contiguous block tables; unused entries are -1 (never read).
  std::vector<int32_t> pool(static_cast<size_t>(n_blocks));
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::vector<int32_t> table(static_cast<size_t>(n_seq * max_blocks), -1);
  size_t next = 0;
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t b = 0; b < (c.ctx[s] + kKvBlockSize - 1) / kKvBlockSize; ++b) table[s * max_blocks + b] = pool[next++];
  }
  const size_t cache_elems = static_cast<size_t>(n_blocks * kKvBlockSize * c.n_head_kv * d);
  const testing::HostKv k = testing::random_kv(cache_elems, c.type, rng);
  const testing::HostKv v = testing::random_kv(cache_elems, c.type, rng);
  const testing::Bf16Data q = testing::random_bf16(static_cast<size_t>(n_seq * n_head * d), rng);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));

  std::vector<double> want(static_cast<size_t>(n_seq * n_head * d), 0.0);
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t kvh = h / c.gqa;
      const float* qh = q.values.data() + (s * n_head + h) * d;
      std::vector<double> score(static_cast<size_t>(c.ctx[s]));
      auto at = [&](int64_t j) {
        const int64_t slot = int64_t{table[s * max_blocks + j / kKvBlockSize]} * kKvBlockSize + j % kKvBlockSize;
        return static_cast<size_t>((slot * c.n_head_kv + kvh) * d);
      };
      for (int64_t j = 0; j < c.ctx[s]; ++j) {
        double dot = 0.0;
        for (int64_t i = 0; i < d; ++i) dot += static_cast<double>(qh[i]) * k.values[at(j) + i];
        score[j] = dot * scale;
      }
      const double top = c.ctx[s] > 0 ? *std::max_element(score.begin(), score.end()) : 0.0;
      double sum = 0.0;
      for (double& x : score) sum += (x = std::exp(x - top));
      for (int64_t j = 0; j < c.ctx[s]; ++j) {
        for (int64_t i = 0; i < d; ++i) want[(s * n_head + h) * d + i] += score[j] / sum * v.values[at(j) + i];
      }
    }
  }

  testing::DeviceKv dk(k), dv(v);
  DeviceBuffer<uint16_t> dq(q.bits.size()), dout(want.size());
  dq.upload(q.bits);
  DeviceBuffer<int32_t> dtable(table.size()), dctx(c.ctx.size());
  dtable.upload(table);
  dctx.upload(c.ctx);
  DeviceBuffer<uint8_t> work(decode_attention_workspace_bytes(n_seq, n_head, d, max_ctx));
  CUDA_CHECK(cudaMemset(work.data(), 0xFF, work.size()));
  testing::poison(dout);
  const KvCacheView cache = testing::view_of(dk, dv, n_blocks, c.n_head_kv, d, c.type);
  decode_attention(cache, testing::as_bf16(dq), dtable.data(), max_blocks, dctx.data(), n_seq, n_head, max_ctx,
                   static_cast<float>(scale), work.data(), testing::as_bf16(dout), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> got = testing::bf16_values(dout.download());
  std::string what = "attention kv_heads " + std::to_string(c.n_head_kv) + " gqa " + std::to_string(c.gqa) +
                     " head_dim " + std::to_string(d) + " " + testing::kv_type_name(c.type) + " ctx";
  for (int32_t n : c.ctx) {
    what += ' ';
    what += std::to_string(n);
  }
  const double e = testing::relative_l2(got.data(), want.data(), want.size());
  testing::report(what, e, kTol);
  EXPECT_TRUE(within(e, kTol)) << what << ": " << e;

  // Again with the quantized output: the same BF16, and the bytes the
  // quantizer's host reference makes of it.
  const std::vector<uint16_t> plain = dout.download();
  DeviceBuffer<uint8_t> xq(q8_activation_bytes(n_seq, n_head * d));
  testing::poison(dout);
  testing::poison(xq);
  decode_attention(cache, testing::as_bf16(dq), dtable.data(), max_blocks, dctx.data(), n_seq, n_head, max_ctx,
                   static_cast<float>(scale), work.data(), testing::as_bf16(dout), nullptr, nullptr, xq.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(dout.download(), plain) << what << ": the output with xq";
  std::vector<uint8_t> want_q(xq.size());
  quantize_activations_host(plain.data(), n_seq, n_head * d, want_q.data());
  EXPECT_EQ(xq.download(), want_q) << what << ": xq";
}

TEST(CudaDecodeAttention, MatchesTheF64ReferenceOnShuffledPagedCaches) {
  COHORT_REQUIRE_CUDA_DEVICE();
  // Lengths: 1 token, partial blocks, exactly one split, just past a split,
  // several splits with a partial last block.
  const std::vector<int32_t> ctx = {1, 17, 256, 300, 1000, 2100};
  uint32_t seed = 1;
  for (int64_t head_dim : {64, 128}) {
    for (int64_t gqa : {1, 4, 8}) check_attention({2, gqa, head_dim, ctx}, seed++);
  }
  check_attention({8, 4, 128, {8192, 129}}, seed++);  // llama3-8b heads at a long context
  check_attention({1, 3, 256, {33, 700}}, seed++);   // head_dim 256, a group of 3
  check_attention({2, 16, 64, {77}}, seed++);         // a group of 16: two chunks of 8 heads
  check_attention({8, 4, 128, {128}}, seed++);        // one sequence decoding: 8 splits of 16 tokens
  check_attention({8, 4, 128, {5, 200, 31}}, seed++); // short contexts of three: splits of 32
  for (KvType t : {KvType::kBf16, KvType::kQ8_0}) {  // the other cache types
    check_attention({8, 4, 128, {300, 129, 1}, t}, seed++);
    check_attention({2, 3, 256, {700}, t}, seed++);
    check_attention({2, 8, 64, {17, 1000}, t}, seed++);
  }
}

TEST(CudaDecodeAttention, ZeroContextGivesZeros) {
  COHORT_REQUIRE_CUDA_DEVICE();
  check_attention({2, 2, 64, {0, 40}}, 99);  // sequence 0 is all zeros in want
}

// Stored rows hold what the host encoding of the same values holds (F16
// rounded once, BF16 as it is, Q8_0 as quant::quantize makes it), in their
// slots and nowhere else.
void check_kv_store(KvType type) {
  std::mt19937 rng(3 + static_cast<int>(type));
  const int64_t n_blocks = 9, n_head_kv = 8, d = 128, n_tok = 21, stride = 48 * 128;
  const size_t row = static_cast<size_t>(n_head_kv * d), cache_elems = static_cast<size_t>(n_blocks * kKvBlockSize) * row;
  const testing::Bf16Data kn = testing::random_bf16(static_cast<size_t>(n_tok * stride), rng, 100.0f);
  const testing::Bf16Data vn = testing::random_bf16(static_cast<size_t>(n_tok * stride), rng);
  std::vector<int32_t> slots(static_cast<size_t>(n_blocks * kKvBlockSize));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(static_cast<size_t>(n_tok));
  slots[4] = -1;  // padding
  // The cache before: poison (all bytes 0xFF); after: the rows, encoded.
  testing::HostKv want_k = testing::encode_kv(std::vector<float>(cache_elems), type), want_v = want_k;
  for (auto* h : {&want_k, &want_v}) {
    std::fill(h->data.begin(), h->data.end(), uint8_t{0xFF});
    std::fill(h->scales.begin(), h->scales.end(), uint16_t{0xFFFF});
  }
  testing::DeviceKv dk(want_k), dv(want_v);
  for (int64_t t = 0; t < n_tok; ++t) {
    if (slots[t] < 0) continue;
    const auto first = static_cast<ptrdiff_t>(t * stride);
    const testing::HostKv k = testing::encode_kv({kn.values.begin() + first, kn.values.begin() + first + row}, type);
    const testing::HostKv v = testing::encode_kv({vn.values.begin() + first, vn.values.begin() + first + row}, type);
    const size_t bytes = k.data.size(), scales = k.scales.size(), at = static_cast<size_t>(slots[t]);
    std::copy(k.data.begin(), k.data.end(), want_k.data.begin() + static_cast<ptrdiff_t>(at * bytes));
    std::copy(v.data.begin(), v.data.end(), want_v.data.begin() + static_cast<ptrdiff_t>(at * bytes));
    std::copy(k.scales.begin(), k.scales.end(), want_k.scales.begin() + static_cast<ptrdiff_t>(at * scales));
    std::copy(v.scales.begin(), v.scales.end(), want_v.scales.begin() + static_cast<ptrdiff_t>(at * scales));
  }
  DeviceBuffer<uint16_t> dkn(kn.bits.size()), dvn(vn.bits.size());
  dkn.upload(kn.bits);
  dvn.upload(vn.bits);
  DeviceBuffer<int32_t> dslots(slots.size());
  dslots.upload(slots);
  const KvCacheView cache = testing::view_of(dk, dv, n_blocks, n_head_kv, d, type);
  kv_store(cache, testing::as_bf16(dkn), testing::as_bf16(dvn), stride, dslots.data(), n_tok, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::string what = testing::kv_type_name(type);
  EXPECT_EQ(dk.data.download(), want_k.data) << what;
  EXPECT_EQ(dv.data.download(), want_v.data) << what;
  EXPECT_EQ(dk.scales.download(), want_k.scales) << what;
  EXPECT_EQ(dv.scales.download(), want_v.scales) << what;
}

TEST(CudaKvStore, WritesRowsIntoTheirSlotsAndNothingElse) {
  COHORT_REQUIRE_CUDA_DEVICE();
  for (KvType t : testing::kKvTypes) check_kv_store(t);
}

TEST(CudaDecodeAttention, RejectsBadShapes) {
  auto* h = reinterpret_cast<__half*>(uintptr_t{256});
  auto* b = reinterpret_cast<__nv_bfloat16*>(uintptr_t{256});
  void* work = reinterpret_cast<void*>(uintptr_t{256});
  KvCacheView cache{h, h, 4, 2, 96};
  EXPECT_THROW(decode_attention(cache, b, nullptr, 4, nullptr, 1, 4, 64, 1.0f, work, b, nullptr), Error);
  cache.head_dim = 64;
  EXPECT_THROW(decode_attention(cache, b, nullptr, 4, nullptr, 1, 3, 64, 1.0f, work, b, nullptr), Error);
  EXPECT_THROW(decode_attention(cache, b, nullptr, 3, nullptr, 1, 4, 64, 1.0f, work, b, nullptr), Error);
  EXPECT_THROW(decode_attention(cache, b, nullptr, 4, nullptr, 1, 4, 64, 1.0f, nullptr, b, nullptr), Error);
  EXPECT_THROW(kv_store(cache, b, b, 64, nullptr, 1, nullptr), Error);  // stride < n_head_kv * head_dim
  cache.type = KvType::kQ8_0;  // without scales
  EXPECT_THROW(kv_store(cache, b, b, 128, nullptr, 1, nullptr), Error);
  cache.k_scale = cache.v_scale = h;
  cache.head_dim = 48;  // not whole blocks of 32
  EXPECT_THROW(kv_store(cache, b, b, 128, nullptr, 1, nullptr), Error);
  EXPECT_GT(decode_attention_workspace_bytes(8, 32, 128, 8192), size_t{8 * 32 * 32 * 128 * 4});
}

}  // namespace attention_test
}  // namespace cohort::cuda
