#include "kv/block_manager.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "common/error.h"

namespace cohort::kv {

BlockManager::BlockManager(int n_blocks, int block_size) : pool_(n_blocks, block_size) {}

int BlockManager::n_blocks_for(int64_t n_tokens) const {
  const int64_t bs = block_size();
  const int64_t n = (std::max<int64_t>(n_tokens, 0) + bs - 1) / bs;
  return static_cast<int>(std::min<int64_t>(n, std::numeric_limits<int>::max()));
}

const BlockManager::Seq& BlockManager::get(SeqId seq) const {
  auto it = seqs_.find(seq);
  assert(it != seqs_.end() && "unknown sequence");
  return it->second;
}

BlockManager::Seq& BlockManager::get_or_fail(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) fail("KV cache: unknown sequence {}", seq);
  return it->second;
}

BlockManager::PrefixMatch BlockManager::match(std::span<const int32_t> tokens, int max_blocks,
                                              std::vector<BlockId>* blocks) const {
  PrefixMatch m;
  const size_t bs = static_cast<size_t>(block_size());
  for (int i = 0; i < max_blocks; ++i) {
    auto chunk = tokens.subspan(static_cast<size_t>(i) * bs, bs);
    const BlockId b = pool_.lookup(m.last_hash, chunk);
    if (b == kNoBlock) break;
    m.last_hash = hash_block(m.last_hash, chunk);
    ++m.n_blocks;
    if (pool_.ref_count(b) == 0) ++m.n_idle;
    if (blocks != nullptr) blocks->push_back(b);
  }
  return m;
}

int BlockManager::match_prefix(std::span<const int32_t> tokens) const {
  const int max_blocks = static_cast<int>(tokens.size() / static_cast<size_t>(block_size()));
  return match(tokens, max_blocks, nullptr).n_blocks * block_size();
}

int BlockManager::max_shared_blocks(size_t n_prompt) const {
  // Leave the last prompt token to be computed: its logits are needed.
  if (n_prompt == 0) return 0;
  return static_cast<int>((n_prompt - 1) / static_cast<size_t>(block_size()));
}

bool BlockManager::can_allocate(SeqId seq, int n_tokens) const {
  return n_tokens >= 0 && !contains(seq) && n_blocks_for(n_tokens) <= n_free_blocks();
}

bool BlockManager::can_allocate(SeqId seq, std::span<const int32_t> prompt) const {
  if (contains(seq) || prompt.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return false;
  const PrefixMatch m = match(prompt, max_shared_blocks(prompt.size()), nullptr);
  const int n_new = n_blocks_for(static_cast<int64_t>(prompt.size())) - m.n_blocks;
  // Reviving an idle cached block takes it out of the free count.
  return n_new <= n_free_blocks() - m.n_idle;
}

void BlockManager::fail_no_room(SeqId seq, const char* what, int n_tokens, int n_needed) const {
  fail("out of KV cache blocks: sequence {} {} {} tokens needs {} more blocks of {} tokens, "
       "{} of {} are free",
       seq, what, n_tokens, n_needed, block_size(), n_free_blocks(), n_blocks());
}

void BlockManager::allocate(SeqId seq, int n_tokens) {
  if (contains(seq)) fail("KV cache: sequence {} already has blocks", seq);
  if (n_tokens < 0) fail("KV cache: sequence {}: n_tokens = {} must be >= 0", seq, n_tokens);
  if (!can_allocate(seq, n_tokens))
    fail_no_room(seq, "allocating", n_tokens, n_blocks_for(n_tokens));
  Seq s;
  s.partial.reserve(static_cast<size_t>(block_size()));
  grow(s, n_tokens);
  seqs_.emplace(seq, std::move(s));
}

int BlockManager::allocate(SeqId seq, std::span<const int32_t> prompt) {
  if (contains(seq)) fail("KV cache: sequence {} already has blocks", seq);
  const int n_tokens = static_cast<int>(prompt.size());
  if (!can_allocate(seq, prompt)) {
    const int n_shared = match_prefix(prompt.first(prompt.empty() ? 0 : prompt.size() - 1));
    fail_no_room(seq, "allocating", n_tokens, n_blocks_for(n_tokens) - n_shared / block_size());
  }
  Seq s;
  s.partial.reserve(static_cast<size_t>(block_size()));
  s.blocks.reserve(static_cast<size_t>(n_blocks_for(n_tokens)));
  const PrefixMatch m = match(prompt, max_shared_blocks(prompt.size()), &s.blocks);
  for (BlockId b : s.blocks) pool_.ref(b);  // before grow(), so none is evicted
  const int n_shared = m.n_blocks * block_size();
  const BlockPool::PrefixRows rows = rows_to_copy(prompt, m, n_blocks_for(n_tokens) - m.n_blocks);
  if (rows.n_rows > 0) pool_.ref(rows.block);  // held through grow(): no block is copied onto itself
  s.n_committed = n_shared;
  s.n_tokens = n_shared;
  s.last_hash = m.last_hash;
  grow(s, n_tokens);
  if (rows.n_rows > 0) {
    pool_.unref(rows.block);
    const auto copied = prompt.subspan(static_cast<size_t>(n_shared), static_cast<size_t>(rows.n_rows));
    s.partial.assign(copied.begin(), copied.end());
    s.n_committed += rows.n_rows;
    copies_.push_back({rows.block, s.blocks[static_cast<size_t>(m.n_blocks)], rows.n_rows});
  }
  const int n_committed = s.n_committed;
  seqs_.emplace(seq, std::move(s));
  return n_committed;
}

// The rows after the shared blocks to copy from the kept block that agrees
// longest with the prompt: fewer than a block, leaving the last prompt token
// to compute, and none where holding the source through grow() would leave
// too few free blocks (an idle source is then out of the free count).
BlockPool::PrefixRows BlockManager::rows_to_copy(std::span<const int32_t> prompt, const PrefixMatch& m,
                                                 int n_new_blocks) const {
  const size_t n_shared = static_cast<size_t>(m.n_blocks) * static_cast<size_t>(block_size());
  if (prompt.size() <= n_shared + 1) return {};
  const size_t budget = std::min(prompt.size() - 1 - n_shared, static_cast<size_t>(block_size() - 1));
  const BlockPool::PrefixRows rows = pool_.longest_rows(m.last_hash, prompt.subspan(n_shared, budget));
  if (rows.n_rows == 0) return {};
  const int idle_source = pool_.ref_count(rows.block) == 0 ? 1 : 0;
  if (n_new_blocks > n_free_blocks() - m.n_idle - idle_source) return {};
  return rows;
}

void BlockManager::take_copies(std::vector<BlockCopy>& out) {
  out.clear();
  std::swap(out, copies_);
}

// Blocks in [first, end) of s's table that another sequence also holds.
int BlockManager::shared_blocks(const Seq& s, int first, int end) const {
  int n = 0;
  for (int i = first; i < end; ++i) n += pool_.ref_count(s.blocks[static_cast<size_t>(i)]) > 1 ? 1 : 0;
  return n;
}

bool BlockManager::can_shift(SeqId seq, int n_keep, int n_discard) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return false;
  const Seq& s = it->second;
  if (n_keep < 0 || n_discard < 1 || s.n_committed != s.n_tokens || n_keep > s.n_committed - n_discard)
    return false;
  const int first = n_keep / block_size(), end = n_blocks_for(s.n_committed - n_discard);
  return shared_blocks(s, first, end) <= n_free_blocks();
}

