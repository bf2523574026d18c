#include "kv/block_pool.h"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

#include "common/error.h"

namespace cohort::kv {
namespace {

// splitmix64's finalizer: a cheap bijective mix with full avalanche.
// ref: Steele, Lea, Flood, "Fast splittable pseudorandom number generators" (2014).
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens) {
  uint64_t h = mix64(parent + 0x9e3779b97f4a7c15ULL);
  for (int32_t t : tokens) h = mix64(h ^ static_cast<uint32_t>(t));
  h = mix64(h ^ tokens.size());
  // kRootHash names the empty prefix; no block may hash to it.
  return h == kRootHash ? 1 : h;
}

BlockPool::BlockPool(int n_blocks, int block_size) : block_size_(block_size) {
  if (n_blocks < 0) fail("KV cache: n_blocks = {} must be >= 0", n_blocks);
  if (block_size < 1) fail("KV cache: block_size = {} must be >= 1", block_size);
  blocks_.resize(n_blocks);
  tokens_.resize(static_cast<size_t>(n_blocks) * static_cast<size_t>(block_size));
  free_.reserve(n_blocks);
  for (BlockId b = n_blocks - 1; b >= 0; --b) free_.push_back(b);  // block 0 first
  by_hash_.reserve(n_blocks);
}

std::span<const int32_t> BlockPool::tokens_of(BlockId b) const {
  const int n = blocks_[b].hashed ? block_size_ : blocks_[b].partial;
  return {tokens_.data() + static_cast<size_t>(b) * block_size_, static_cast<size_t>(n)};
}

BlockId BlockPool::acquire() {
  BlockId b = kNoBlock;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (lru_head_ != kNoBlock) {
    b = lru_head_;
    lru_remove(b);
    forget(b);
  } else {
    fail("out of KV cache blocks: all {} blocks of {} tokens are in use", n_blocks(),
         block_size_);
  }
  blocks_[b].ref_count = 1;
  return b;
}

void BlockPool::ref(BlockId b) {
  Block& blk = blocks_[b];
  if (blk.ref_count == 0) {
    assert(is_kept(b) && "only cached blocks can be revived");
    lru_remove(b);
  }
  ++blk.ref_count;
}

void BlockPool::unref(BlockId b) {
  Block& blk = blocks_[b];
  assert(blk.ref_count > 0);
  if (--blk.ref_count > 0) return;
  if (is_kept(b)) {
    lru_push_back(b);
  } else {
    free_.push_back(b);
  }
}

BlockId BlockPool::lookup(BlockHash parent, std::span<const int32_t> tokens) const {
  assert(static_cast<int>(tokens.size()) == block_size_);
  auto it = by_hash_.find(hash_block(parent, tokens));
  if (it == by_hash_.end()) return kNoBlock;
  const Block& blk = blocks_[it->second];
  if (blk.parent != parent) return kNoBlock;
  std::span<const int32_t> stored = tokens_of(it->second);
  if (!std::equal(stored.begin(), stored.end(), tokens.begin())) return kNoBlock;
  return it->second;
}

BlockHash BlockPool::register_full(BlockId b, BlockHash parent,
                                   std::span<const int32_t> tokens) {
  assert(static_cast<int>(tokens.size()) == block_size_);
  Block& blk = blocks_[b];
  assert(blk.ref_count > 0 && !blk.hashed);
  const BlockHash h = hash_block(parent, tokens);
  if (!by_hash_.emplace(h, b).second) return h;  // the content is cached elsewhere
  blk.hashed = true;
  blk.hash = h;
  blk.parent = parent;
  by_parent_.emplace(parent, b);
  std::copy(tokens.begin(), tokens.end(),
            tokens_.begin() + static_cast<ptrdiff_t>(b) * block_size_);
  return h;
}

void BlockPool::register_partial(BlockId b, BlockHash parent, std::span<const int32_t> tokens) {
  Block& blk = blocks_[b];
  assert(blk.ref_count > 0 && !is_kept(b));
  assert(!tokens.empty() && static_cast<int>(tokens.size()) < block_size_);
  blk.partial = static_cast<int>(tokens.size());
  blk.parent = parent;
  by_parent_.emplace(parent, b);
  std::copy(tokens.begin(), tokens.end(),
            tokens_.begin() + static_cast<ptrdiff_t>(b) * block_size_);
}

BlockPool::PrefixRows BlockPool::longest_rows(BlockHash parent, std::span<const int32_t> tokens) const {
  PrefixRows best;
  const auto [first, last] = by_parent_.equal_range(parent);
  for (auto it = first; it != last; ++it) {
    const std::span<const int32_t> kept_tokens = tokens_of(it->second);
    const size_t n = std::min(kept_tokens.size(), tokens.size());
    const auto agree = static_cast<int>(
        std::mismatch(kept_tokens.begin(), kept_tokens.begin() + static_cast<ptrdiff_t>(n), tokens.begin()).first -
        kept_tokens.begin());
    if (agree > best.n_rows) best = {it->second, agree};
  }
  return best;
}

void BlockPool::lru_push_back(BlockId b) {
  Block& blk = blocks_[b];
  blk.lru_prev = lru_tail_;
  blk.lru_next = kNoBlock;
  if (lru_tail_ != kNoBlock) {
    blocks_[lru_tail_].lru_next = b;
  } else {
    lru_head_ = b;
  }
  lru_tail_ = b;
  ++n_cached_;
}

void BlockPool::lru_remove(BlockId b) {
  Block& blk = blocks_[b];
  if (blk.lru_prev != kNoBlock) {
    blocks_[blk.lru_prev].lru_next = blk.lru_next;
  } else {
    lru_head_ = blk.lru_next;
  }
  if (blk.lru_next != kNoBlock) {
    blocks_[blk.lru_next].lru_prev = blk.lru_prev;
  } else {
    lru_tail_ = blk.lru_prev;
  }
  blk.lru_prev = blk.lru_next = kNoBlock;
  --n_cached_;
}

void BlockPool::unregister(BlockId b) {
  assert(blocks_[b].ref_count > 0);
  forget(b);
}

void BlockPool::forget(BlockId b) {
  Block& blk = blocks_[b];
  if (blk.hashed) by_hash_.erase(blk.hash);
  const auto [first, last] = by_parent_.equal_range(blk.parent);
  for (auto it = first; it != last; ++it) {
    if (it->second != b) continue;
    by_parent_.erase(it);
    break;
  }
  blk.hashed = false;
  blk.partial = 0;
  blk.hash = 0;
  blk.parent = 0;
}

std::string BlockPool::audit_lists() const {
  std::vector<int> seen(blocks_.size(), 0);
  for (BlockId b : free_) {
    if (b < 0 || b >= n_blocks()) return fmt::format("free list holds bad id {}", b);
    if (blocks_[b].ref_count != 0 || is_kept(b))
      return fmt::format("free block {} has ref_count {} or is kept", b, blocks_[b].ref_count);
    ++seen[b];
  }
  int n_lru = 0;
  for (BlockId b = lru_head_, prev = kNoBlock; b != kNoBlock; prev = b, b = blocks_[b].lru_next) {
    if (blocks_[b].lru_prev != prev) return fmt::format("LRU back link of block {} is wrong", b);
    if (blocks_[b].ref_count != 0 || !is_kept(b))
      return fmt::format("cached block {} has ref_count {} or is not kept", b, blocks_[b].ref_count);
    if (++seen[b] > 1 || ++n_lru > n_blocks()) return fmt::format("block {} listed twice", b);
  }
  if (n_lru != n_cached_)
    return fmt::format("LRU holds {} blocks, the count says {}", n_lru, n_cached_);
  for (BlockId b = 0; b < n_blocks(); ++b) {
    const bool idle = blocks_[b].ref_count == 0;
    if (blocks_[b].ref_count < 0) return fmt::format("block {} has ref_count < 0", b);
    if (idle != (seen[b] == 1)) return fmt::format("block {} is lost or listed twice", b);
  }
  return "";
}

std::string BlockPool::audit() const {
  std::string why = audit_lists();
  if (!why.empty()) return why;
  size_t n_hashed = 0, n_kept = 0;
  for (BlockId b = 0; b < n_blocks(); ++b) {
    if (!is_kept(b)) continue;
    ++n_kept;
    const auto [first, last] = by_parent_.equal_range(blocks_[b].parent);
    if (std::count_if(first, last, [b](const auto& e) { return e.second == b; }) != 1)
      return fmt::format("kept block {} is not listed once under its parent", b);
    if (!blocks_[b].hashed) {
      if (blocks_[b].partial >= block_size_) return fmt::format("partial block {} holds a whole block", b);
      continue;
    }
    if (blocks_[b].partial != 0) return fmt::format("block {} is both hashed and partial", b);
    ++n_hashed;
    auto it = by_hash_.find(blocks_[b].hash);
    if (it == by_hash_.end() || it->second != b)
      return fmt::format("hashed block {} is missing from the hash map", b);
    if (hash_block(blocks_[b].parent, tokens_of(b)) != blocks_[b].hash)
      return fmt::format("block {} hash does not match its tokens", b);
  }
  if (n_hashed != by_hash_.size())
    return fmt::format("hash map holds {} entries for {} hashed blocks", by_hash_.size(), n_hashed);
  if (n_kept != by_parent_.size())
    return fmt::format("parent map holds {} entries for {} kept blocks", by_parent_.size(), n_kept);
  return "";
}

}  // namespace cohort::kv
