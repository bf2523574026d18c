#include "tokenizer/spm.h"

#include <algorithm>
#include <string>

#include "tokenizer/utf8.h"

namespace cohort::tokenizer {
namespace {

struct Symbol {
  int32_t prev, next;
  uint32_t begin, length;  // length 0: merged away
};

struct Bigram {
  float score;
  int32_t left, right;
  uint32_t length;  // of left + right when queued
};

// Max-heap order: highest score, then leftmost.
struct Lower {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581

// piece == kSpace, without a call to memcmp (this runs once per character).
bool is_space_mark(std::string_view piece) {
  return piece.size() == 3 && piece[0] == kSpace[0] && piece[1] == kSpace[1] && piece[2] == kSpace[2];
}

uint64_t pack(std::string_view bytes) {
  uint64_t key = bytes.size();
  for (char c : bytes) key = (key << 8) | static_cast<uint8_t>(c);
  return key;
}

class SpmEncoding {
 public:
  SpmEncoding(const SpmModel& model, const Vocab& vocab, std::string_view text)
      : model_(model), vocab_(vocab), text_(text) {}

  // One walk over the characters; each segment is merged and emitted as
  // soon as the next begins: the symbols of one word stay in cache.
  void run(std::vector<int32_t>& out) {
    std::string_view previous;
    for (size_t pos = 0; pos < text_.size();) {
      const size_t n = std::min(utf8_lead_length(static_cast<uint8_t>(text_[pos])), text_.size() - pos);
      const std::string_view piece = text_.substr(pos, n);
      if (pos > 0 && starts_segment(previous, piece)) encode_segment(out);
      const auto index = static_cast<int32_t>(symbols_.size());
      symbols_.push_back({index - 1, index + 1, static_cast<uint32_t>(pos), static_cast<uint32_t>(n)});
      previous = piece;
      pos += n;
    }
    encode_segment(out);
  }

 private:
  // A space mark starts a segment that merges independently of the text
  // before it, unless some token joins the preceding character to a space.
  bool starts_segment(std::string_view previous, std::string_view piece) const {
    return is_space_mark(piece) && !model_.joins_space(previous);
  }

  // Merges and emits the characters gathered in symbols_ (linked in order),
  // then empties it for the next segment.
  void encode_segment(std::vector<int32_t>& out) {
    if (symbols_.empty()) return;
    symbols_.back().next = -1;
    merge();
    for (const Symbol& s : symbols_) {
      if (s.length > 0) emit(s, out);
    }
    symbols_.clear();
  }

  // The merge loop over the symbols of one segment.
  void merge() {
    heap_.clear();
    for (int32_t i = 1; i < static_cast<int32_t>(symbols_.size()); ++i) try_bigram(i - 1, i);
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), Lower{});
      const Bigram b = heap_.back();
      heap_.pop_back();
      Symbol& left = symbols_[b.left];
      Symbol& right = symbols_[b.right];
      // Stale when either side has been merged since (lengths changed).
      if (left.length == 0 || right.length == 0 || left.length + right.length != b.length) continue;
      left.length += right.length;
      right.length = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = b.left;
      try_bigram(left.prev, b.left);
      try_bigram(b.left, left.next);
    }
  }

  void try_bigram(int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t length = symbols_[left].length + symbols_[right].length;
    const int32_t token = vocab_.find(text_.substr(symbols_[left].begin, length));
    if (token == kNoToken) return;
    heap_.push_back({vocab_.token(token).score, left, right, length});
    std::push_heap(heap_.begin(), heap_.end(), Lower{});
  }

  // A symbol that is not a token can only be a single (unmerged) character:
  // every merge result is a token. It is emitted byte by byte. (llama.cpp
  // first looks such a symbol up among the merged pairs; a character never
  // equals the text of two adjacent symbols, so that lookup cannot succeed.)
  void emit(const Symbol& s, std::vector<int32_t>& out) const {
    const std::string_view piece = text_.substr(s.begin, s.length);
    if (const int32_t token = vocab_.find(piece); token != kNoToken) {
      out.push_back(token);
      return;
    }
    for (char c : piece) {
      int32_t t = vocab_.byte_token(static_cast<uint8_t>(c));
      if (t == kNoToken) t = vocab_.unk();  // llama.cpp aborts here; unk is the kinder answer
      if (t != kNoToken) out.push_back(t);
    }
  }

  const SpmModel& model_;
  const Vocab& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::vector<Bigram> heap_;
};

}  // namespace

SpmModel::SpmModel(const Vocab& vocab) {
  for (int32_t id = 0; id < vocab.n_tokens(); ++id) {
    const std::string_view text = vocab.token(id).text;
    for (size_t p = text.find(kSpace, 1); p != std::string_view::npos; p = text.find(kSpace, p + 1)) {
      for (size_t k = 1; k <= 4 && k <= p; ++k) before_space_.insert(pack(text.substr(p - k, k)));
    }
  }
}

bool SpmModel::joins_space(std::string_view before) const {
  return before.size() > 4 || before_space_.count(pack(before)) != 0;
}

void SpmModel::encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const {
  SpmEncoding(*this, vocab, text).run(out);
}

std::string spm_escape(std::string_view text, bool prefix_space) {
  std::string out;
  out.reserve(text.size() + text.size() / 4 + 3);
  if (prefix_space) out += kSpace;
  for (char c : text) {
    if (c == ' ') {
      out += kSpace;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace cohort::tokenizer
