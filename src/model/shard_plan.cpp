#include "model/shard_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "common/error.h"

namespace cohort::model {
namespace {

int64_t block_of(gguf::TensorType type) { return gguf::traits(type).block_size; }

int64_t matrix_block(const gguf::GgufFile& file, const std::string& name) {
  const gguf::TensorInfo* info = file.find_tensor(name);
  if (info == nullptr) fail("{}: tensor '{}' is missing", file.name(), name);
  return block_of(info->type);
}

void check_split(int n_ranks, std::span<const float> split) {
  if (n_ranks < 1) fail("tensor split needs at least 1 rank, got {}", n_ranks);
  if (!split.empty() && std::ssize(split) != n_ranks) {
    fail("-ts has {} values for {} ranks", split.size(), n_ranks);
  }
  for (size_t i = 0; i < split.size(); ++i) {
    if (!std::isfinite(split[i]) || split[i] <= 0.0f) {
      fail("-ts value {} (entry {}) must be a positive finite number", split[i], i);
    }
  }
}

// The fewest KV heads whose O columns (group * head_dim per KV head) are a
// multiple of the O block: block / gcd(block, group * head_dim).
int64_t head_unit_of(const HParams& hp, int64_t o_block) {
  const int64_t group = hp.n_head / hp.n_head_kv;
  const int64_t cols_per_kv_head = group * hp.head_dim;
  const int64_t unit = o_block / std::gcd(o_block, cols_per_kv_head);
  if (hp.n_head_kv % unit != 0) {
    // Equivalent to O's rows not being a whole number of blocks: no weight of
    // that type can have this shape.
    fail("O projection rows of {} columns (n_head {} x head_dim {}) are not a multiple of its block "
         "size {}: {} KV heads do not split into aligned units of {} KV heads",
         hp.n_head * hp.head_dim, hp.n_head, hp.head_dim, o_block, hp.n_head_kv, unit);
  }
  return unit;
}

void check_heads(const HParams& hp, int n_ranks) {
  if (hp.n_head < 1 || hp.n_head_kv < 1 || hp.n_head % hp.n_head_kv != 0) {
    fail("n_head {} is not a positive multiple of n_head_kv {}", hp.n_head, hp.n_head_kv);
  }
  if (n_ranks > hp.n_head_kv) {
    fail("{} ranks but the model has only {} KV-head groups (n_head_kv = {}, n_head = {})", n_ranks,
         hp.n_head_kv, hp.n_head_kv, hp.n_head);
  }
}

void check_head_units(const HParams& hp, int n_ranks, int64_t head_unit, int64_t o_block) {
  const int64_t n_units = hp.n_head_kv / head_unit;
  if (n_ranks > n_units) {
    fail("{} ranks but attention splits into only {} aligned units of {} KV heads (n_head_kv = {}, "
         "O block size {})",
         n_ranks, n_units, head_unit, hp.n_head_kv, o_block);
  }
}

void check_ffn(const HParams& hp, int n_ranks, int64_t down_block) {
  if (hp.n_ff < 1 || hp.n_ff % down_block != 0) {
    fail("n_ff {} is not a positive multiple of the down projection's block size {}", hp.n_ff,
         down_block);
  }
  if (n_ranks > hp.n_ff / down_block) {
    fail("{} ranks but n_ff {} splits into only {} aligned units of {} columns", n_ranks, hp.n_ff,
         hp.n_ff / down_block, down_block);
  }
}

// Ranges of n_units units of `unit` elements each, one per rank, in order.
// Throws if a rank's share rounds to zero.
std::vector<Range> split_units(const char* what, int64_t n_units, int64_t unit,
                               std::span<const float> split) {
  const std::vector<int64_t> counts = apportion(n_units, split);
  std::vector<Range> ranges;
  int64_t at = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] == 0) {
      fail("rank {} of {} gets no {}: -ts proportion {} of a total {} rounds to 0 of {} units of {}",
           r, counts.size(), what, split[r], std::accumulate(split.begin(), split.end(), 0.0), n_units,
           unit);
    }
    ranges.push_back({at * unit, (at + counts[r]) * unit});
    at += counts[r];
  }
  return ranges;
}

}  // namespace

