// One prompt in llama-server's native forms, tokenized as it tokenizes them
// (its tokenize_input_subprompt): a string; token ids; a mix of ids and
// strings, each string with parse_special and the first piece of the prompt
// with add_special too (tokenize_mixed); or the multimodal object
// {"prompt_string": text, "multimodal_data": [...]}, whose text is the
// prompt and whose media are refused (this server reads text only).
//
// Errors are RequestError 400 naming `field` ("prompt", "input[2]").
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/request_fields.h"
#include "tokenizer/tokenizer.h"

namespace cohort::server {

std::vector<int32_t> read_native_prompt(const Json& prompt, const tokenizer::Tokenizer& tok, const std::string& field);

}  // namespace cohort::server
