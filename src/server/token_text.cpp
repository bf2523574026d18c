#include "server/token_text.h"

#include "common/error.h"

namespace cohort::server {

std::string token_text(const tokenizer::Tokenizer& tok, int32_t id) {
  try {
    return tok.token_to_piece(id, true);
  } catch (const Error&) {
    return std::string();
  }
}

std::string tokens_text(const tokenizer::Tokenizer& tok, std::span<const int32_t> ids) {
  std::string text;
  for (int32_t id : ids) text += token_text(tok, id);
  return text;
}

}  // namespace cohort::server
