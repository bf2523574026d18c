// Finding special tokens (control, user-defined, unknown) in raw text before
// the text is tokenized, with llama.cpp's rules (tokenizer_st_partition):
//   - candidates are taken longest text first; each splits every remaining
//     text fragment at all its occurrences, left to right;
//   - without parse_special only user-defined tokens are matched (as the
//     Hugging Face tokenizers do); control and unknown tokens stay text;
//   - a token with the lstrip / rstrip attribute eats white space beside it.
//
// To stay fast on vocabularies with thousands of special tokens, a prefix
// table first finds which candidates occur in the text at all; only those
// run the (exact) partition. Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/string_index.h"
#include "tokenizer/vocab.h"

namespace cohort::tokenizer {

// A piece of the input: a special token, or raw text [offset, offset+length).
struct Fragment {
  int32_t token = kNoToken;  // kNoToken: raw text
  uint32_t offset = 0;
  uint32_t length = 0;
};

class SpecialTokenMatcher {
 public:
  explicit SpecialTokenMatcher(const Vocab& vocab);

  // REQUIRES: `vocab` is the one given to the constructor.
  std::vector<Fragment> partition(const Vocab& vocab, std::string_view text, bool parse_special) const;

 private:
  // Candidates (indices into vocab.special_tokens()) that occur in text.
  std::vector<uint32_t> occurring(const Vocab& vocab, std::string_view text) const;

  StringIndex prefixes_;  // every prefix of a candidate text -> rank (+1) if a whole text, else 0
  size_t max_length_ = 0;
  bool first_byte_[256] = {};
};

}  // namespace cohort::tokenizer
