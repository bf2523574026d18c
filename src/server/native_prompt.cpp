#include "server/native_prompt.h"

#include <fmt/format.h>

#include "common/error.h"
#include "server/openai_request.h"
#include "server/request_error.h"

namespace cohort::server {
namespace {

std::vector<int32_t> encode(const tokenizer::Tokenizer& tok, const std::string& text, bool add_special,
                            const std::string& field) {
  try {
    return tok.encode(text, add_special, true);
  } catch (const Error& e) {
    throw RequestError(400, fmt::format("cannot tokenize '{}': {}", field, e.what()), field);
  }
}

std::vector<int32_t> read_prompt_object(const Json& prompt, const tokenizer::Tokenizer& tok,
                                        const std::string& field) {
  if (const auto media = prompt.find("multimodal_data");
      media != prompt.end() && !media->is_null() && !(media->is_array() && media->empty())) {
    reject_field(field + ".multimodal_data", "is not supported: this server reads text only (no vision or audio)");
  }
  const auto text = prompt.find("prompt_string");
  if (text == prompt.end() || !text->is_string()) reject_field(field + ".prompt_string", "must be a string");
  return encode(tok, text->get<std::string>(), true, field);
}

}  // namespace

std::vector<int32_t> read_native_prompt(const Json& prompt, const tokenizer::Tokenizer& tok, const std::string& field) {
  if (prompt.is_object()) return read_prompt_object(prompt, tok, field);
  if (prompt.is_string()) return encode(tok, prompt.get<std::string>(), true, field);
  if (!prompt.is_array()) {
    reject_field(field, fmt::format("must be a string, token ids, a mix of both, an object with "
                                    "\"prompt_string\", or a list of those; got {}", json_type_name(prompt)));
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < prompt.size(); ++i) {
    const Json& part = prompt[i];
    if (part.is_string()) {
      const std::vector<int32_t> piece = encode(tok, part.get<std::string>(), i == 0, field);
      ids.insert(ids.end(), piece.begin(), piece.end());
    } else if (part.is_number_integer()) {
      ids.push_back(read_token_ids(Json::array({part}), field, tok.n_vocab())[0]);
    } else {
      reject_field(field, fmt::format("must hold token ids and strings; item {} is {}", i, json_type_name(part)));
    }
  }
  return ids;
}

}  // namespace cohort::server
