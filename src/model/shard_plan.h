// How a model is split over tensor-parallel ranks (`-sm tensor`): which
// attention heads, FFN columns and vocabulary rows each rank owns.
//
// The plan is plain data, computed once from the hyper-parameters, the rank
// count and the `-ts` proportions, before any weight is bound. Every unit of
// work is owned by exactly one rank, and ranks own contiguous ranges in rank
// order (rank 0 first), so that the concatenation of the ranks' ranges is the
// whole dimension:
//
// - attention: whole KV-head groups. A rank owns KV heads [a, b) and the query
//   heads of those groups, [a * group, b * group) with group = n_head /
//   n_head_kv. Q/K/V are split by rows, O by columns (its input).
// - FFN: columns of n_ff. gate/up are split by rows, down by columns.
// - vocabulary: rows of the output head (logits are gathered after it).
//
// O and down are split along their input dimension, so a rank's slice of each
// row starts inside a quantized row; it must start on a block boundary of
// the weight's type (32 elements for Q8_0/Q4_0/Q4_1, 256 for K-quants, 1 for
// F32/F16/BF16). The split therefore works in units: the fewest whole
// KV-head groups whose O columns are a block multiple, and a block of FFN
// columns. `-ts` proportions round to whole units by largest remainder.
//
// Thread safety: pure functions; a plan is immutable after it is made.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/tensor_type.h"
#include "model/hparams.h"

namespace cohort::model {

// Half-open range [begin, end) of indices along one dimension.
struct Range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const Range&) const = default;
};

// Elements that the first input column of a column shard must be a multiple
// of, for the two matrices split by columns.
struct ShardAlignment {
  int64_t o_block = 1;     // attn_output, input dimension n_head * head_dim
  int64_t down_block = 1;  // ffn_down, input dimension n_ff

  // The block sizes of the two weights' types.
  static ShardAlignment for_types(gguf::TensorType o, gguf::TensorType down);
};

// The alignment a model file needs: the least common multiple of the block
// sizes of every layer's attn_output and ffn_down weights (files may mix
// types per layer, e.g. Q4_K_M). Throws cohort::Error naming a missing tensor.
ShardAlignment shard_alignment(const gguf::GgufFile& file, const HParams& hp);

// What one rank owns.
struct RankShard {
  Range kv_heads;  // KV heads; K/V rows [begin * head_dim, end * head_dim)
  Range heads;     // query heads of those KV heads' groups
  Range ffn;       // FFN columns of n_ff
  Range vocab;     // vocabulary rows of the output head
};

struct ShardPlan {
  std::vector<RankShard> ranks;  // [n_ranks], in rank order
  int64_t head_unit = 1;         // KV heads per indivisible attention unit
  int64_t ffn_unit = 1;          // FFN columns per indivisible FFN unit

  int n_ranks() const { return static_cast<int>(ranks.size()); }
};

// Splits a model over n_ranks. `split` holds one positive proportion per rank
// (`-ts`), or is empty for an even split; proportions need not sum to 1.
// Throws cohort::Error naming the numbers when the split is impossible: no
// ranks, a `-ts` of the wrong length or with a value that is not positive and
// finite, n_head not a multiple of n_head_kv, more ranks than KV-head groups
// (or than aligned attention units), head or FFN dimensions that do not
// divide into aligned units, or a rank whose share rounds to zero units.
ShardPlan make_shard_plan(const HParams& hp, int n_ranks, std::span<const float> split,
                          const ShardAlignment& alignment);

// The sizes rank `s` computes with: hp with n_head, n_head_kv, n_ff and
// n_vocab replaced by the sizes of its shard.
HParams rank_hparams(const HParams& hp, const RankShard& s);

// Divides n_units whole units among proportions by largest remainder: each
// rank gets floor(n_units * p / sum p) units, and the units left over go one
// each to the ranks with the largest fractional parts (the lower rank first
// on a tie). The result sums to n_units; entries may be zero.
// REQUIRES: split non-empty, every entry positive and finite, n_units >= 0.
std::vector<int64_t> apportion(int64_t n_units, std::span<const float> split);

}  // namespace cohort::model
