#include "backend/cuda/prefill_attention.h"

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
#include "common/error.h"
#include "common/half.h"

namespace cohort::cuda {
namespace prefill_attention_test {

using testing::within;

// The output is BF16 (rounding RMS about 1.6e-3 relative); P rounded to F16
// for P·V adds ~3e-4 (to BF16, with a BF16 cache, up to ~2.4e-3 per
// probability, less once averaged over the keys), the F32 softmax ~1e-6.
// 5e-3 is three times the rounding of the F16 case.
constexpr double kTol = 5e-3;

// The micro-batch holds positions [pos, pos + n_new) of a sequence whose
// earlier positions are already in the cache.
struct Chunk {
  int32_t pos, n_new;
};

struct Case {
  int64_t n_head_kv, gqa, head_dim;
  std::vector<Chunk> seqs;  // in micro-batch order, one row of the block tables each
  KvType type = KvType::kF16;  // -ctk/-ctv
};

// The step input's host arrays for c: rows sequence by sequence.
struct Batch {
  std::vector<int32_t> positions, seq_index;
};

Batch batch_of(const Case& c) {
  Batch b;
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    for (int32_t i = 0; i < c.seqs[s].n_new; ++i) {
      b.positions.push_back(c.seqs[s].pos + i);
      b.seq_index.push_back(static_cast<int32_t>(s));
    }
  }
  return b;
}

// Shuffled, non-contiguous block tables [n_seq, max_blocks] over n_blocks
// blocks (some belong to nobody); unused entries are -1 (never read).
std::vector<int32_t> random_tables(const std::vector<int32_t>& ctx, int64_t max_blocks, int64_t n_blocks,
                                   std::mt19937& rng) {
  std::vector<int32_t> pool(static_cast<size_t>(n_blocks));
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::vector<int32_t> table(ctx.size() * static_cast<size_t>(max_blocks), -1);
  size_t next = 0;
  for (size_t s = 0; s < ctx.size(); ++s) {
    for (int64_t b = 0; b < (ctx[s] + kKvBlockSize - 1) / kKvBlockSize; ++b) {
      table[s * static_cast<size_t>(max_blocks) + static_cast<size_t>(b)] = pool[next++];
    }
  }
  return table;
}

struct Inputs {
  int64_t n_head, max_blocks, n_blocks;
  Batch batch;
  std::vector<int32_t> table;
  testing::HostKv k, v;
  testing::Bf16Data q;
  double scale;
};

Inputs random_inputs(const Case& c, std::mt19937& rng) {
  Inputs in;
  in.n_head = c.n_head_kv * c.gqa;
  in.batch = batch_of(c);
  std::vector<int32_t> ctx;
  int64_t used = 0;
  for (const Chunk& s : c.seqs) {
    ctx.push_back(s.pos + s.n_new);
    used += (ctx.back() + kKvBlockSize - 1) / kKvBlockSize;
  }
  in.max_blocks = (*std::max_element(ctx.begin(), ctx.end()) + kKvBlockSize - 1) / kKvBlockSize + 1;
  in.n_blocks = used + 7;
  in.table = random_tables(ctx, in.max_blocks, in.n_blocks, rng);
  const size_t cache_elems = static_cast<size_t>(in.n_blocks * kKvBlockSize * c.n_head_kv * c.head_dim);
  in.k = testing::random_kv(cache_elems, c.type, rng);
  in.v = testing::random_kv(cache_elems, c.type, rng);
  in.q = testing::random_bf16(in.batch.positions.size() * static_cast<size_t>(in.n_head * c.head_dim), rng);
  in.scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  return in;
}

// out[t, h, :] in F64 from the same F16 / BF16 inputs.
std::vector<double> reference(const Case& c, const Inputs& in) {
  const int64_t d = c.head_dim, n_tok = static_cast<int64_t>(in.batch.positions.size());
  std::vector<double> want(static_cast<size_t>(n_tok * in.n_head * d), 0.0);
  testing::parallel_ranges(n_tok, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t s = in.batch.seq_index[t], n_keys = in.batch.positions[t] + 1;
      auto at = [&](int64_t j, int64_t kvh) {
        const int64_t slot = int64_t{in.table[s * in.max_blocks + j / kKvBlockSize]} * kKvBlockSize + j % kKvBlockSize;
        return static_cast<size_t>((slot * c.n_head_kv + kvh) * d);
      };
      for (int64_t h = 0; h < in.n_head; ++h) {
        const float* qh = in.q.values.data() + (t * in.n_head + h) * d;
        std::vector<double> score(static_cast<size_t>(n_keys));
        for (int64_t j = 0; j < n_keys; ++j) {
          double dot = 0.0;
          for (int64_t i = 0; i < d; ++i) dot += static_cast<double>(qh[i]) * in.k.values[at(j, h / c.gqa) + i];
          score[j] = dot * in.scale;
        }
        const double top = *std::max_element(score.begin(), score.end());
        double sum = 0.0;
        for (double& x : score) sum += (x = std::exp(x - top));
        double* o = want.data() + (t * in.n_head + h) * d;
        for (int64_t j = 0; j < n_keys; ++j) {
          for (int64_t i = 0; i < d; ++i) o[i] += score[j] / sum * in.v.values[at(j, h / c.gqa) + i];
        }
      }
    }
  });
  return want;
}

