// Pre-tokenization of byte-level BPE: the regex splits that llama.cpp applies
// per `tokenizer.ggml.pre` name, compiled once with PCRE2 (JIT).
//
// A pre-tokenizer type holds an ordered list of regexes. The first splits the
// text into matches and the gaps between them; each further regex splits
// every piece again, never across piece boundaries (that is llama.cpp's
// unicode_regex_split). The pieces, in order, are the words BPE merges within.
//
// Thread safety: a PreTokenizer is immutable after construction; split() may
// run concurrently (per-thread PCRE2 match state).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cohort::tokenizer {

// What a `tokenizer.ggml.pre` name implies besides its regexes (llama.cpp's
// per-name vocabulary defaults; GGUF keys may override add_bos).
struct PreTypeInfo {
  std::string_view name;
  std::span<const std::string_view> regexes;
  bool clean_spaces = true;    // detokenize drops spaces before . , ! ? etc.
  bool ignore_merges = false;  // a word that is a whole token is not merged
  bool add_bos = false;        // default of tokenizer.ggml.add_bos_token
  bool no_bos = false;         // the type has no BOS token unless the GGUF names one
};

// REQUIRES nothing; throws cohort::Error naming `name` and listing the
// supported names when it is unknown. An empty name means "default", as in
// llama.cpp.
const PreTypeInfo& find_pre_type(std::string_view name);

// Comma-separated list of every supported name.
std::string supported_pre_types();

// A piece of the input: [offset, offset + length).
struct TextSpan {
  uint32_t offset;
  uint32_t length;
};

class MatchState;  // per-thread PCRE2 state, pre_tokenizer.cpp

class PreTokenizer {
 public:
  // Compiles the type's regexes; throws cohort::Error if PCRE2 refuses one.
  explicit PreTokenizer(const PreTypeInfo& type);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Splits `text` (REQUIRES: well-formed UTF-8 apart from surrogate code
  // points, as normalize_utf8() returns) into non-empty pieces that cover it
  // in order. Throws cohort::Error if the regex engine gives up (resource
  // limits on pathological input).
  std::vector<TextSpan> split(std::string_view text) const;
  // The same pieces, handed to `emit` one by one as they are found.
  void split(std::string_view text, const std::function<void(TextSpan)>& emit) const;

 private:
  struct Compiled;
  void split_level(size_t level, std::string_view text, uint32_t base, MatchState& state,
                   const std::function<void(TextSpan)>& emit) const;
  std::vector<std::unique_ptr<Compiled>> regexes_;
};

}  // namespace cohort::tokenizer
