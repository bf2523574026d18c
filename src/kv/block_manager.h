// Per-sequence block tables over a BlockPool: allocate / append / commit /
// free, and reuse of cached prompt prefixes.
//
// A sequence (SeqId, chosen by the caller, e.g. a slot index) owns a block
// table: the ids of the blocks that hold its positions 0, 1, 2, ... in order,
// block_size positions per block. Two counters describe it:
//   n_tokens     positions that have room (allocate / append reserve them)
//   n_committed  positions whose K/V were written (commit, after the forward)
// with n_committed <= n_tokens <= block_table.size() * block_size.
//
// Prefix reuse: when a block of a sequence becomes full through commit(), it
// is registered in the pool under the chained hash of its token ids. A later
// allocate(seq, prompt) shares every leading full block of `prompt` that is
// registered (ref_count++), and reports those positions as already
// committed: the caller computes only the rest. At least the last prompt token
// is always left to compute (its logits are needed), so shared blocks are
// never written: every block past the committed full blocks is private to its
// sequence (ref_count 1).
//
// The block after the shared ones is reused by copy-on-write: the kept block
// (full, or the partly filled last block of a freed sequence, registered by
// free()) whose leading tokens agree longest with the prompt's next ones
// lends those rows: the new sequence's own block gets a copy of them
// (take_copies(), performed by the backend before the next step writes any
// KV row) and they count as committed. So a prompt sent twice computes one
// token the second time, as llama-server's slots do. The copy's source may
// be evicted and rewritten later, but only by a later step: the copy runs
// first.
//
// Context shift (shift()): a full sequence drops n_discard positions after
// its first n_keep and moves the rest down, as llama-server's context shift
// does. The moves (kv/block_copy.h RowMove) are written in place where the
// block is the sequence's own, into a fresh block where it is shared; a
// written block's registration is forgotten first. A shifted sequence's
// rows no longer hold a prompt prefix as a prefill computes it, so none of
// its blocks is registered for reuse afterwards.
//
// Running out of blocks is a normal condition: can_allocate / can_append say
// whether the act would succeed, and the acts throw cohort::Error with a
// message naming the sequence and the shortfall when it would not; a failed
// act changes nothing.
//
// Thread safety: none; one scheduler thread owns the manager. Ownership: the
// manager owns its BlockPool and the block tables; spans it returns stay
// valid until the next non-const call for that sequence.
#pragma once

#include <cassert>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/block_copy.h"
#include "kv/block_pool.h"

namespace cohort::kv {

using SeqId = int32_t;

// Where one token's K/V live: a block and the row inside it.
struct Slot {
  BlockId block = kNoBlock;
  int offset = 0;  // [0, block_size)

  // Row index in a cache viewed as [n_blocks * block_size, ...].
  int64_t index(int block_size) const { return int64_t{block} * block_size + offset; }
  // The slot of such a row index (index()'s inverse).
  static Slot at(int32_t index, int block_size) { return {index / block_size, index % block_size}; }
};

// The slot of position `pos` of a sequence whose block table is `table`.
// This is the whole paged layout: attention kernels do the same arithmetic.
// REQUIRES: 0 <= pos < table.size() * block_size.
inline Slot slot_of(std::span<const BlockId> table, int block_size, int pos) {
  assert(pos >= 0 && static_cast<size_t>(pos / block_size) < table.size());
  return Slot{table[static_cast<size_t>(pos / block_size)], pos % block_size};
}

class BlockManager {
 public:
  // REQUIRES: n_blocks >= 0, block_size >= 1 (else cohort::Error).
  explicit BlockManager(int n_blocks, int block_size = kDefaultBlockSize);

  int block_size() const { return pool_.block_size(); }
  int n_blocks() const { return pool_.n_blocks(); }
  int n_free_blocks() const { return pool_.n_free_blocks(); }    // includes cached
  int n_cached_blocks() const { return pool_.n_cached_blocks(); }
  int n_blocks_for(int64_t n_tokens) const;                       // ceil(n / block_size)

  // Leading tokens of `tokens` whose K/V are in registered blocks (a
  // multiple of block_size). Does not change LRU order.
  int match_prefix(std::span<const int32_t> tokens) const;

  // A new sequence with room for n_tokens positions, nothing reused.
  // can_allocate is false if `seq` exists or n_tokens < 0.
  bool can_allocate(SeqId seq, int n_tokens) const;
  void allocate(SeqId seq, int n_tokens);

