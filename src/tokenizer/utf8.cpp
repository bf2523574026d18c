#include "tokenizer/utf8.h"

namespace cohort::tokenizer {
namespace {

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// The strictly well-formed sequence at `pos`: its length, or 0 if there is
// none; then `prefix` is the length of the longest prefix that was still
// valid (at least 1: what one U+FFFD replaces), and `incomplete` says the
// text ended inside a valid prefix.
struct StrictSequence {
  size_t length = 0;
  size_t prefix = 1;
  bool incomplete = false;
};

StrictSequence strict_sequence(std::string_view text, size_t pos) {
  const auto b0 = static_cast<uint8_t>(text[pos]);
  if (b0 < 0x80) return {1, 1, false};
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {};
  }
  for (size_t i = 1; i < n; ++i) {
    if (pos + i >= text.size()) return {0, i, true};
    const auto b = static_cast<uint8_t>(text[pos + i]);
    const uint8_t min = i == 1 ? lo : 0x80, max = i == 1 ? hi : 0xBF;
    if (b < min || b > max) return {0, i, false};
  }
  return {n, n, false};
}

}  // namespace

LenientCodepoint decode_lenient(std::string_view text, size_t pos) {
  const auto b0 = static_cast<uint8_t>(text[pos]);
  if (b0 < 0x80) return {b0, 1, true};
  size_t n = 0;
  uint32_t cpt = 0;
  if ((b0 & 0x40) == 0) {
    return {kReplacementChar, 1, false};  // stray continuation byte
  } else if ((b0 & 0x20) == 0) {
    n = 2;
    cpt = b0 & 0x1Fu;
  } else if ((b0 & 0x10) == 0) {
    n = 3;
    cpt = b0 & 0x0Fu;
  } else if ((b0 & 0x08) == 0) {
    n = 4;
    cpt = b0 & 0x07u;
  } else {
    return {kReplacementChar, 1, false};
  }
  if (pos + n > text.size()) return {kReplacementChar, 1, false};
  for (size_t i = 1; i < n; ++i) {
    const auto b = static_cast<uint8_t>(text[pos + i]);
    if (!is_continuation(b)) return {kReplacementChar, 1, false};
    cpt = (cpt << 6) | (b & 0x3Fu);
  }
  return {cpt, n, true};
}

void append_utf8(std::string& out, uint32_t cpt) {
  if (cpt < 0x80) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

bool is_valid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // ASCII fast path, eight bytes at a time.
    while (pos + 8 <= text.size()) {
      uint64_t word = 0;
      for (size_t i = 0; i < 8; ++i) word |= static_cast<uint64_t>(static_cast<uint8_t>(text[pos + i])) << (8 * i);
      if (word & 0x8080808080808080ull) break;
      pos += 8;
    }
    if (pos >= text.size()) break;
    const size_t n = strict_sequence(text, pos).length;
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

std::string normalize_utf8(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  size_t pos = 0;
  while (pos < text.size()) {
    const LenientCodepoint c = decode_lenient(text, pos);
    // llama.cpp cannot encode code points above U+10FFFF (it throws); they
    // are replaced here instead, as one U+FFFD for the whole sequence.
    append_utf8(out, c.cpt <= 0x10FFFF ? c.cpt : kReplacementChar);
    pos += c.length;
  }
  return out;
}

std::string to_valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const StrictSequence seq = strict_sequence(text, pos);
    if (seq.length == 0) {
      append_utf8(out, kReplacementChar);  // one per maximal ill-formed subpart
      pos += seq.prefix;
      continue;
    }
    out.append(text.substr(pos, seq.length));
    pos += seq.length;
  }
  return out;
}

size_t utf8_emittable_prefix(std::string_view text) {
  // Only the last three bytes can start an incomplete sequence.
  const size_t first = text.size() > 3 ? text.size() - 3 : 0;
  for (size_t pos = first; pos < text.size(); ++pos) {
    const auto b = static_cast<uint8_t>(text[pos]);
    if (b < 0xC2 || b > 0xF4) continue;  // not a lead byte
    if (strict_sequence(text, pos).incomplete) return pos;
  }
  return text.size();
}

}  // namespace cohort::tokenizer
