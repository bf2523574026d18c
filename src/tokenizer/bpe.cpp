#include "tokenizer/bpe.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "tokenizer/byte_unicode.h"

namespace cohort::tokenizer {
namespace {

constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";

constexpr int32_t kNoMerge = INT32_MAX;

// Min-heap order: lowest rank, then leftmost.
struct Later {
  bool operator()(const BpeModel::Scratch::Candidate& a, const BpeModel::Scratch::Candidate& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  }
};

}  // namespace

BpeModel::BpeModel(const gguf::Metadata& md, const Vocab& vocab) : vocab_(vocab) {
  const gguf::Array* merges = md.get_array(kMergesKey);
  if (!merges) fail("byte-level BPE vocabulary without {}", kMergesKey);
  if (merges->elem_type != gguf::ValueType::STRING) fail("{} must be an array of strings", kMergesKey);
  // Strings that are no token get ids past the vocabulary.
  std::unordered_map<std::string, int32_t> others;
  auto symbol_of = [&](std::string_view table_text, uint32_t hash) {
    const int32_t id = vocab.index().find_hashed(table_text, hash);
    if (id != kNoToken) return id;
    const auto next = static_cast<int32_t>(vocab.n_tokens() + others.size());
    return others.try_emplace(std::string(table_text), next).first->second;
  };
  for (int b = 0; b < 256; ++b) {
    const std::string text = bytes_to_table_text(std::string(1, static_cast<char>(b)));
    byte_symbol_[b] = symbol_of(text, StringIndex::hash_of(text));
    for (size_t i = 0; i < 2; ++i) {
      byte_fallback_[b][i] = i < text.size() ? vocab.find(text.substr(i, 1)) : kNoToken;
    }
  }
  merges_.reserve(merges->items.size());
  // Merges are read in blocks whose three lookups each are prefetched
  // first: the index does not fit the cache, and waiting for each lookup
  // in turn would dominate the load time.
  struct Pending {
    size_t rank;
    std::string_view left, right;
    std::string joined;
    uint32_t hash[3];
  };
  constexpr size_t kBlock = 32;
  std::vector<Pending> block;
  block.reserve(kBlock);
  const StringIndex& index = vocab.index();
  auto flush = [&] {
    for (const Pending& p : block) {
      const int32_t l = symbol_of(p.left, p.hash[0]), r = symbol_of(p.right, p.hash[1]);
      const int32_t result = symbol_of(p.joined, p.hash[2]);
      merges_.insert(l, r, Merge{static_cast<int32_t>(p.rank), result});  // the first rank wins
    }
    block.clear();
  };
  for (size_t rank = 0; rank < merges->items.size(); ++rank) {
    std::string_view m = *merges->items[rank].as_string();
    m = m.substr(0, m.find('\0'));  // read as a C string, as llama.cpp does
    const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (space == std::string::npos) continue;  // matches nothing (llama.cpp stores an empty pair)
    const std::string_view left = m.substr(0, space), right = m.substr(space + 1);
    // A side that is not the table text of some bytes never occurs.
    if (left.empty() || right.empty() || !is_table_text(left) || !is_table_text(right)) continue;
    Pending& p = block.emplace_back(Pending{rank, left, right, std::string(left).append(right), {}});
    p.hash[0] = StringIndex::hash_of(p.left);
    p.hash[1] = StringIndex::hash_of(p.right);
    p.hash[2] = StringIndex::hash_of(p.joined);
    for (uint32_t h : p.hash) index.prefetch(h);
    if (block.size() == kBlock) flush();
  }
  flush();
}

void BpeModel::emit(std::string_view word, int32_t sym, uint32_t begin, uint32_t length,
                    std::vector<int32_t>& out) const {
  if (sym < vocab_.n_tokens()) {
    out.push_back(sym);
    return;
  }
  for (uint32_t i = 0; i < length; ++i) {
    for (int32_t t : byte_fallback_[static_cast<uint8_t>(word[begin + i])]) {
      if (t != kNoToken) out.push_back(t);
    }
  }
}

void BpeModel::encode_word(std::string_view word, Scratch& s, std::vector<int32_t>& out) const {
  if (vocab_.ignore_merges()) {
    s.text.clear();
    append_table_text(word, s.text);
    if (const int32_t id = vocab_.find(s.text); id != kNoToken) {
      out.push_back(id);
      return;
    }
  }
  // Both paths merge the lowest-ranked adjacent pair, leftmost on ties. A
  // linear scan per merge beats a heap until words get long.
  constexpr size_t kScanLimit = 64;
  if (word.size() <= kScanLimit) {
    merge_short(word, s, out);
  } else {
    merge_long(word, s, out);
  }
}

void BpeModel::set_pair(Scratch::Piece& left, const Scratch::Piece& right) const {
  const Merge* m = merges_.find(left.sym, right.sym);
  left.rank = m ? m->rank : kNoMerge;
  left.result = m ? m->result : 0;
}

void BpeModel::merge_short(std::string_view word, Scratch& s, std::vector<int32_t>& out) const {
  const auto n = static_cast<uint32_t>(word.size());
  s.pieces.resize(n);
  for (uint32_t i = 0; i < n; ++i) s.pieces[i] = {byte_symbol_[static_cast<uint8_t>(word[i])], i, 1, kNoMerge, 0};
  // The merge table is larger than the cache: start all first lookups at once.
  for (uint32_t i = 0; i + 1 < n; ++i) merges_.prefetch(s.pieces[i].sym, s.pieces[i + 1].sym);
  for (uint32_t i = 0; i + 1 < n; ++i) set_pair(s.pieces[i], s.pieces[i + 1]);
  std::vector<Scratch::Piece>& p = s.pieces;
  for (;;) {
    size_t best = 0;
    for (size_t i = 1; i < p.size(); ++i) {
      if (p[i].rank < p[best].rank) best = i;
    }
    if (p[best].rank == kNoMerge) break;
    p[best].sym = p[best].result;
    p[best].length += p[best + 1].length;
    p.erase(p.begin() + static_cast<ptrdiff_t>(best) + 1);
    if (best > 0) merges_.prefetch(p[best - 1].sym, p[best].sym);
    if (best + 1 < p.size()) merges_.prefetch(p[best].sym, p[best + 1].sym);
    if (best > 0) set_pair(p[best - 1], p[best]);
    if (best + 1 < p.size()) {
      set_pair(p[best], p[best + 1]);
    } else {
      p[best].rank = kNoMerge;
    }
  }
  for (const Scratch::Piece& piece : p) emit(word, piece.sym, piece.begin, piece.length, out);
}

void BpeModel::push_candidate(Scratch& s, int32_t left) const {
  if (left < 0) return;
  const int32_t right = s.symbols[left].next;
  if (right < 0) return;
  const int32_t ls = s.symbols[left].sym, rs = s.symbols[right].sym;
  const Merge* m = merges_.find(ls, rs);
  if (!m) return;
  s.heap.push_back({m->rank, left, ls, rs, m->result});
  std::push_heap(s.heap.begin(), s.heap.end(), Later{});
}

void BpeModel::merge_long(std::string_view word, Scratch& s, std::vector<int32_t>& out) const {
  const auto n = static_cast<int32_t>(word.size());
  s.symbols.resize(word.size());
  for (int32_t i = 0; i < n; ++i) {
    s.symbols[i] = {byte_symbol_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1,
                    static_cast<uint32_t>(i), 1};
  }
  s.heap.clear();
  for (int32_t i = 0; i + 1 < n; ++i) push_candidate(s, i);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), Later{});
    const Scratch::Candidate c = s.heap.back();
    s.heap.pop_back();
    Scratch::Symbol& left = s.symbols[c.left];
    // Stale when either side has changed since the candidate was queued.
    if (left.sym != c.left_sym || left.next < 0 || s.symbols[left.next].sym != c.right_sym) continue;
    Scratch::Symbol& right = s.symbols[left.next];
    left.sym = c.result;
    left.length += right.length;
    left.next = right.next;
    if (right.next >= 0) s.symbols[right.next].prev = c.left;
    right.sym = -1;
    push_candidate(s, left.prev);
    push_candidate(s, c.left);
  }
  for (int32_t i = 0; i >= 0; i = s.symbols[i].next) {
    const Scratch::Symbol& sym = s.symbols[i];
    emit(word, sym.sym, sym.begin, sym.length, out);
  }
}

}  // namespace cohort::tokenizer
