// Weight shards: the ranges each rank keeps of every matrix of a layer, and
// the byte arithmetic of row and column views, checked against the full
// tensor (column shards dequantize to the same values as the full row's
// slice; partial products of O summed over ranks give the full product).
#include "model/weight_shard.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "model/presets.h"
#include "quant/quant.h"

namespace cohort::model {
namespace weight_shard_test {

using gguf::TensorType;

TEST(WeightShard, LayerRangesFollowThePlan) {
  const HParams hp = preset("llama3-8b");  // 32 heads, 8 KV heads of 128, n_ff 14336
  const std::vector<float> ts = {0.625f, 0.375f};
  const ShardPlan plan = make_shard_plan(hp, 2, ts, {256, 256});
  const LayerShard l = layer_shard(plan, hp, 1);  // KV heads [5, 8), query heads [20, 32)
  EXPECT_EQ(l.q.rows, (Range{20 * 128, 32 * 128}));
  EXPECT_EQ(l.q.cols, (Range{0, 4096}));
  EXPECT_EQ(l.k.rows, (Range{5 * 128, 8 * 128}));
  EXPECT_EQ(l.v.rows, (Range{5 * 128, 8 * 128}));
  EXPECT_EQ(l.k.n_rows, 1024);
  EXPECT_EQ(l.o.rows, (Range{0, 4096}));
  EXPECT_EQ(l.o.cols, (Range{20 * 128, 32 * 128}));
  EXPECT_EQ(l.o.n_cols, 4096);
  EXPECT_EQ(l.gate.rows, (Range{8960, 14336}));
  EXPECT_EQ(l.up.rows, (Range{8960, 14336}));
  EXPECT_EQ(l.down.cols, (Range{8960, 14336}));
  EXPECT_EQ(l.down.n_cols, 14336);
  EXPECT_EQ(l.q_bias.range, (Range{20 * 128, 32 * 128}));
  EXPECT_EQ(l.k_bias.range, (Range{5 * 128, 8 * 128}));
  EXPECT_EQ(l.v_bias.n, 1024);
}

TEST(WeightShard, HeadSplitsOutputRowsAndKeepsTheWholeEmbedding) {
  HParams hp = preset("smollm-135m");  // tied embeddings, vocabulary 49152
  const ShardPlan plan = make_shard_plan(hp, 3, {}, {1, 1});
  for (int r = 0; r < 3; ++r) {
    const HeadShard h = head_shard(plan, hp, r);
    EXPECT_EQ(h.output_name, "token_embd.weight");
    EXPECT_EQ(h.output.rows, (Range{r * 16384, (r + 1) * 16384}));
    EXPECT_EQ(h.output.cols, (Range{0, 576}));
    EXPECT_TRUE(h.embedding.whole());
  }
  hp.tied_embeddings = false;
  EXPECT_EQ(head_shard(plan, hp, 0).output_name, "output.weight");
}

TEST(WeightShard, ByteOffsetsOfRowAndColumnShards) {
  const MatrixShard col{4, 512, {0, 4}, {256, 512}};
  EXPECT_EQ(col.offset_bytes(TensorType::Q4_K), 144u);          // one block of 144 bytes
  EXPECT_EQ(col.row_stride_bytes(TensorType::Q4_K), 288u);
  EXPECT_EQ(col.shard_row_bytes(TensorType::Q4_K), 144u);
  EXPECT_EQ(col.offset_bytes(TensorType::Q8_0), 8u * 34u);      // 8 blocks of 34 bytes
  EXPECT_EQ(col.offset_bytes(TensorType::F16), 512u);
  const MatrixShard row{10, 64, {3, 7}, {0, 64}};
  EXPECT_EQ(row.offset_bytes(TensorType::Q8_0), 3u * 2u * 34u);
  EXPECT_EQ(row.offset_bytes(TensorType::F32), 3u * 64u * 4u);
  EXPECT_TRUE(row.aligned_for(TensorType::Q8_0));
  EXPECT_FALSE((MatrixShard{4, 512, {0, 4}, {32, 512}}).aligned_for(TensorType::Q4_K));
  EXPECT_TRUE((MatrixShard{4, 512, {0, 4}, {32, 512}}).aligned_for(TensorType::Q4_0));
}

std::vector<float> random_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// A [n_rows, n_cols] matrix quantized row by row.
std::vector<uint8_t> quantized(TensorType type, const std::vector<float>& m, int64_t n_rows, int64_t n_cols) {
  const size_t rb = gguf::row_bytes(type, n_cols);
  std::vector<uint8_t> bytes(rb * static_cast<size_t>(n_rows));
  for (int64_t r = 0; r < n_rows; ++r) {
    quant::quantize(type, m.data() + r * n_cols, bytes.data() + static_cast<size_t>(r) * rb, n_cols);
  }
  return bytes;
}

// Every rank's O and down column shards, read through offset and stride,
// dequantize to exactly the columns of the full rows, for each block size.
TEST(WeightShard, ColumnShardsDequantizeToTheFullRowsColumns) {
  const HParams hp = preset("tiny");  // O [256, 256], down [256, 512]
  for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0,
                          TensorType::Q4_0, TensorType::Q4_1, TensorType::Q4_K, TensorType::Q5_K,
                          TensorType::Q6_K}) {
    SCOPED_TRACE(gguf::type_name(type));
    const int n_ranks = gguf::traits(type).block_size == 256 ? 1 : 2;  // 256-blocks: tiny's O is one unit
    const ShardAlignment a = ShardAlignment::for_types(type, type);
    const ShardPlan plan = make_shard_plan(hp, n_ranks, {}, a);
    for (int r = 0; r < n_ranks; ++r) {
      const LayerShard l = layer_shard(plan, hp, r);
      for (const MatrixShard* m : {&l.o, &l.down}) {
        ASSERT_TRUE(m->aligned_for(type));
        const std::vector<float> values = random_values(m->n_rows * m->n_cols, 7u + static_cast<uint32_t>(r));
        const std::vector<uint8_t> bytes = quantized(type, values, m->n_rows, m->n_cols);
        std::vector<float> full(static_cast<size_t>(m->n_cols)), part(static_cast<size_t>(m->cols.size()));
        for (int64_t row = m->rows.begin; row < m->rows.end; ++row) {
          const uint8_t* full_row = bytes.data() + static_cast<size_t>(row) * m->row_stride_bytes(type);
          quant::dequantize(type, full_row, full.data(), m->n_cols);
          const uint8_t* shard_row = bytes.data() + m->offset_bytes(type) +
                                     static_cast<size_t>(row - m->rows.begin) * m->row_stride_bytes(type);
          quant::dequantize(type, shard_row, part.data(), m->cols.size());
          ASSERT_EQ(std::memcmp(part.data(), full.data() + m->cols.begin, part.size() * sizeof(float)), 0)
              << "row " << row;
        }
      }
    }
  }
}

