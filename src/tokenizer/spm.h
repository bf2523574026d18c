// SentencePiece-style tokenization (tokenizer.ggml.model = llama), as
// llama.cpp's llm_tokenizer_spm does it: start from one symbol per UTF-8
// character, repeatedly merge the adjacent pair whose concatenation is the
// vocabulary token with the highest score (leftmost on ties), and emit
// symbols that are not tokens as byte tokens (<0xAB>).
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "tokenizer/vocab.h"

namespace cohort::tokenizer {

// What SPM needs beyond the vocabulary: where long texts may be cut into
// independent pieces. Merging is global (highest score first over the whole
// text), but a merge can only join symbols across a position if some token
// spans that position. Before a U+2581 preceded by the bytes X, no token
// spans unless some token contains X + U+2581; texts are cut there, which
// keeps the work per piece small and the result identical.
class SpmModel {
 public:
  explicit SpmModel(const Vocab& vocab);

  // Appends the tokens of `text`, which REQUIRES the caller's preparation
  // (optional leading space, then every ' ' replaced by U+2581). Ill-formed
  // UTF-8 is accepted: a character is as long as its first byte says.
  void encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const;

  // True when some token contains `before` (1-4 bytes) followed by U+2581.
  bool joins_space(std::string_view before) const;

 private:
  std::unordered_set<uint64_t> before_space_;  // packed (length, bytes)
};

// The SPM form of a raw text fragment: ' ' -> U+2581, with one leading space
// first when `prefix_space`.
std::string spm_escape(std::string_view text, bool prefix_space);

}  // namespace cohort::tokenizer
