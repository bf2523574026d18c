#include "server/embedding_api.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "common/error.h"
#include "server/native_prompt.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/request_fields.h"

namespace cohort::server {
namespace {

// The tokens of one input: a native prompt (native_prompt.h), or OpenAI's
// {"content": [{"type": "text", "text": ...}, ...]}, the texts joined as
// they are (as llama-server's tokenize_oai_content_array).
std::vector<int32_t> read_input(const Json& item, const std::string& field, const tokenizer::Tokenizer& tok) {
  const auto content = item.is_object() ? item.find("content") : item.end();
  if (content == item.end()) return read_native_prompt(item, tok, field);
  if (!content->is_array()) reject_field(field + ".content", "must be an array of text parts");
  std::string text;
  for (size_t i = 0; i < content->size(); ++i) {
    const Json& part = (*content)[i];
    const std::string at = fmt::format("{}.content[{}]", field, i);
    if (!part.is_object() || part.value("type", Json()) != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      reject_field(at, "must be {\"type\": \"text\", \"text\": ...}: this server embeds text only");
    }
    text += part["text"].get<std::string>();
  }
  return read_native_prompt(Json(text), tok, field);
}

bool holds_a_number(const Json& array) {
  return std::any_of(array.begin(), array.end(), [](const Json& v) { return v.is_number(); });
}

void append_vector(std::string& out, std::span<const float> v) {
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    if (std::isfinite(v[i])) {
      fmt::format_to(std::back_inserter(out), "{}", v[i]);
    } else {
      out += "null";  // JSON has no NaN or infinity
    }
  }
  out += ']';
}

}  // namespace

EmbeddingRequest parse_embedding_request(std::string_view body, const tokenizer::Tokenizer& tok, int n_ctx) {
  const ParsedBody parsed(body);
  const Json& json = parsed.json();
  EmbeddingRequest r;
  std::string field = "input";
  auto it = json.find("input");
  if (it == json.end() || it->is_null()) {
    it = json.find("content");
    field = "content";
    r.native = true;
  }
  if (it == json.end() || it->is_null()) reject_field("input", "is required (or 'content')");
  const Json& input = *it;
  if (input.is_array() && input.empty()) reject_field(field, "is an empty array");
  // As llama-server: an array holding no number is a list of inputs.
  const bool single = !input.is_array() || holds_a_number(input);
  if (single) {
    r.inputs.push_back(read_input(input, field, tok));
  } else {
    for (size_t i = 0; i < input.size(); ++i) {
      r.inputs.push_back(read_input(input[i], fmt::format("{}[{}]", field, i), tok));
    }
  }
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const std::string name = single ? field : fmt::format("{}[{}]", field, i);
    const size_t n = r.inputs[i].size();
    if (n == 0) reject_field(name, "gives no tokens: input content cannot be empty");
    if (n > static_cast<size_t>(n_ctx)) {
      reject_field(name, fmt::format("is too large to process: {} tokens, more than the context of a slot "
                                     "({} tokens)", n, n_ctx));
    }
  }
  r.embd_normalize = static_cast<int>(read_int(json, "embd_normalize", -1, 1000).value_or(2));
  if (const std::optional<std::string> f = read_string(json, "encoding_format")) {
    if (*f != "float" && *f != "base64") reject_field("encoding_format", "must be \"float\" or \"base64\"");
    r.base64 = *f == "base64";
  }
  return r;
}

std::string native_embeddings_json(const std::vector<InputEmbeddings>& inputs) {
  std::string out = "[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), R"({{"index":{},"embedding":[)", i);
    for (size_t k = 0; k < inputs[i].size(); ++k) {
      if (k > 0) out += ',';
      append_vector(out, inputs[i][k]);
    }
    out += "]}";
  }
  out += ']';
  return out;
}

std::string openai_embeddings_json(const std::vector<InputEmbeddings>& inputs, bool base64,
                                   const std::string& model, int64_t prompt_tokens) {
  std::string out = R"({"object":"list","data":[)";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<float>& v = inputs[i].front();
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), R"({{"object":"embedding","index":{},"embedding":)", i);
    if (base64) {
      // F32 as the machine stores it: little-endian on every target we build for, as OpenAI's clients read it.
      std::vector<uint8_t> bytes(v.size() * sizeof(float));
      std::memcpy(bytes.data(), v.data(), bytes.size());
      out += '"' + base64_encode(bytes) + '"';
    } else {
      append_vector(out, v);
    }
    out += '}';
  }
  fmt::format_to(std::back_inserter(out), R"(],"model":{},"usage":{{"prompt_tokens":{},"total_tokens":{}}}}})",
                 dump(Json(model)), prompt_tokens, prompt_tokens);
  return out;
}

std::string base64_encode(std::span<const uint8_t> bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = uint32_t{bytes[i]} << 16 | uint32_t{bytes[i + 1]} << 8 | bytes[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(n >> s) & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    const uint32_t n = uint32_t{bytes[i]} << 16 | (rest == 2 ? uint32_t{bytes[i + 1]} << 8 : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace cohort::server
