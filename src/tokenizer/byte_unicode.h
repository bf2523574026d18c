// The GPT-2 byte <-> unicode table of byte-level BPE vocabularies.
//
// Byte-level BPE stores every token as text in which each raw byte is one
// printable code point: bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF stand for
// themselves, and the 68 others map, in byte order, to U+0100..U+0143 (so a
// space is 'Ġ' U+0120 and a newline 'Ċ' U+010A).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cohort::tokenizer {

// The code point that stands for `byte`.
uint32_t byte_to_codepoint(uint8_t byte);

// The byte a code point stands for, or -1 when it is not in the table.
int codepoint_to_byte(uint32_t cpt);

// Raw bytes -> table text (each byte becomes one code point, in UTF-8).
std::string bytes_to_table_text(std::string_view raw);

// Appends the table text of `raw` to `out`.
void append_table_text(std::string_view raw, std::string& out);

// True when `text` is the table text of some bytes (canonical UTF-8, every
// code point in the table).
bool is_table_text(std::string_view text);

// Table text -> raw bytes; nullopt when the text holds a code point that is
// not in the table, or ill-formed UTF-8.
std::optional<std::string> table_text_to_bytes(std::string_view text);

}  // namespace cohort::tokenizer
