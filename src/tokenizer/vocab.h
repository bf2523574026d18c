// A tokenizer vocabulary read from GGUF metadata (the tokenizer.ggml.* keys),
// with the defaults and the adjustments llama.cpp applies when it loads one,
// so that ids, special tokens and end-of-generation tokens agree with it.
//
// Owns all token texts. Immutable after from_metadata(); safe to share
// between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "gguf/value.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/string_index.h"

namespace cohort::tokenizer {

inline constexpr int32_t kNoToken = -1;

enum class VocabType {
  kBpe,  // tokenizer.ggml.model = gpt2: byte-level BPE with merges
  kSpm,  // tokenizer.ggml.model = llama: SentencePiece-style, merges by score
};

// Token attributes, as bits (llama_token_attr values). token_type values in
// GGUF (1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte)
// map to one bit each; load-time rules may add bits.
namespace attr {
inline constexpr uint32_t kUndefined = 0;
inline constexpr uint32_t kUnknown = 1u << 0;
inline constexpr uint32_t kUnused = 1u << 1;
inline constexpr uint32_t kNormal = 1u << 2;
inline constexpr uint32_t kControl = 1u << 3;
inline constexpr uint32_t kUserDefined = 1u << 4;
inline constexpr uint32_t kByte = 1u << 5;
inline constexpr uint32_t kLstrip = 1u << 7;  // eat white space before, when matched as special
inline constexpr uint32_t kRstrip = 1u << 8;  // eat white space after
}  // namespace attr

struct TokenData {
  std::string text;  // as stored in GGUF (byte-level table text for BPE, '▁' for SPM)
  float score = 0.0f;
  uint32_t attr = attr::kNormal;
};

class Vocab {
 public:
  // Throws cohort::Error naming the key or value at fault: missing or
  // mistyped tokenizer.ggml.tokens, an unsupported tokenizer.ggml.model
  // (supported: gpt2, llama), an unknown tokenizer.ggml.pre, array lengths
  // that do not match the token count, two tokens with the same text.
  static Vocab from_metadata(const gguf::Metadata& md);

  VocabType type() const { return type_; }
  const std::string& model_name() const { return model_; }  // tokenizer.ggml.model
  const PreTypeInfo& pre_type() const { return *pre_; }
  int32_t n_tokens() const { return static_cast<int32_t>(tokens_.size()); }
  const TokenData& token(int32_t id) const { return tokens_[id]; }
  // Exact text -> id; kNoToken if absent.
  int32_t find(std::string_view text) const;
  // The index itself, for batched lookups.
  const StringIndex& index() const { return index_; }

  int32_t bos() const { return bos_; }
  int32_t eos() const { return eos_; }
  int32_t eot() const { return eot_; }
  int32_t unk() const { return unk_; }
  int32_t pad() const { return pad_; }
  int32_t sep() const { return sep_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  bool clean_spaces() const { return clean_spaces_; }
  bool ignore_merges() const { return pre_->ignore_merges; }
  bool is_eog(int32_t id) const { return eog_.count(id) != 0; }
  const std::unordered_set<int32_t>& eog_ids() const { return eog_; }

  // Control, user-defined and unknown tokens, longest text first: the
  // candidates for special-token matching in raw text.
  const std::vector<int32_t>& special_tokens() const { return special_tokens_; }
  // SPM byte-fallback token for a byte ("<0xAB>", else the one-byte text);
  // kNoToken if the vocabulary has neither.
  int32_t byte_token(uint8_t byte) const { return byte_tokens_[byte]; }
  // The byte of a BYTE token ("<0xAB>" -> 0xAB).
  static uint8_t byte_of(const TokenData& t);

 private:
  Vocab() = default;
  void read_model(const gguf::Metadata& md);
  void read_tokens(const gguf::Metadata& md);
  void read_special_ids(const gguf::Metadata& md);
  void detect_special_by_text();
  void build_eog();
  void build_caches(const gguf::Metadata& md);

  VocabType type_ = VocabType::kBpe;
  std::string model_;
  const PreTypeInfo* pre_ = nullptr;
  std::vector<TokenData> tokens_;
  StringIndex index_;

  int32_t bos_ = kNoToken, eos_ = kNoToken, eot_ = kNoToken, eom_ = kNoToken, unk_ = kNoToken;
  int32_t sep_ = kNoToken, pad_ = kNoToken, mask_ = kNoToken;
  int32_t fim_pre_ = kNoToken, fim_suf_ = kNoToken, fim_mid_ = kNoToken;
  int32_t fim_pad_ = kNoToken, fim_rep_ = kNoToken, fim_sep_ = kNoToken;
  bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false, clean_spaces_ = false;

  std::unordered_set<int32_t> eog_;
  std::vector<int32_t> special_tokens_;
  int32_t byte_tokens_[256] = {};
};

}  // namespace cohort::tokenizer
