// Byte-level BPE (tokenizer.ggml.model = gpt2): merges one pre-tokenized word
// at a time, lowest merge rank first, as llama.cpp's llm_tokenizer_bpe does.
//
// Works on raw bytes. Every string that can occur while merging (the 256
// single bytes, each side and result of each merge) has a symbol id: its
// token id when it is a token, else an id past the vocabulary. Merge ranks
// are a hash map keyed by a pair of symbol ids, so the merge loop compares
// integers only.
//
// Keeps a reference to the vocabulary, which must outlive it. Immutable
// after construction; encode_word() may run concurrently as long as each
// thread passes its own Scratch.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/value.h"
#include "tokenizer/string_index.h"
#include "tokenizer/vocab.h"

namespace cohort::tokenizer {

class BpeModel {
 public:
  // Reads tokenizer.ggml.merges ("left right" strings, rank = index).
  // Throws cohort::Error if the key is missing or not an array of strings.
  BpeModel(const gguf::Metadata& md, const Vocab& vocab);

  // Per-call working memory, reused across words.
  struct Scratch {
    // Short words: the pieces left to right; rank/result describe merging a
    // piece with the next one (rank kNoMerge: none).
    struct Piece {
      int32_t sym;
      uint32_t begin, length;  // bytes of the word
      int32_t rank, result;
    };
    // Long words: a linked list and a heap of candidate merges.
    struct Symbol {
      int32_t sym;  // symbol id; -1 once merged into its left neighbour
      int32_t prev, next;
      uint32_t begin, length;
    };
    struct Candidate {
      int32_t rank, left, left_sym, right_sym, result;
    };
    std::vector<Piece> pieces;
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
    std::string text;  // table text of a word
  };

  // Appends the tokens of one word (raw bytes, REQUIRES non-empty).
  void encode_word(std::string_view word, Scratch& scratch, std::vector<int32_t>& out) const;

  size_t n_merges() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank = 0;
    int32_t result = 0;  // symbol id of left + right
  };
  void merge_short(std::string_view word, Scratch& s, std::vector<int32_t>& out) const;
  void merge_long(std::string_view word, Scratch& s, std::vector<int32_t>& out) const;
  void set_pair(Scratch::Piece& left, const Scratch::Piece& right) const;
  void push_candidate(Scratch& s, int32_t left) const;
  void emit(std::string_view word, int32_t sym, uint32_t begin, uint32_t length, std::vector<int32_t>& out) const;

  const Vocab& vocab_;
  PairIndex<Merge> merges_;
  std::array<int32_t, 256> byte_symbol_{};
  // Tokens emitted for a byte of a word piece that is not a token: llama.cpp
  // looks up each byte of the byte's table text as a one-byte token.
  std::array<std::array<int32_t, 2>, 256> byte_fallback_{};
};

}  // namespace cohort::tokenizer
