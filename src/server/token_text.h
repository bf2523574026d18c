// Tokens as the server shows them in answers and prompts: a token's bytes
// with control tokens as their text, and nothing for an id outside the
// vocabulary (no token, -1, or one the engine should never produce), so that
// showing a token never fails a request.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tokenizer/tokenizer.h"

namespace cohort::server {

std::string token_text(const tokenizer::Tokenizer& tok, int32_t id);

// The concatenated token_text of ids: the prompt as sent.
std::string tokens_text(const tokenizer::Tokenizer& tok, std::span<const int32_t> ids);

}  // namespace cohort::server