// y = B (A x) computed from a rank's row shard of A and column shard of B,
// both read through their byte offsets and strides as F32 views.
std::vector<double> partial_product(const MatrixShard& a, const std::vector<float>& a_full, const MatrixShard& b,
                                    const std::vector<float>& b_full, const std::vector<float>& x) {
  const auto* a_bytes = reinterpret_cast<const uint8_t*>(a_full.data());
  const auto* b_bytes = reinterpret_cast<const uint8_t*>(b_full.data());
  std::vector<double> mid(static_cast<size_t>(a.rows.size()));  // [rows of this rank]
  for (int64_t i = 0; i < a.rows.size(); ++i) {
    const auto* row = reinterpret_cast<const float*>(a_bytes + a.offset_bytes(TensorType::F32) +
                                                     static_cast<size_t>(i) * a.row_stride_bytes(TensorType::F32));
    for (int64_t j = 0; j < a.n_cols; ++j) mid[static_cast<size_t>(i)] += double{row[j]} * x[static_cast<size_t>(j)];
  }
  std::vector<double> y(static_cast<size_t>(b.n_rows));  // [n_embd]
  for (int64_t i = 0; i < b.n_rows; ++i) {
    const auto* row = reinterpret_cast<const float*>(b_bytes + b.offset_bytes(TensorType::F32) +
                                                     static_cast<size_t>(i) * b.row_stride_bytes(TensorType::F32));
    for (int64_t j = 0; j < b.cols.size(); ++j) y[static_cast<size_t>(i)] += row[j] * mid[static_cast<size_t>(j)];
  }
  return y;
}

// Row shards of Q (and gate) with column shards of O (and down): the ranks'
// partial products, summed, equal the full product up to reassociation in F64.
TEST(WeightShard, PartialProductsSumToTheFullProduct) {
  HParams hp = preset("tiny");
  hp.n_head = 8;
  hp.n_head_kv = 4;
  hp.head_dim = 16;
  hp.n_embd = 64;
  hp.n_ff = 96;
  const std::vector<float> ts = {2.0f, 1.0f, 1.0f};
  const ShardPlan plan = make_shard_plan(hp, 3, ts, {1, 1});
  const LayerShard whole = layer_shard(make_shard_plan(hp, 1, {}, {1, 1}), hp, 0);
  const std::vector<float> x = random_values(hp.n_embd, 1);
  const std::vector<float> q = random_values(whole.q.n_rows * whole.q.n_cols, 2);
  const std::vector<float> o = random_values(whole.o.n_rows * whole.o.n_cols, 3);
  const std::vector<float> gate = random_values(whole.gate.n_rows * whole.gate.n_cols, 4);
  const std::vector<float> down = random_values(whole.down.n_rows * whole.down.n_cols, 5);
  const std::vector<double> attn_ref = partial_product(whole.q, q, whole.o, o, x);
  const std::vector<double> ffn_ref = partial_product(whole.gate, gate, whole.down, down, x);
  std::vector<double> attn(attn_ref.size()), ffn(ffn_ref.size());
  for (int r = 0; r < 3; ++r) {
    const LayerShard l = layer_shard(plan, hp, r);
    const std::vector<double> pa = partial_product(l.q, q, l.o, o, x);
    const std::vector<double> pf = partial_product(l.gate, gate, l.down, down, x);
    for (size_t i = 0; i < attn.size(); ++i) attn[i] += pa[i], ffn[i] += pf[i];
  }
  for (size_t i = 0; i < attn.size(); ++i) {
    EXPECT_NEAR(attn[i], attn_ref[i], 1e-12 * (1.0 + std::abs(attn_ref[i]))) << i;
    EXPECT_NEAR(ffn[i], ffn_ref[i], 1e-12 * (1.0 + std::abs(ffn_ref[i]))) << i;
  }
}

}  // namespace weight_shard_test
}  // namespace cohort::model
