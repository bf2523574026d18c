// UTF-8 helpers with the exact leniency of llama.cpp's tokenizer, so that
// ill-formed input is tokenized to the same ids.
//
// llama.cpp decodes text leniently before the BPE pre-tokenizer: a lead byte
// followed by the right number of continuation bytes is accepted even when the
// sequence is overlong or encodes a surrogate; anything else decodes to U+FFFD
// one byte at a time. The code points are then re-encoded, so the bytes the
// BPE model sees are the *normalized* form. normalize_utf8() reproduces that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cohort::tokenizer {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of a UTF-8 sequence judged by its first byte alone (1 for stray
// continuation bytes), as llama.cpp's SPM tokenizer splits symbols.
inline size_t utf8_lead_length(uint8_t lead) {
  static constexpr uint8_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

// One code point decoded leniently at `pos` (REQUIRES: pos < text.size()).
// `length` is the number of bytes consumed (>= 1); `valid` is false when the
// bytes did not form a sequence, in which case cpt is U+FFFD and length 1.
struct LenientCodepoint {
  uint32_t cpt;
  size_t length;
  bool valid;
};
LenientCodepoint decode_lenient(std::string_view text, size_t pos);

// Appends the UTF-8 encoding of cpt (REQUIRES: cpt <= 0x10FFFF; surrogates are
// encoded as three bytes, as llama.cpp does).
void append_utf8(std::string& out, uint32_t cpt);

// True when `text` is well-formed UTF-8 (no overlong forms, no surrogates,
// nothing above U+10FFFF).
bool is_valid_utf8(std::string_view text);

// The text llama.cpp's BPE path works on: every code point decoded leniently
// and re-encoded; undecodable bytes and code points above U+10FFFF become
// U+FFFD. Equal to `text` when text is valid UTF-8.
std::string normalize_utf8(std::string_view text);

// Well-formed UTF-8 for display: each maximal ill-formed subpart (the bytes
// of a sequence up to where it went wrong, at least one) becomes one U+FFFD.
std::string to_valid_utf8(std::string_view text);

// Number of leading bytes of `text` that can be emitted now: all of it,
// except a trailing *prefix* of a well-formed sequence that later bytes may
// complete (at most 3 bytes).
size_t utf8_emittable_prefix(std::string_view text);

}  // namespace cohort::tokenizer
