#include "tokenizer/byte_unicode.h"

#include <array>

#include "tokenizer/utf8.h"

namespace cohort::tokenizer {
namespace {

bool stands_for_itself(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteTable {
  std::array<uint32_t, 256> to_cpt{};
  std::array<int16_t, 0x144> to_byte{};  // every mapped code point is below U+0144

  ByteTable() {
    to_byte.fill(-1);
    uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      to_cpt[b] = stands_for_itself(b) ? static_cast<uint32_t>(b) : next++;
      to_byte[to_cpt[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteTable& table() {
  static const ByteTable t;
  return t;
}

}  // namespace

uint32_t byte_to_codepoint(uint8_t byte) { return table().to_cpt[byte]; }

int codepoint_to_byte(uint32_t cpt) {
  return cpt < table().to_byte.size() ? table().to_byte[cpt] : -1;
}

void append_table_text(std::string_view raw, std::string& out) {
  for (char c : raw) append_utf8(out, byte_to_codepoint(static_cast<uint8_t>(c)));
}

std::string bytes_to_table_text(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  append_table_text(raw, out);
  return out;
}

bool is_table_text(std::string_view text) {
  if (!is_valid_utf8(text)) return false;
  size_t pos = 0;
  while (pos < text.size()) {
    const LenientCodepoint c = decode_lenient(text, pos);
    if (codepoint_to_byte(c.cpt) < 0) return false;
    pos += c.length;
  }
  return true;
}

std::optional<std::string> table_text_to_bytes(std::string_view text) {
  if (!is_valid_utf8(text)) return std::nullopt;  // only canonical encodings round trip
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const LenientCodepoint c = decode_lenient(text, pos);
    const int b = c.valid ? codepoint_to_byte(c.cpt) : -1;
    if (b < 0) return std::nullopt;
    out.push_back(static_cast<char>(b));
    pos += c.length;
  }
  return out;
}

}  // namespace cohort::tokenizer
