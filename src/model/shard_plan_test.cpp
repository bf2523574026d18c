// ShardPlan: every head, FFN column and vocabulary row owned by exactly one
// rank; column shards of O and down on block boundaries; `-ts` rounding by
// largest remainder (against an exact integer reference); the errors for
// impossible splits.
#include "model/shard_plan.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "gguf/gguf_writer.h"
#include "model/presets.h"

namespace cohort::model {
namespace shard_plan_test {

using gguf::TensorType;

// Largest remainder in exact integer arithmetic, for integer weights: rank r's
// quota is n * w[r] / W; remainders compare as n * w[r] % W.
std::vector<int64_t> reference_apportion(int64_t n, const std::vector<int64_t>& w) {
  const int64_t total = std::accumulate(w.begin(), w.end(), int64_t{0});
  std::vector<int64_t> counts(w.size()), rem(w.size());
  int64_t left = n;
  for (size_t r = 0; r < w.size(); ++r) {
    counts[r] = n * w[r] / total;
    rem[r] = n * w[r] % total;
    left -= counts[r];
  }
  std::vector<size_t> order(w.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rem[a] > rem[b]; });
  for (size_t i = 0; i < static_cast<size_t>(left); ++i) ++counts[order[i]];
  return counts;
}

std::string error_of(const HParams& hp, int n_ranks, const std::vector<float>& ts, ShardAlignment a) {
  try {
    make_shard_plan(hp, n_ranks, ts, a);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_mentions(const std::string& message, const std::vector<std::string>& parts) {
  EXPECT_FALSE(message.empty()) << "no error thrown";
  for (const std::string& p : parts) {
    EXPECT_NE(message.find(p), std::string::npos) << "'" << message << "' does not name " << p;
  }
}

// Integer `-ts` weights for the sweep: even, then two uneven patterns.
std::vector<std::vector<int64_t>> weight_sets(int n_ranks) {
  std::vector<int64_t> even(static_cast<size_t>(n_ranks), 1), steep, mixed;
  for (int r = 0; r < n_ranks; ++r) {
    steep.push_back(n_ranks - r);             // n, n-1, ..., 1
    mixed.push_back(1 + (r * 7 + 3) % 5);     // 4 2 5 3 1 4 2 5
  }
  return {even, steep, mixed};
}

// Each index of [0, n) is covered by exactly one range, and the ranges are
// contiguous in rank order.
void expect_partition(const std::vector<Range>& ranges, int64_t n, const char* what) {
  std::vector<int> owners(static_cast<size_t>(n), 0);
  for (const Range& r : ranges) {
    ASSERT_LE(0, r.begin);
    ASSERT_LE(r.end, n);
    for (int64_t i = r.begin; i < r.end; ++i) ++owners[static_cast<size_t>(i)];
  }
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(owners[static_cast<size_t>(i)], 1) << what << " " << i;
  for (size_t r = 1; r < ranges.size(); ++r) EXPECT_EQ(ranges[r].begin, ranges[r - 1].end) << what;
}

// The sweep body: the plan for one shape, rank count, weights and block size
// either matches the exact reference or (when the reference gives a rank no
// unit) is refused naming that.
void check_plan(const HParams& hp, int n_ranks, const std::vector<int64_t>& weights, int64_t block) {
  SCOPED_TRACE(::testing::Message() << "ranks " << n_ranks << " block " << block << " ts[0] "
                                    << weights[0]);
  const ShardAlignment a{block, block};
  const std::vector<float> ts(weights.begin(), weights.end());
  const int64_t group = hp.n_head / hp.n_head_kv;
  const int64_t head_unit = block / std::gcd(block, group * hp.head_dim);
  const int64_t n_head_units = hp.n_head_kv / head_unit, n_ffn_units = hp.n_ff / block;
  if (n_ranks > hp.n_head_kv || n_ranks > n_head_units || n_ranks > n_ffn_units) {
    EXPECT_NE(error_of(hp, n_ranks, ts, a), "");
    return;
  }
  const auto heads = reference_apportion(n_head_units, weights);
  const auto ffn = reference_apportion(n_ffn_units, weights);
  const auto vocab = reference_apportion(hp.n_vocab, weights);
  auto has_zero = [](const std::vector<int64_t>& c) { return std::count(c.begin(), c.end(), 0) > 0; };
  if (has_zero(heads) || has_zero(ffn) || has_zero(vocab)) {
    expect_mentions(error_of(hp, n_ranks, ts, a), {"rounds to 0"});
    return;
  }
  const ShardPlan plan = make_shard_plan(hp, n_ranks, ts, a);
  ASSERT_EQ(plan.n_ranks(), n_ranks);
  std::vector<Range> kv_r, q_r, ffn_r, vocab_r;
  for (int r = 0; r < n_ranks; ++r) {
    const RankShard& s = plan.ranks[static_cast<size_t>(r)];
    const auto ur = static_cast<size_t>(r);
    EXPECT_EQ(s.kv_heads.size(), heads[ur] * head_unit);
    EXPECT_EQ(s.ffn.size(), ffn[ur] * block);
    EXPECT_EQ(s.vocab.size(), vocab[ur]);
    EXPECT_EQ(s.heads, (Range{s.kv_heads.begin * group, s.kv_heads.end * group}));
    // O columns and down columns of this rank start on a block boundary.
    EXPECT_EQ(s.heads.begin * hp.head_dim % block, 0);
    EXPECT_EQ(s.ffn.begin % block, 0);
    kv_r.push_back(s.kv_heads);
    q_r.push_back(s.heads);
    ffn_r.push_back(s.ffn);
    vocab_r.push_back(s.vocab);
  }
  expect_partition(kv_r, hp.n_head_kv, "KV head");
  expect_partition(q_r, hp.n_head, "query head");
  expect_partition(ffn_r, hp.n_ff, "FFN column");
  expect_partition(vocab_r, hp.n_vocab, "vocabulary row");
}

HParams shape(int64_t n_head, int64_t n_head_kv, int64_t head_dim, int64_t n_ff, int64_t n_vocab) {
  HParams hp = preset("tiny");
  hp.n_head = n_head;
  hp.n_head_kv = n_head_kv;
  hp.head_dim = head_dim;
  hp.n_embd = n_head * head_dim;
  hp.n_ff = n_ff;
  hp.n_vocab = n_vocab;
  return hp;
}

TEST(ShardPlan, EveryUnitOwnedOnceOnPresetsForOneToEightRanks) {
  for (const std::string& name : preset_names()) {
    SCOPED_TRACE(name);
    const HParams hp = preset(name);
    for (int64_t block : {1, 32, 256}) {
      const bool valid = hp.n_head * hp.head_dim % block == 0 && hp.n_ff % block == 0;
      if (!valid) continue;  // no weight of that type exists (ErrorsForImpossibleSplits)
      for (int n = 1; n <= 8; ++n) {
        for (const auto& w : weight_sets(n)) check_plan(hp, n, w, block);
      }
    }
  }
}

TEST(ShardPlan, EveryUnitOwnedOnceOnEdgeShapes) {
  const std::vector<HParams> shapes = {
      shape(1, 1, 64, 32, 7),         // one head, FFN of one block, tiny vocabulary
      shape(12, 12, 64, 3072, 1000),  // multi-head attention (group of 1)
      shape(32, 32, 80, 10240, 51200),  // head_dim 80: 256-blocks need 16 heads per unit
      shape(8, 1, 128, 1024, 300),    // multi-query: one KV group
      shape(28, 4, 128, 18944, 152064),  // Qwen2-7B-like, groups of 7
      shape(40, 8, 128, 13824, 32000),   // 5 query heads per KV head
  };
  for (const HParams& hp : shapes) {
    SCOPED_TRACE(::testing::Message() << hp.n_head << "/" << hp.n_head_kv << " hd " << hp.head_dim);
    for (int64_t block : {1, 32, 256}) {
      if (hp.n_head * hp.head_dim % block != 0 || hp.n_ff % block != 0) continue;
      for (int n = 1; n <= 8; ++n) {
        for (const auto& w : weight_sets(n)) check_plan(hp, n, w, block);
      }
    }
  }
}

TEST(ShardPlan, UnevenSplitOfLlama3InKQuants) {
  const std::vector<float> ts = {0.625f, 0.375f};
  const ShardPlan plan = make_shard_plan(preset("llama3-8b"), 2, ts,
                                         ShardAlignment::for_types(TensorType::Q4_K, TensorType::Q6_K));
  ASSERT_EQ(plan.n_ranks(), 2);
  EXPECT_EQ(plan.ranks[0].kv_heads, (Range{0, 5}));
  EXPECT_EQ(plan.ranks[1].kv_heads, (Range{5, 8}));
  EXPECT_EQ(plan.ranks[0].heads, (Range{0, 20}));
  EXPECT_EQ(plan.ranks[1].heads, (Range{20, 32}));
  EXPECT_EQ(plan.ranks[0].ffn, (Range{0, 35 * 256}));   // 14336 = 56 blocks: 35 + 21
  EXPECT_EQ(plan.ranks[1].ffn, (Range{35 * 256, 14336}));
  EXPECT_EQ(plan.ranks[0].vocab, (Range{0, 80160}));    // 128256 * 0.625
  EXPECT_EQ(plan.ranks[1].vocab, (Range{80160, 128256}));
}

TEST(ShardPlan, HeadUnitGrowsUntilOColumnsAreABlockMultiple) {
  // tiny: 2 query heads of 64 per KV head = 128 O columns; a 256-block needs 2.
  const ShardPlan plan = make_shard_plan(preset("tiny"), 1, {}, {256, 256});
  EXPECT_EQ(plan.head_unit, 2);
  EXPECT_EQ(plan.ranks[0].kv_heads, (Range{0, 2}));
  EXPECT_EQ(make_shard_plan(preset("tiny"), 2, {}, {32, 32}).head_unit, 1);
}

TEST(ShardPlan, AlignmentFollowsTheWeightTypes) {
  const ShardAlignment k = ShardAlignment::for_types(TensorType::Q4_K, TensorType::Q6_K);
  EXPECT_EQ(k.o_block, 256);
  EXPECT_EQ(k.down_block, 256);
  const ShardAlignment q = ShardAlignment::for_types(TensorType::Q8_0, TensorType::Q4_0);
  EXPECT_EQ(q.o_block, 32);
  EXPECT_EQ(q.down_block, 32);
  const ShardAlignment f = ShardAlignment::for_types(TensorType::BF16, TensorType::F16);
  EXPECT_EQ(f.o_block, 1);
  EXPECT_EQ(f.down_block, 1);
}

// A file with only the O and down matrices of two layers, zero-filled.
std::filesystem::path write_o_and_down(const std::string& name, const HParams& hp,
                                       const std::vector<TensorType>& o, const std::vector<TensorType>& down) {
  gguf::GgufWriter w;
  auto zeros = [](std::span<uint8_t> out) { std::memset(out.data(), 0, out.size()); };
  for (size_t i = 0; i < o.size(); ++i) {
    w.add_tensor(fmt::format("blk.{}.attn_output.weight", i), {hp.n_head * hp.head_dim, hp.n_embd}, o[i], zeros);
    if (i < down.size()) w.add_tensor(fmt::format("blk.{}.ffn_down.weight", i), {hp.n_ff, hp.n_embd}, down[i], zeros);
  }
  const auto path = std::filesystem::temp_directory_path() /
                    (name + "." + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".gguf");
  w.write(path.string());
  return path;
}

TEST(ShardPlan, AlignmentOfAFileIsTheLargestBlockOverLayers) {
  const HParams hp = preset("tiny");  // 2 layers
  const auto mixed = write_o_and_down("shard_mixed", hp, {TensorType::Q8_0, TensorType::Q4_K},
                                      {TensorType::F16, TensorType::Q4_0});
  const ShardAlignment a = shard_alignment(gguf::GgufFile::open(mixed.string()), hp);
  EXPECT_EQ(a.o_block, 256);
  EXPECT_EQ(a.down_block, 32);
  const auto missing = write_o_and_down("shard_missing", hp, {TensorType::F32, TensorType::F32},
                                        {TensorType::F32});
  try {
    shard_alignment(gguf::GgufFile::open(missing.string()), hp);
    ADD_FAILURE() << "no error for a missing tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.1.ffn_down.weight"), std::string::npos) << e.what();
  }
  std::filesystem::remove(mixed);
  std::filesystem::remove(missing);
}

TEST(ShardPlan, ApportionByLargestRemainder) {
  EXPECT_EQ(apportion(10, std::vector<float>{1, 1, 1}), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(apportion(8, std::vector<float>{0.625f, 0.375f}), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(apportion(7, std::vector<float>{2, 1, 1}), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(apportion(5, std::vector<float>{3, 3, 4}), (std::vector<int64_t>{2, 1, 2}));
  EXPECT_EQ(apportion(3, std::vector<float>{10, 1}), (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(apportion(0, std::vector<float>{1, 2}), (std::vector<int64_t>{0, 0}));
  // Proportions need not sum to one; scaling them changes nothing.
  EXPECT_EQ(apportion(56, std::vector<float>{5, 3}), apportion(56, std::vector<float>{0.625f, 0.375f}));
}

TEST(ShardPlan, ApportionMatchesExactReferenceOnManyWeights) {
  for (int64_t n : {1, 2, 3, 7, 8, 56, 100, 1536, 49152, 151936}) {
    for (int ranks = 1; ranks <= 8; ++ranks) {
      for (const auto& w : weight_sets(ranks)) {
        const std::vector<float> ts(w.begin(), w.end());
        EXPECT_EQ(apportion(n, ts), reference_apportion(n, w)) << n << " units, " << ranks << " ranks";
      }
    }
  }
}

TEST(ShardPlan, ErrorsForImpossibleSplits) {
  const HParams tiny = preset("tiny");  // 4 heads, 2 KV heads of 64, n_ff 512
  expect_mentions(error_of(tiny, 3, {}, {1, 1}), {"3 ranks", "2 KV-head groups"});
  expect_mentions(error_of(tiny, 0, {}, {1, 1}), {"at least 1 rank", "got 0"});
  expect_mentions(error_of(tiny, 2, {1.0f, 2.0f, 3.0f}, {1, 1}), {"-ts has 3 values for 2 ranks"});
  expect_mentions(error_of(tiny, 2, {1.0f, 0.0f}, {1, 1}), {"-ts value 0", "entry 1"});
  expect_mentions(error_of(tiny, 2, {-0.5f, 1.0f}, {1, 1}), {"-ts value -0.5", "entry 0"});
  // 256-blocks make the two KV heads of tiny one unit.
  expect_mentions(error_of(tiny, 2, {}, {256, 256}),
                  {"2 ranks", "only 1 aligned units of 2 KV heads", "O block size 256"});
  // A 10:1 split of 2 KV heads rounds rank 1 to nothing.
  expect_mentions(error_of(tiny, 2, {10.0f, 1.0f}, {1, 1}),
                  {"rank 1 of 2 gets no attention heads", "proportion 1", "total 11", "0 of 2 units"});
  // O of smollm-135m has 576 columns: no 256-block type fits.
  expect_mentions(error_of(preset("smollm-135m"), 1, {}, {256, 32}),
                  {"576 columns", "block size 256", "3 KV heads"});
  HParams odd_ff = tiny;
  odd_ff.n_ff = 320;  // 10 blocks of 32, not a multiple of 256
  expect_mentions(error_of(odd_ff, 2, {}, {32, 256}), {"n_ff 320", "block size 256"});
  expect_mentions(error_of(odd_ff, 2, {}, {1, 320}), {"2 ranks", "n_ff 320", "only 1 aligned units"});
  HParams bad_group = tiny;
  bad_group.n_head_kv = 3;
  expect_mentions(error_of(bad_group, 1, {}, {1, 1}), {"n_head 4", "n_head_kv 3"});
  HParams small_vocab = shape(8, 8, 64, 512, 5);
  expect_mentions(error_of(small_vocab, 6, {}, {1, 1}), {"6 ranks", "only 5 rows"});
}

}  // namespace shard_plan_test
}  // namespace cohort::model