  // A new sequence with room for prompt.size() positions, sharing the cached
  // blocks of the prompt's longest registered prefix and copying the rows
  // that agree from the best kept block after them (at most prompt.size() - 1
  // tokens in all). Returns the number of positions already committed: the
  // forward starts at that position.
  bool can_allocate(SeqId seq, std::span<const int32_t> prompt) const;
  int allocate(SeqId seq, std::span<const int32_t> prompt);

  // Room for n_new more positions at the end of `seq`.
  // can_append is false if `seq` is unknown or n_new < 0.
  bool can_append(SeqId seq, int n_new) const;
  void append(SeqId seq, int n_new);

  // Marks the next tokens.size() positions (from n_committed) as written,
  // with these token ids. Blocks that become full are registered for reuse.
  // Throws cohort::Error if that would pass n_tokens or `seq` is unknown.
  void commit(SeqId seq, std::span<const int32_t> tokens);

  // Releases the sequence's blocks (last block first, so that a prefix's
  // head outlives its tail in the LRU); a partly filled last block keeps its
  // committed rows for copy-on-write reuse. Throws cohort::Error if unknown.
  void free(SeqId seq);

  // The row copies that allocations since the last call asked for, in order,
  // moved into `out` (cleared first). The caller has the backend perform
  // them before the next step writes the KV cache.
  void take_copies(std::vector<BlockCopy>& out);

  // Drops positions [n_keep, n_keep + n_discard) of `seq` and moves the
  // positions after them down by n_discard; n_tokens and n_committed shrink
  // by n_discard. can_shift is false unless seq exists with every position
  // committed, n_keep >= 0, n_discard >= 1, n_keep + n_discard <= its
  // positions, and a free block is there for each shared block it writes.
  bool can_shift(SeqId seq, int n_keep, int n_discard) const;
  void shift(SeqId seq, int n_keep, int n_discard);
  // The row moves that shifts since the last call asked for, in order, and
  // the end of each round in `moves` (both cleared first). The caller has the
  // backend perform them before the copies of take_copies().
  void take_moves(std::vector<RowMove>& moves, std::vector<int32_t>& round_ends);

  bool contains(SeqId seq) const { return seqs_.count(seq) != 0; }
  int n_seqs() const { return static_cast<int>(seqs_.size()); }
  // REQUIRES (these four): contains(seq), checked by assert.
  int n_tokens(SeqId seq) const { return get(seq).n_tokens; }
  int n_committed(SeqId seq) const { return get(seq).n_committed; }
  std::span<const BlockId> block_table(SeqId seq) const { return get(seq).blocks; }
  // REQUIRES: 0 <= pos < n_tokens(seq).
  Slot slot_of(SeqId seq, int pos) const;

  const BlockPool& pool() const { return pool_; }
  // Checks the pool and that ref counts equal block-table references;
  // returns "" or the first violation. O(n_blocks + sum of tables).
  std::string audit() const;

 private:
  struct Seq {
    std::vector<BlockId> blocks;        // [n_blocks_for(n_tokens)]
    int n_tokens = 0;
    int n_committed = 0;
    BlockHash last_hash = kRootHash;    // hash of the last full committed block
    std::vector<int32_t> partial;       // [n_committed % block_size] ids of the open block
    bool shifted = false;               // shift() moved its rows: nothing to register
  };
  struct PrefixMatch {
    int n_blocks = 0;                   // leading full blocks found
    int n_idle = 0;                     // of those, cached (ref_count 0)
    BlockHash last_hash = kRootHash;
  };

  const Seq& get(SeqId seq) const;
  Seq& get_or_fail(SeqId seq);
  PrefixMatch match(std::span<const int32_t> tokens, int max_blocks,
                    std::vector<BlockId>* blocks) const;
  int max_shared_blocks(size_t n_prompt) const;
  BlockPool::PrefixRows rows_to_copy(std::span<const int32_t> prompt, const PrefixMatch& m,
                                     int n_new_blocks) const;
  void grow(Seq& s, int n_tokens);
  int shared_blocks(const Seq& s, int first, int end) const;
  void list_moves(std::span<const BlockId> from, std::span<const BlockId> to, int n_keep, int n_discard,
                  int new_len);
  void fail_no_room(SeqId seq, const char* what, int n_tokens, int n_needed) const;

  BlockPool pool_;
  std::unordered_map<SeqId, Seq> seqs_;
  std::vector<BlockCopy> copies_;  // asked for since the last take_copies()
  std::vector<RowMove> moves_;     // asked for since the last take_moves()
  std::vector<int32_t> move_rounds_;
};

}  // namespace cohort::kv
