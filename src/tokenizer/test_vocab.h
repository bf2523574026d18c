// Small vocabularies built in memory for the tokenizer's unit tests.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "gguf/value.h"
#include "tokenizer/byte_unicode.h"

namespace cohort::tokenizer::testing {

inline gguf::Value string_array(const std::vector<std::string>& items) {
  gguf::Array a;
  a.elem_type = gguf::ValueType::STRING;
  for (const std::string& s : items) a.items.emplace_back(s);
  return gguf::Value(std::move(a));
}

template <typename T>
gguf::Value number_array(gguf::ValueType type, const std::vector<T>& items) {
  gguf::Array a;
  a.elem_type = type;
  for (T v : items) a.items.emplace_back(v);
  return gguf::Value(std::move(a));
}

// A byte-level BPE vocabulary: the 256 byte tokens, then one token per merge
// (raw byte pairs, applied in order), then `extra` tokens with their types.
struct BpeSpec {
  std::string pre = "gpt-2";
  std::vector<std::pair<std::string, std::string>> merges = {};  // raw bytes
  std::vector<std::pair<std::string, int32_t>> extra = {};  // table text, token_type
};

inline gguf::Metadata bpe_metadata(const BpeSpec& spec) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(bytes_to_table_text(std::string(1, static_cast<char>(b))));
    types.push_back(1);
  }
  std::vector<std::string> merges;
  for (const auto& [l, r] : spec.merges) {
    merges.push_back(bytes_to_table_text(l) + " " + bytes_to_table_text(r));
    tokens.push_back(bytes_to_table_text(l + r));
    types.push_back(1);
  }
  for (const auto& [text, type] : spec.extra) {
    tokens.push_back(text);
    types.push_back(type);
  }
  gguf::Metadata md;
  md.set("general.architecture", gguf::Value("llama"));
  md.set("tokenizer.ggml.model", gguf::Value("gpt2"));
  md.set("tokenizer.ggml.pre", gguf::Value(spec.pre));
  md.set("tokenizer.ggml.tokens", string_array(tokens));
  md.set("tokenizer.ggml.token_type", number_array(gguf::ValueType::INT32, types));
  md.set("tokenizer.ggml.merges", string_array(merges));
  return md;
}

// A SentencePiece-style vocabulary: <unk> <s> </s>, the 256 byte tokens,
// then `pieces` (text with U+2581 for spaces, score), then `extra`.
struct SpmSpec {
  std::vector<std::pair<std::string, float>> pieces = {};
  std::vector<std::pair<std::string, int32_t>> extra = {};  // text, token_type
  bool byte_tokens = true;
};

// The id of byte b's token in an spm_metadata vocabulary with byte tokens.
constexpr int32_t spm_byte_id(uint8_t b) { return 3 + b; }

inline gguf::Metadata spm_metadata(const SpmSpec& spec) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  if (spec.byte_tokens) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      tokens.push_back(name);
      scores.push_back(0);
      types.push_back(6);
    }
  }
  for (const auto& [text, score] : spec.pieces) {
    tokens.push_back(text);
    scores.push_back(score);
    types.push_back(1);
  }
  for (const auto& [text, type] : spec.extra) {
    tokens.push_back(text);
    scores.push_back(0);
    types.push_back(type);
  }
  gguf::Metadata md;
  md.set("general.architecture", gguf::Value("llama"));
  md.set("tokenizer.ggml.model", gguf::Value("llama"));
  md.set("tokenizer.ggml.tokens", string_array(tokens));
  md.set("tokenizer.ggml.scores", number_array(gguf::ValueType::FLOAT32, scores));
  md.set("tokenizer.ggml.token_type", number_array(gguf::ValueType::INT32, types));
  return md;
}

}  // namespace cohort::tokenizer::testing