void BlockManager::shift(SeqId seq, int n_keep, int n_discard) {
  Seq& s = get_or_fail(seq);
  if (!can_shift(seq, n_keep, n_discard)) {
    fail("KV cache: sequence {} of {} positions ({} committed) cannot drop {} positions after {} "
         "({} blocks free)", seq, s.n_tokens, s.n_committed, n_discard, n_keep, n_free_blocks());
  }
  const int bs = block_size();
  const int new_len = s.n_committed - n_discard;
  const int first = n_keep / bs, end = n_blocks_for(new_len);
  const std::vector<BlockId> from = s.blocks;
  for (int i = first; i < end; ++i) {  // the blocks the moves write
    BlockId& b = s.blocks[static_cast<size_t>(i)];
    if (pool_.ref_count(b) > 1) {
      b = pool_.acquire();
    } else if (pool_.is_kept(b)) {
      pool_.unregister(b);
    }
  }
  list_moves(from, s.blocks, n_keep, n_discard, new_len);
  // The moves read the released blocks at the next step, before it writes
  // any row: a block freed here and handed to a new sequence is written
  // only by the forward, after them.
  for (int i = first; i < end; ++i) {
    if (s.blocks[static_cast<size_t>(i)] != from[static_cast<size_t>(i)]) pool_.unref(from[static_cast<size_t>(i)]);
  }
  for (int i = static_cast<int>(from.size()) - 1; i >= end; --i) pool_.unref(from[static_cast<size_t>(i)]);
  s.blocks.resize(static_cast<size_t>(end));
  s.n_tokens = s.n_committed = new_len;
  s.partial.assign(static_cast<size_t>(new_len % bs), -1);
  s.shifted = true;
}

// Position p of `to` gets position p + n_discard of `from` (rotated) for p in
// [n_keep, new_len), and the rows before n_keep of a block that was
// replaced come along unrotated. Round r moves positions
// [n_keep + r * n_discard, n_keep + (r + 1) * n_discard): it reads the rows
// the next round writes.
void BlockManager::list_moves(std::span<const BlockId> from, std::span<const BlockId> to, int n_keep,
                              int n_discard, int new_len) {
  const int bs = block_size();
  auto row = [bs](std::span<const BlockId> table, int pos) {
    return static_cast<int32_t>(kv::slot_of(table, bs, pos).index(bs));
  };
  const size_t begin = moves_.size();
  const int first = n_keep / bs;
  if (static_cast<size_t>(first) < to.size() && from[static_cast<size_t>(first)] != to[static_cast<size_t>(first)]) {
    for (int p = first * bs; p < n_keep; ++p) moves_.push_back({row(from, p), row(to, p), 0});
  }
  for (int p = n_keep; p < new_len; ++p) {
    if (p > n_keep && (p - n_keep) % n_discard == 0) move_rounds_.push_back(static_cast<int32_t>(moves_.size()));
    moves_.push_back({row(from, p + n_discard), row(to, p), -n_discard});
  }
  if (moves_.size() > begin) move_rounds_.push_back(static_cast<int32_t>(moves_.size()));
}