std::string describe(const Case& c) {
  std::string what = "prefill kv_heads " + std::to_string(c.n_head_kv) + " gqa " + std::to_string(c.gqa) +
                     " head_dim " + std::to_string(c.head_dim) + " " + testing::kv_type_name(c.type) + " chunks";
  for (const Chunk& s : c.seqs) {
    what += ' ';
    what += std::to_string(s.pos);
    what += '+';
    what += std::to_string(s.n_new);
  }
  return what;
}

void check_prefill(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const Inputs in = random_inputs(c, rng);
  const std::vector<double> want = reference(c, in);
  std::vector<PrefillTile> tiles;
  plan_prefill_tiles(in.batch.positions, in.batch.seq_index, tiles);

  testing::DeviceKv dk(in.k), dv(in.v);
  DeviceBuffer<uint16_t> dq(in.q.bits.size()), dout(want.size());
  dq.upload(in.q.bits);
  DeviceBuffer<int32_t> dtable(in.table.size());
  dtable.upload(in.table);
  DeviceBuffer<PrefillTile> dtiles(tiles.size());
  dtiles.upload(tiles);
  testing::poison(dout);
  const KvCacheView cache = testing::view_of(dk, dv, in.n_blocks, c.n_head_kv, c.head_dim, c.type);
  prefill_attention(cache, testing::as_bf16(dq), dtiles.data(), static_cast<int64_t>(tiles.size()), dtable.data(),
                    in.max_blocks, in.n_head, static_cast<float>(in.scale), testing::as_bf16(dout), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> got = testing::bf16_values(dout.download());
  const std::string what = describe(c);
  const double e = testing::relative_l2(got.data(), want.data(), want.size());
  testing::report(what, e, kTol);
  EXPECT_TRUE(within(e, kTol)) << what << ": " << e;
}

TEST(CudaPrefillAttention, MatchesTheF64ReferenceOnShuffledPagedCaches) {
  COHORT_REQUIRE_CUDA_DEVICE();
  // A prompt of several tiles, a chunk at pos > 0 spanning key tiles, a
  // decode-like single row, exactly one tile, a short chunk off a block edge.
  const std::vector<Chunk> seqs = {{0, 150}, {200, 70}, {70, 1}, {0, 64}, {16, 17}};
  uint32_t seed = 1;
  for (int64_t head_dim : {64, 128, 256}) {
    for (int64_t gqa : {1, 4, 8}) check_prefill({2, gqa, head_dim, seqs}, seed++);
  }
  check_prefill({8, 4, 128, {{0, 600}, {1000, 200}}}, seed++);  // llama3-8b heads, a long chunked prompt
  check_prefill({1, 3, 256, {{0, 90}, {45, 40}}}, seed++);      // head_dim 256, a group of 3
  for (KvType t : {KvType::kBf16, KvType::kQ8_0}) {  // the other cache types
    for (int64_t head_dim : {64, 128, 256}) check_prefill({2, 4, head_dim, seqs, t}, seed++);
  }
}

TEST(CudaPrefillTiles, CoverEveryRowOnceWithinOneSequenceRun) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> seq_of(0, 5), len_of(1, 200), pos_of(0, 3000), gap_of(0, 2);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<int32_t> positions, seq_index;
    for (int run = 0; run < 1 + trial % 7; ++run) {
      const int32_t seq = seq_of(rng), len = len_of(rng);
      int32_t pos = pos_of(rng);
      for (int32_t i = 0; i < len; ++i) {
        if (gap_of(rng) == 0 && i % 37 == 36) pos += 2;  // now and then a position gap
        positions.push_back(pos++);
        seq_index.push_back(seq);
      }
    }
    std::vector<PrefillTile> tiles = {{9, 9, 9, 9}};  // cleared by the plan
    plan_prefill_tiles(positions, seq_index, tiles);
    int32_t next = 0;
    for (const PrefillTile& t : tiles) {
      ASSERT_EQ(t.row, next);
      ASSERT_GE(t.n_rows, 1);
      ASSERT_LE(t.n_rows, kPrefillTileRows);
      for (int32_t r = 0; r < t.n_rows; ++r) {
        ASSERT_EQ(seq_index[t.row + r], t.seq);
        ASSERT_EQ(positions[t.row + r], t.pos + r);
      }
      next += t.n_rows;
    }
    EXPECT_EQ(next, static_cast<int32_t>(positions.size()));
  }
}

