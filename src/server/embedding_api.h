// The body of an embeddings request and the text of its answer, as
// llama-server's POST /embedding and /embeddings (native) and
// /v1/embeddings (OpenAI) have them.
//
// Request fields: `input` (or, as llama-server, `content`, which makes the
// answer native even on /v1/embeddings): one input, or an array holding no
// number, a list of inputs (as llama-server). An input is a native prompt
// (native_prompt.h: a string, token ids, ids and strings mixed,
// {"prompt_string": text}) or {"content": [text parts]} (their texts
// joined); `embd_normalize` (an integer >= -1, default 2: see
// engine::normalize_embedding; with pooling none the vectors are never
// normalised, as llama-server); `encoding_format` "float" (default) or
// "base64"; `model` and `user` are accepted and not used. Strings are
// tokenized with add_special and parse_special, as llama-server. An empty
// input, one longer than the context of a slot, or a field of the wrong
// type is a RequestError 400 naming the field.
//
// Answers: native, an array of {"index": i, "embedding": [[...], ...]}
// (one vector when pooled, one per token with pooling none); OpenAI,
// {"object": "list", "data": [{"object": "embedding", "index": i,
// "embedding": [...] or base64 of the little-endian F32 bytes}], "model",
// "usage": {"prompt_tokens", "total_tokens"}}.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace cohort::server {

struct EmbeddingRequest {
  std::vector<std::vector<int32_t>> inputs;  // one token sequence per input, each non-empty
  int embd_normalize = 2;                     // -1 none, 0 max abs (int16 range), 2 L2, p > 0 p-norm
  bool base64 = false;                        // encoding_format "base64"
  bool native = false;                        // answered in the native form (`content` was given)
};

// REQUIRES: tok outlives the call; n_ctx >= 1 (the most tokens of an input).
EmbeddingRequest parse_embedding_request(std::string_view body, const tokenizer::Tokenizer& tok, int n_ctx);

// The embeddings of one input: one vector when pooled, one per token
// with pooling none.
using InputEmbeddings = std::vector<std::vector<float>>;

std::string native_embeddings_json(const std::vector<InputEmbeddings>& inputs);
// REQUIRES: every input holds one vector (pooled).
std::string openai_embeddings_json(const std::vector<InputEmbeddings>& inputs, bool base64,
                                   const std::string& model, int64_t prompt_tokens);

// Standard base64 (RFC 4648, with padding).
std::string base64_encode(std::span<const uint8_t> bytes);

}  // namespace cohort::server
