// Text <-> token ids for a GGUF model, with the same ids as llama.cpp.
//
// Supports the two vocabulary kinds of common GGUF models: byte-level BPE
// (tokenizer.ggml.model = gpt2, split first by the regexes its
// tokenizer.ggml.pre names) and SentencePiece-style (llama). Loading a
// 262k-token vocabulary takes milliseconds; nothing is cached per call.
//
// Thread safety: all methods are const and may run concurrently. A Tokenizer
// may be moved; Detokenizers it handed out stay valid while it lives.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/value.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/vocab.h"

namespace cohort::tokenizer {

class Tokenizer {
 public:
  // Throws cohort::Error naming the key at fault (see Vocab::from_metadata;
  // also a gpt2 vocabulary without merges).
  static Tokenizer from_gguf(const gguf::Metadata& md);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // llama.cpp's tokenize(text, add_special, parse_special): add_special adds
  // BOS / EOS as the vocabulary asks (throws cohort::Error if it asks for a
  // token it does not have); parse_special lets control tokens written in
  // the text become those tokens (user-defined ones always do).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // llama_detokenize(remove_special = false, unparse_special = special).
  // Throws cohort::Error for an id outside the vocabulary.
  std::string decode(std::span<const int32_t> ids, bool special) const;

  // The bytes of one token (may be part of a UTF-8 character). Throws
  // cohort::Error for an id outside the vocabulary.
  std::string token_to_piece(int32_t id, bool special = true) const;

  // A streaming decoder for generated tokens (see detokenizer.h); ids pushed
  // into it must be in range (check with n_vocab()).
  Detokenizer detokenizer(bool special = false) const;

  int32_t n_vocab() const;
  int32_t bos() const;  // kNoToken (-1) when the vocabulary has none
  int32_t eos() const;
  int32_t eot() const;
  // End of generation: eos, eot, and tokens such as <|im_end|>, <|eot_id|>,
  // <end_of_turn>, marked as llama.cpp marks them.
  bool is_eog(int32_t id) const;
  const Vocab& vocab() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::tokenizer
