#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace cohort::tokenizer {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) {
  const std::vector<int32_t>& specials = vocab.special_tokens();
  for (uint32_t rank = 0; rank < specials.size(); ++rank) {
    const std::string& text = vocab.token(specials[rank]).text;
    max_length_ = std::max(max_length_, text.size());
    first_byte_[static_cast<uint8_t>(text[0])] = true;
    for (size_t n = 1; n < text.size(); ++n) prefixes_.insert(std::string_view(text).substr(0, n), 0);
    // The whole text: remember the rank of the first candidate with it.
    const int32_t stored = prefixes_.insert(text, static_cast<int32_t>(rank) + 1);
    if (stored == 0) prefixes_.assign(text, static_cast<int32_t>(rank) + 1);
  }
}

std::vector<uint32_t> SpecialTokenMatcher::occurring(const Vocab& vocab, std::string_view text) const {
  std::vector<bool> seen(vocab.special_tokens().size(), false);
  std::vector<uint32_t> found;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) continue;
    const size_t limit = std::min(max_length_, text.size() - pos);
    for (size_t n = 1; n <= limit; ++n) {
      const int32_t v = prefixes_.find(text.substr(pos, n));
      if (v == StringIndex::kAbsent) break;
      if (v > 0 && !seen[v - 1]) {
        seen[v - 1] = true;
        found.push_back(static_cast<uint32_t>(v - 1));
      }
    }
  }
  // Texts shared by several ids are found once; add the others.
  const std::vector<int32_t>& specials = vocab.special_tokens();
  for (size_t i = 0, n = found.size(); i < n; ++i) {
    const std::string& t = vocab.token(specials[found[i]]).text;
    for (uint32_t r = found[i] + 1; r < specials.size() && vocab.token(specials[r]).text.size() == t.size(); ++r) {
      if (!seen[r] && vocab.token(specials[r]).text == t) seen[r] = true, found.push_back(r);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

namespace {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// First occurrence of needle in text[from, end), or npos. glibc's memmem:
// std::string_view::find stops at every byte equal to the needle's first
// (a space, for the space-run tokens of Gemma's vocabulary) and compares the
// rest there, which costs far more on plain prose.
size_t find_in(std::string_view text, size_t from, size_t end, std::string_view needle) {
  const void* hit = memmem(text.data() + from, end - from, needle.data(), needle.size());
  return hit == nullptr ? std::string_view::npos : static_cast<size_t>(static_cast<const char*>(hit) - text.data());
}

// Splits one raw fragment at every occurrence of `token`'s text.
void split_fragment(const Fragment& f, std::string_view text, int32_t token, std::string_view needle,
                    uint32_t token_attr, std::vector<Fragment>& out) {
  uint32_t begin = f.offset, length = f.length;
  for (;;) {
    const size_t match = find_in(text, begin, begin + length, needle);
    if (match == std::string_view::npos) {
      if (length > 0) out.push_back({kNoToken, begin, length});
      return;
    }
    uint32_t left_length = static_cast<uint32_t>(match) - begin;
    if (token_attr & attr::kLstrip) {
      while (left_length > 0 && is_space(text[begin + left_length - 1])) --left_length;
    }
    if (left_length > 0) out.push_back({kNoToken, begin, left_length});
    out.push_back({token, 0, 0});
    uint32_t right = static_cast<uint32_t>(match + needle.size());
    const uint32_t end = begin + length;
    if (token_attr & attr::kRstrip) {
      while (right < end && is_space(text[right])) ++right;
    }
    begin = right;
    length = end - right;
    if (length == 0) return;
  }
}

}  // namespace

std::vector<Fragment> SpecialTokenMatcher::partition(const Vocab& vocab, std::string_view text,
                                                     bool parse_special) const {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({kNoToken, 0, static_cast<uint32_t>(text.size())});
  std::vector<Fragment> next;
  for (uint32_t rank : occurring(vocab, text)) {
    const int32_t id = vocab.special_tokens()[rank];
    const TokenData& t = vocab.token(id);
    if (!parse_special && (t.attr & (attr::kControl | attr::kUnknown))) continue;
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken) {
        next.push_back(f);
      } else {
        split_fragment(f, text, id, t.text, t.attr, next);
      }
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace cohort::tokenizer