ShardAlignment ShardAlignment::for_types(gguf::TensorType o, gguf::TensorType down) {
  return {block_of(o), block_of(down)};
}

ShardAlignment shard_alignment(const gguf::GgufFile& file, const HParams& hp) {
  ShardAlignment a;
  for (int64_t i = 0; i < hp.n_layer; ++i) {
    a.o_block = std::lcm(a.o_block, matrix_block(file, fmt::format("blk.{}.attn_output.weight", i)));
    a.down_block = std::lcm(a.down_block, matrix_block(file, fmt::format("blk.{}.ffn_down.weight", i)));
  }
  return a;
}

std::vector<int64_t> apportion(int64_t n_units, std::span<const float> split) {
  double total = 0.0;
  for (float p : split) total += p;
  std::vector<int64_t> counts(split.size());
  std::vector<double> remainder(split.size());
  int64_t given = 0;
  for (size_t r = 0; r < split.size(); ++r) {
    const double quota = static_cast<double>(n_units) * split[r] / total;
    counts[r] = std::min(n_units, static_cast<int64_t>(std::floor(quota)));
    remainder[r] = quota - static_cast<double>(counts[r]);
    given += counts[r];
  }
  // Largest fractional part first; stable, so the lower rank wins a tie.
  std::vector<size_t> order(split.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  // Exact arithmetic leaves fewer than split.size() units over; the modulo
  // and the take-back below only cover quotas that rounding in double pushed
  // across an integer.
  for (size_t i = 0; given < n_units; i = (i + 1) % order.size(), ++given) ++counts[order[i]];
  for (auto it = order.rbegin(); given > n_units && it != order.rend(); ++it) {
    if (counts[*it] > 0) --counts[*it], --given;
  }
  return counts;
}

HParams rank_hparams(const HParams& hp, const RankShard& s) {
  HParams local = hp;
  local.n_head = s.heads.size();
  local.n_head_kv = s.kv_heads.size();
  local.n_ff = s.ffn.size();
  local.n_vocab = s.vocab.size();
  return local;
}

ShardPlan make_shard_plan(const HParams& hp, int n_ranks, std::span<const float> split,
                          const ShardAlignment& alignment) {
  check_split(n_ranks, split);
  const std::vector<float> even(static_cast<size_t>(n_ranks), 1.0f);
  const std::span<const float> p = split.empty() ? std::span<const float>(even) : split;
  if (alignment.o_block < 1 || alignment.down_block < 1) {
    fail("block sizes must be positive, got O {} and down {}", alignment.o_block, alignment.down_block);
  }
  check_heads(hp, n_ranks);
  const int64_t head_unit = head_unit_of(hp, alignment.o_block);
  check_head_units(hp, n_ranks, head_unit, alignment.o_block);
  check_ffn(hp, n_ranks, alignment.down_block);
  if (n_ranks > hp.n_vocab) fail("{} ranks but the vocabulary has only {} rows", n_ranks, hp.n_vocab);

  const std::vector<Range> kv = split_units("attention heads", hp.n_head_kv / head_unit, head_unit, p);
  const std::vector<Range> ffn =
      split_units("FFN columns", hp.n_ff / alignment.down_block, alignment.down_block, p);
  const std::vector<Range> vocab = split_units("vocabulary rows", hp.n_vocab, 1, p);
  const int64_t group = hp.n_head / hp.n_head_kv;
  ShardPlan plan;
  plan.head_unit = head_unit;
  plan.ffn_unit = alignment.down_block;
  for (size_t r = 0; r < static_cast<size_t>(n_ranks); ++r) {
    plan.ranks.push_back({kv[r], {kv[r].begin * group, kv[r].end * group}, ffn[r], vocab[r]});
  }
  return plan;
}

}  // namespace cohort::model
