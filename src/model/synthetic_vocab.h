// A small byte-level BPE vocabulary for models made by `cohort mkmodel`
// without --vocab-from: the 256 byte tokens, a fixed list of merges, three
// ChatML special tokens, and unused padding up to the requested size. It
// exists so that random-weight files load in llama.cpp and in cohort alike.
#pragma once

#include <cstdint>

#include "gguf/value.h"

namespace cohort::model {

// Writes the tokenizer.* keys for a vocabulary of exactly n_vocab tokens
// (n_vocab >= kMinSyntheticVocab) into md.
void write_synthetic_vocab(gguf::Metadata& md, int64_t n_vocab);

inline constexpr int64_t kMinSyntheticVocab = 512;

// Copies every tokenizer.* key of `from` into md; returns the vocabulary size.
int64_t copy_vocab(const gguf::Metadata& from, gguf::Metadata& md);

}  // namespace cohort::model
