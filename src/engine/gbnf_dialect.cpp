#include "engine/gbnf_dialect.h"

namespace cohort::engine {
namespace {

// Every code point: llama.cpp's `.` (its grammar parser's "any character").
constexpr std::string_view kAnyCodePoint = R"([\u0000-\U0010FFFF])";

// The position after blanks, newlines and # comments from `i`.
size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size()) {
    if (s[i] == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
      ++i;
    } else {
      break;
    }
  }
  return i;
}

// The position after the quoted string or character class opening at `i`
// (`close` is its closing character; backslash escapes skipped).
size_t skip_quoted(std::string_view s, size_t i, char close) {
  for (++i; i < s.size() && s[i] != close; ++i) {
    if (s[i] == '\\') ++i;
  }
  return i < s.size() ? i + 1 : i;
}

}  // namespace

std::string rewrite_llama_gbnf(std::string_view gbnf) {
  std::string out;
  out.reserve(gbnf.size() + 16);
  size_t i = 0;
  while (i < gbnf.size()) {
    const char c = gbnf[i];
    if (c == '.') {  // outside strings, classes and comments: no rule name holds one
      out.append(kAnyCodePoint);
      ++i;
      continue;
    }
    size_t next = i + 1;
    if (c == '"') {
      next = skip_quoted(gbnf, i, '"');
    } else if (c == '[') {
      next = skip_quoted(gbnf, i, ']');
    } else if (c == '#') {
      next = skip_space(gbnf, i);
    } else if (gbnf.substr(i, 3) == "::=") {
      next = i + 3;
    }
    out.append(gbnf.substr(i, next - i));
    const bool opens = c == '|' || c == '(' || (c == ':' && next == i + 3);
    if (opens) {
      const size_t j = skip_space(gbnf, next);
      if (j == gbnf.size() || gbnf[j] == '|' || gbnf[j] == ')') out.append(" \"\"");
    }
    i = next;
  }
  return out;
}

}  // namespace cohort::engine
