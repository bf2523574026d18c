// The pool of KV-cache blocks: reference counts, the free list, and the
// prefix cache (content hash -> block) with LRU eviction.
//
// A block holds the keys and values of `block_size` consecutive tokens of one
// sequence. This class only does the bookkeeping; it owns no K/V memory (see
// kv/kv_cache.h for the CPU storage), so the same pool serves any device.
//
// Every block is in exactly one of three states:
//   free    ref_count == 0, not kept       on the free list
//   cached  ref_count == 0, kept           on the LRU list
//   used    ref_count  > 0                 (kept or not)
// A kept block is registered with its contents for reuse: a full one under
// its hash (once full and its K/V written, BlockManager::commit), or a partly
// filled one with its first rows' tokens (register_partial, when its
// sequence is freed), which is never shared, only copied from. A cached block
// keeps its contents until acquire() evicts it: free blocks are handed out
// first, then cached blocks, least recently released first (as vLLM and
// nano-vllm do).
//
// Hashes chain: hash(block i) = H(hash(block i-1), tokens of block i), with
// kRootHash before the first block, so one hash names a whole prefix. A lookup
// also compares the stored parent hash and token ids, so a false hit needs a
// 64-bit collision of two different prefixes' parent hashes.
//
// Thread safety: none; the owner (one scheduler thread) serializes calls.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace cohort::kv {

using BlockId = int32_t;
using BlockHash = uint64_t;

inline constexpr BlockId kNoBlock = -1;
inline constexpr BlockHash kRootHash = 0;
inline constexpr int kDefaultBlockSize = 16;  // tokens per block

// H(parent, tokens): the chained content hash of one full block.
BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens);

class BlockPool {
 public:
  // REQUIRES: n_blocks >= 0, block_size >= 1 (else cohort::Error).
  BlockPool(int n_blocks, int block_size);

  int n_blocks() const { return static_cast<int>(blocks_.size()); }
  int block_size() const { return block_size_; }
  // Blocks acquire() can hand out: free plus cached.
  int n_free_blocks() const { return static_cast<int>(free_.size()) + n_cached_; }
  // Blocks with ref_count 0 that still hold a reusable prefix.
  int n_cached_blocks() const { return n_cached_; }

  int ref_count(BlockId b) const { return blocks_[b].ref_count; }
  bool is_hashed(BlockId b) const { return blocks_[b].hashed; }
  // Hashed, or a registered partial block.
  bool is_kept(BlockId b) const { return blocks_[b].hashed || blocks_[b].partial > 0; }

  // Takes a free block, or evicts the least recently released cached block
  // (forgetting its hash). The result has ref_count 1 and no hash.
  // Throws cohort::Error when n_free_blocks() == 0.
  BlockId acquire();

  // ref_count++; a cached block leaves the LRU list (prefix reuse, or a
  // partial block held while a sequence copies from it).
  // REQUIRES: b is used or cached.
  void ref(BlockId b);
  // ref_count--; at zero the block becomes cached if kept, else free.
  // REQUIRES: ref_count(b) > 0.
  void unref(BlockId b);

  // The block whose contents are `tokens` after the prefix named `parent`, or
  // kNoBlock. REQUIRES: tokens.size() == block_size().
  BlockId lookup(BlockHash parent, std::span<const int32_t> tokens) const;

  // Records that used block `b` is full and holds `tokens` after the prefix
  // `parent`, and returns its hash. If another block already holds that
  // content, `b` stays unhashed (it is freed, not cached, when released).
  // REQUIRES: ref_count(b) > 0, !is_hashed(b), tokens.size() == block_size().
  BlockHash register_full(BlockId b, BlockHash parent, std::span<const int32_t> tokens);

  // Records that used block `b`, about to be released by the sequence that
  // wrote it, holds `tokens` (fewer than block_size) in its first rows after
  // the prefix `parent`, so that a later prompt may copy them.
  // REQUIRES: ref_count(b) > 0, b not kept, 1 <= tokens.size() < block_size().
  void register_partial(BlockId b, BlockHash parent, std::span<const int32_t> tokens);
  // Forgets what used block `b` holds (its contents are about to change): it
  // is no longer found by lookups and is freed, not cached, when released.
  // REQUIRES: ref_count(b) > 0.
  void unregister(BlockId b);

  // The kept block after the prefix `parent` whose leading tokens agree
  // longest with `tokens` (full or partial), and how many agree; {kNoBlock,
  // 0} if none does.
  struct PrefixRows {
    BlockId block = kNoBlock;
    int n_rows = 0;
  };
  PrefixRows longest_rows(BlockHash parent, std::span<const int32_t> tokens) const;

  // Checks every internal invariant in O(n_blocks); returns "" or a
  // description of the first violation. For tests and debugging.
  std::string audit() const;

 private:
  struct Block {
    int ref_count = 0;
    bool hashed = false;
    int partial = 0;  // kept rows of a partly filled block (not hashed); 0 otherwise
    BlockHash hash = 0;
    BlockHash parent = 0;
    BlockId lru_prev = kNoBlock;  // LRU links, valid while cached
    BlockId lru_next = kNoBlock;
  };

  std::span<const int32_t> tokens_of(BlockId b) const;  // its kept tokens
  void lru_push_back(BlockId b);
  void lru_remove(BlockId b);
  void forget(BlockId b);
  std::string audit_lists() const;

  int block_size_;
  std::vector<Block> blocks_;              // [n_blocks]
  std::vector<int32_t> tokens_;            // [n_blocks, block_size], valid while kept
  std::vector<BlockId> free_;              // stack; back() is handed out next
  BlockId lru_head_ = kNoBlock;            // least recently released cached block
  BlockId lru_tail_ = kNoBlock;            // most recently released
  int n_cached_ = 0;
  std::unordered_map<BlockHash, BlockId> by_hash_;  // hashed blocks (used or cached)
  std::unordered_multimap<BlockHash, BlockId> by_parent_;  // kept blocks by their parent's hash
};

}  // namespace cohort::kv
