// UTF-8 text as Python's `str` sees it: a sequence of code points.
//
// Template values keep strings as UTF-8 bytes; operations that Python defines
// on code points (len, indexing, slicing, isspace, upper/lower) decode first.
// Bytes that are not valid UTF-8 decode to private "raw byte" code points
// (kRawByteBase + byte) and encode back to the same byte, so no input is lost
// or rejected.
//
// Case mapping covers ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic;
// other scripts are left unchanged (Python would map a few more).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cohort::chat::utf8 {

inline constexpr char32_t kRawByteBase = 0x110000;

// Decodes the code point at s[i] and advances i past it. REQUIRES: i < s.size().
char32_t next(std::string_view s, size_t& i);
void append(std::string& out, char32_t cp);

std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);
// Number of code points.
size_t length(std::string_view s);

// Python's str.isspace() for one code point.
bool is_space(char32_t cp);
// A line boundary for str.splitlines() (\r\n is handled by the caller).
bool is_line_break(char32_t cp);
// Python's str.isprintable() for one code point (approximate outside Latin-1).
bool is_printable(char32_t cp);
bool is_alpha(char32_t cp);
bool is_digit(char32_t cp);
bool is_upper(char32_t cp);
bool is_lower(char32_t cp);

// Python's str.upper()/lower(), code point by code point ('ß' upper is "SS").
std::string upper(std::string_view s);
std::string lower(std::string_view s);
void append_upper(std::string& out, char32_t cp);
char32_t to_lower(char32_t cp);
char32_t to_upper_simple(char32_t cp);

// Python's str.strip()/lstrip()/rstrip() with whitespace (chars == nullptr)
// or with the given set of code points.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);

}  // namespace cohort::chat::utf8