TEST(CudaPrefillTiles, CutsOnlyAtTheTileSizeASequenceOrAGap) {
  std::vector<int32_t> positions, seq_index;
  for (int32_t p = 0; p < 150; ++p) positions.push_back(p);
  seq_index.assign(150, 0);
  for (int32_t p : {5, 6, 9}) {
    positions.push_back(p);
    seq_index.push_back(1);
  }
  std::vector<PrefillTile> tiles;
  plan_prefill_tiles(positions, seq_index, tiles);
  ASSERT_EQ(tiles.size(), 5u);
  const int32_t want[5][4] = {{0, 64, 0, 0}, {64, 64, 0, 64}, {128, 22, 0, 128}, {150, 2, 1, 5}, {152, 1, 1, 9}};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(tiles[i].row, want[i][0]);
    EXPECT_EQ(tiles[i].n_rows, want[i][1]);
    EXPECT_EQ(tiles[i].seq, want[i][2]);
    EXPECT_EQ(tiles[i].pos, want[i][3]);
  }
  plan_prefill_tiles({}, {}, tiles);
  EXPECT_TRUE(tiles.empty());
}

TEST(CudaPrefillAttention, RejectsBadShapes) {
  auto* h = reinterpret_cast<__half*>(uintptr_t{256});
  auto* b = reinterpret_cast<__nv_bfloat16*>(uintptr_t{256});
  auto* tiles = reinterpret_cast<const PrefillTile*>(uintptr_t{256});
  auto* table = reinterpret_cast<const int32_t*>(uintptr_t{256});
  KvCacheView cache{h, h, 4, 2, 96};
  EXPECT_THROW(prefill_attention(cache, b, tiles, 1, table, 4, 4, 1.0f, b, nullptr), Error);  // head_dim 96
  cache.head_dim = 64;
  EXPECT_THROW(prefill_attention(cache, b, tiles, 1, table, 4, 3, 1.0f, b, nullptr), Error);  // 3 heads, 2 KV
  EXPECT_THROW(prefill_attention(cache, b, tiles, 65536, table, 4, 4, 1.0f, b, nullptr), Error);
  EXPECT_THROW(prefill_attention(cache, b + 1, tiles, 1, table, 4, 4, 1.0f, b, nullptr), Error);  // misaligned q
  EXPECT_THROW(prefill_attention(cache, b, tiles, 1, table, 0, 4, 1.0f, b, nullptr), Error);
}

}  // namespace prefill_attention_test
}  // namespace cohort::cuda
