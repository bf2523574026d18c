// Text rules of HTTP/1.1 message heads, shared by the server (server/) and
// the client of `cohort bench-serve` (tools/): ASCII case folding for field
// names and codings, optional whitespace around field values, and lines
// ended by CR LF (a bare LF is accepted).
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace cohort::http_text {

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// s without leading and trailing spaces and tabs.
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits off the next line (without CR LF / LF); false at the end.
inline bool next_line(std::string_view& rest, std::string_view& line) {
  if (rest.empty()) return false;
  const size_t nl = rest.find('\n');
  line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return true;
}

}  // namespace cohort::http_text