void BlockManager::take_moves(std::vector<RowMove>& moves, std::vector<int32_t>& round_ends) {
  moves.clear();
  round_ends.clear();
  std::swap(moves, moves_);
  std::swap(round_ends, move_rounds_);
}

bool BlockManager::can_append(SeqId seq, int n_new) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end() || n_new < 0) return false;
  const Seq& s = it->second;
  const int64_t n_total = int64_t{s.n_tokens} + n_new;
  if (n_total > std::numeric_limits<int>::max()) return false;
  return n_blocks_for(n_total) - static_cast<int>(s.blocks.size()) <= n_free_blocks();
}

void BlockManager::append(SeqId seq, int n_new) {
  Seq& s = get_or_fail(seq);
  if (n_new < 0) fail("KV cache: sequence {}: cannot append {} tokens", seq, n_new);
  if (!can_append(seq, n_new)) {
    const int64_t n_total = int64_t{s.n_tokens} + n_new;
    fail_no_room(seq, "appending", n_new,
                 n_blocks_for(n_total) - static_cast<int>(s.blocks.size()));
  }
  grow(s, s.n_tokens + n_new);
}

// REQUIRES: enough free blocks (checked by the caller's can_*).
void BlockManager::grow(Seq& s, int n_tokens) {
  const int n_needed = n_blocks_for(n_tokens);
  while (static_cast<int>(s.blocks.size()) < n_needed) s.blocks.push_back(pool_.acquire());
  s.n_tokens = n_tokens;
}

void BlockManager::commit(SeqId seq, std::span<const int32_t> tokens) {
  Seq& s = get_or_fail(seq);
  if (int64_t{s.n_committed} + static_cast<int64_t>(tokens.size()) > s.n_tokens)
    fail("KV cache: sequence {}: committing {} tokens at position {} passes its {} positions",
         seq, tokens.size(), s.n_committed, s.n_tokens);
  const size_t bs = static_cast<size_t>(block_size());
  for (int32_t t : tokens) {
    s.partial.push_back(t);
    ++s.n_committed;
    if (s.partial.size() < bs) continue;
    if (s.shifted) {
      s.partial.clear();
      continue;
    }
    const BlockId b = s.blocks[static_cast<size_t>(s.n_committed - 1) / bs];
    s.last_hash = pool_.register_full(b, s.last_hash, s.partial);
    s.partial.clear();
  }
}

void BlockManager::free(SeqId seq) {
  Seq& s = get_or_fail(seq);
  if (!s.partial.empty() && !s.shifted) {  // the open block's committed rows, for a later prompt to copy
    const BlockId open = s.blocks[static_cast<size_t>(s.n_committed / block_size())];
    pool_.register_partial(open, s.last_hash, s.partial);
  }
  for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) pool_.unref(*it);
  seqs_.erase(seq);
}

Slot BlockManager::slot_of(SeqId seq, int pos) const {
  const Seq& s = get(seq);
  assert(pos >= 0 && pos < s.n_tokens);
  return kv::slot_of(s.blocks, block_size(), pos);
}

std::string BlockManager::audit() const {
  std::string why = pool_.audit();
  if (!why.empty()) return why;
  std::vector<int> refs(static_cast<size_t>(n_blocks()), 0);
  const int bs = block_size();
  for (const auto& [id, s] : seqs_) {
    if (static_cast<int>(s.blocks.size()) != n_blocks_for(s.n_tokens))
      return fmt::format("sequence {} has {} blocks for {} tokens", id, s.blocks.size(),
                         s.n_tokens);
    if (s.n_committed < 0 || s.n_committed > s.n_tokens ||
        static_cast<int>(s.partial.size()) != s.n_committed % bs)
      return fmt::format("sequence {} has bad counters", id);
    for (size_t i = 0; i < s.blocks.size(); ++i) {
      const BlockId b = s.blocks[i];
      ++refs[static_cast<size_t>(b)];
      const bool open = static_cast<int>(i) >= s.n_committed / bs;  // may still be written
      if (open && (pool_.ref_count(b) != 1 || pool_.is_kept(b)))
        return fmt::format("sequence {} writes into shared or kept block {}", id, b);
    }
  }
  for (BlockId b = 0; b < n_blocks(); ++b)
    if (refs[static_cast<size_t>(b)] != pool_.ref_count(b))
      return fmt::format("block {} has ref_count {} but {} references", b, pool_.ref_count(b),
                         refs[static_cast<size_t>(b)]);
  return "";
}

}  // namespace cohort::kv
