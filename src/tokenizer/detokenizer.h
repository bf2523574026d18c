// Token ids back to text, as llama.cpp renders them.
//
// token_to_piece: the bytes of one token (llama_token_to_piece). Control and
// unknown tokens render as "" unless `special`; user-defined tokens render as
// their text; BPE tokens go back through the GPT-2 byte table; SPM tokens
// turn U+2581 into spaces; byte tokens (<0xAB>) become that byte.
//
// detokenize: the pieces of a sequence joined (llama_detokenize with
// remove_special = false): when the vocabulary adds a space prefix, one
// leading space of the first piece is dropped; vocabularies with
// clean_spaces then lose the spaces before . , ! ? and in " 's" and similar.
// The result may be ill-formed UTF-8 (a sequence can end inside a character).
//
// Detokenizer: the streaming form for generated text. It emits only whole
// characters (holding back a character split across tokens until it is
// complete, then emitting it once) and never ill-formed UTF-8 (bytes that
// cannot form a character become U+FFFD). It does not apply clean_spaces,
// which needs the whole text (llama.cpp's servers stream pieces unclean too).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tokenizer/vocab.h"

namespace cohort::tokenizer {

// Appends the piece of `id` (REQUIRES 0 <= id < n_tokens). With
// `strip_space`, one leading ' ' of the piece is dropped.
void append_piece(const Vocab& vocab, int32_t id, bool special, bool strip_space, std::string& out);

// REQUIRES: every id in range.
std::string detokenize(const Vocab& vocab, std::span<const int32_t> ids, bool special);

// llama.cpp's clean_up_tokenization_spaces, in place.
void clean_up_spaces(std::string& text);

class Detokenizer {
 public:
  // `vocab` must outlive the detokenizer.
  Detokenizer(const Vocab& vocab, bool special) : vocab_(&vocab), special_(special) {}

  // Adds a token (REQUIRES: id in range) and returns the text that became
  // complete; possibly empty.
  std::string push(int32_t id);
  // Ends the stream: returns what is held back, with an unfinished character
  // replaced by U+FFFD.
  std::string finish();

 private:
  const Vocab* vocab_;
  bool special_;
  bool first_ = true;
  std::string pending_;  // bytes of an unfinished character
};

}  // namespace cohort::tokenizer
