#include "chat/lexer.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>

#include "chat/unicode.h"

namespace cohort::chat {
namespace {

// Jinja normalizes every line ending to \n and drops one trailing newline.
std::string normalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool all_space(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (!utf8::is_space(utf8::next(s, i))) return false;
  }
  return true;
}

bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_ascii_digit(c); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr const char* kTwoCharOps[] = {"//", "**", "==", "!=", ">=", "<="};
constexpr std::string_view kOneCharOps = "+-/*%~[](){}><=.:|,;";

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize(source)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    size_t pos = 0;
    while (pos < src_.size()) pos = lex_root(pos);
    Token end;
    end.type = TokenType::End;
    end.pos = pos_at(src_.size());
    out_.push_back(end);
    return std::move(out_);
  }

 private:
  SourcePos pos_at(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    const size_t start = line_starts_[line - 1];
    return {static_cast<int>(line), static_cast<int>(offset - start + 1)};
  }

  [[noreturn]] void error(size_t offset, const std::string& what) const {
    throw located_error(ErrorKind::Syntax, pos_at(offset), what);
  }

  void emit(TokenType type, size_t offset, std::string value = {}) {
    Token t;
    t.type = type;
    t.value = std::move(value);
    t.pos = pos_at(offset);
    out_.push_back(std::move(t));
  }

  size_t skip_space(size_t pos) const {
    while (pos < src_.size()) {
      size_t next = pos;
      if (!utf8::is_space(utf8::next(src_, next))) break;
      pos = next;
    }
    return pos;
  }

  bool starts_with(size_t pos, std::string_view s) const {
    return src_.compare(pos, s.size(), s) == 0;
  }

  // Whitespace control for the text before a tag (jinja2 OptionalLStrip).
  std::string strip_before(std::string text, char sign, bool lstrip_allowed) const {
    if (sign == '-') return utf8::strip(text, nullptr, false, true);
    if (sign == '+' || !lstrip_allowed) return text;
    const size_t nl = text.rfind('\n');
    const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if ((l_pos > 0 || line_starting_) && l_pos < text.size() &&
        all_space(std::string_view(text).substr(l_pos))) {
      text.resize(l_pos);
    }
    return text;
  }

  void emit_data(std::string text, size_t offset) {
    if (!text.empty()) emit(TokenType::Data, offset, std::move(text));
  }

  // `{%[-+]?\s*raw\s*(-%}\s*|%})` at p; returns the end offset or npos.
  size_t match_raw_begin(size_t p) const {
    size_t q = p + 2;
    if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) ++q;
    q = skip_space(q);
    if (!starts_with(q, "raw")) return std::string::npos;
    q = skip_space(q + 3);
    if (starts_with(q, "-%}")) return skip_space(q + 3);
    if (starts_with(q, "%}")) return q + 2;
    return std::string::npos;
  }

  size_t lex_root(size_t pos) {
    size_t p = pos;
    while (true) {
      p = src_.find('{', p);
      if (p == std::string::npos || p + 1 >= src_.size()) {
        emit_data(src_.substr(pos), pos);
        return src_.size();
      }
      const char k = src_[p + 1];
      if (k == '{' || k == '%' || k == '#') break;
      ++p;
    }
    const char kind = src_[p + 1];
    size_t after = p + 2;
    char sign = 0;
    if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) sign = src_[after++];
    const size_t raw_end = kind == '%' ? match_raw_begin(p) : std::string::npos;
    emit_data(strip_before(src_.substr(pos, p - pos), sign, kind != '{'), pos);
    line_starting_ = false;
    if (raw_end != std::string::npos) {
      line_starting_ = src_[raw_end - 1] == '\n';
      return lex_raw(p, raw_end);
    }
    if (kind == '#') return lex_comment(p, after);
    return lex_tag(p, after, kind == '%');
  }

  size_t lex_raw(size_t begin, size_t start) {
    for (size_t q = src_.find("{%", start); q != std::string::npos; q = src_.find("{%", q + 1)) {
      size_t r = q + 2;
      char sign = 0;
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) sign = src_[r++];
      r = skip_space(r);
      if (!starts_with(r, "endraw")) continue;
      r = skip_space(r + 6);
      size_t end;
      if (starts_with(r, "+%}")) {
        end = r + 3;
      } else if (starts_with(r, "-%}")) {
        end = skip_space(r + 3);
      } else if (starts_with(r, "%}")) {
        end = r + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      emit_data(strip_before(src_.substr(start, q - start), sign, true), start);
      line_starting_ = src_[end - 1] == '\n';
      return end;
    }
    error(begin, "missing end of raw directive ({% endraw %})");
  }

  size_t lex_comment(size_t begin, size_t start) {
    const size_t q = src_.find("#}", start);
    if (q == std::string::npos) error(begin, "missing end of comment tag (#})");
    size_t end = q + 2;
    const char sign = q > start ? src_[q - 1] : 0;
    if (sign == '-') {
      end = skip_space(end);
    } else if (sign != '+' && end < src_.size() && src_[end] == '\n') {
      ++end;
    }
    line_starting_ = src_[end - 1] == '\n';
    return end;
  }

  // The end of a tag at pos, or npos: `+%}`, `-%}\s*`, `%}\n?` / `-}}\s*`, `}}`.
  size_t match_tag_end(size_t pos, bool block) const {
    if (block) {
      if (starts_with(pos, "+%}")) return pos + 3;
      if (starts_with(pos, "-%}")) return skip_space(pos + 3);
      if (starts_with(pos, "%}")) {
        return (pos + 2 < src_.size() && src_[pos + 2] == '\n') ? pos + 3 : pos + 2;
      }
      return std::string::npos;
    }
    if (starts_with(pos, "-}}")) return skip_space(pos + 3);
    if (starts_with(pos, "}}")) return pos + 2;
    return std::string::npos;
  }

  size_t lex_tag(size_t begin, size_t pos, bool block) {
    emit(block ? TokenType::BlockBegin : TokenType::VariableBegin, begin);
    std::string balance;  // closing brackets expected, innermost last
    while (true) {
      if (pos >= src_.size()) {
        error(begin, block ? "unexpected end of template: '{%' is never closed"
                           : "unexpected end of template: '{{' is never closed");
      }
      if (balance.empty()) {
        const size_t end = match_tag_end(pos, block);
        if (end != std::string::npos) {
          emit(block ? TokenType::BlockEnd : TokenType::VariableEnd, pos);
          line_starting_ = src_[end - 1] == '\n';
          return end;
        }
      }
      const size_t ws = skip_space(pos);
      if (ws != pos) {
        pos = ws;
        continue;
      }
      pos = lex_token(pos, balance);
    }
  }

  size_t lex_token(size_t pos, std::string& balance) {
    if (size_t end = lex_number(pos); end != pos) return end;
    const char c = src_[pos];
    if (is_name_start(c)) {
      size_t e = pos + 1;
      while (e < src_.size() && is_name_char(src_[e])) ++e;
      emit(TokenType::Name, pos, src_.substr(pos, e - pos));
      return e;
    }
    if (c == '\'' || c == '"') return lex_string(pos);
    for (const char* op : kTwoCharOps) {
      if (starts_with(pos, op)) {
        emit(TokenType::Operator, pos, op);
        return pos + 2;
      }
    }
    if (kOneCharOps.find(c) == std::string_view::npos) {
      size_t next = pos;
      std::string ch;
      utf8::append(ch, utf8::next(src_, next));
      error(pos, fmt::format("unexpected character '{}'", ch));
    }
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) error(pos, fmt::format("unexpected '{}'", c));
      if (balance.back() != c) error(pos, fmt::format("unexpected '{}', expected '{}'", c, balance.back()));
      balance.pop_back();
    }
    emit(TokenType::Operator, pos, std::string(1, c));
    return pos + 1;
  }

  // `(\d+_)*\d+` at pos: end offset, or npos.
  size_t digit_group(size_t pos) const {
    if (pos >= src_.size() || !is_ascii_digit(src_[pos])) return std::string::npos;
    size_t e = pos;
    while (true) {
      while (e < src_.size() && is_ascii_digit(src_[e])) ++e;
      if (e + 1 < src_.size() && src_[e] == '_' && is_ascii_digit(src_[e + 1])) {
        ++e;
        continue;
      }
      return e;
    }
  }

  size_t exponent(size_t pos) const {
    if (pos >= src_.size() || (src_[pos] != 'e' && src_[pos] != 'E')) return std::string::npos;
    size_t q = pos + 1;
    if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
    return digit_group(q);
  }

  static std::string without_underscores(std::string_view s) {
    std::string out;
    for (char c : s) {
      if (c != '_') out += c;
    }
    return out;
  }

  // Float, then integer literal, as jinja2's float_re and integer_re; returns
  // pos unchanged when neither matches.
  size_t lex_number(size_t pos) {
    if (pos >= src_.size() || !is_ascii_digit(src_[pos])) return pos;
    const size_t g = (pos > 0 && src_[pos - 1] == '.') ? std::string::npos : digit_group(pos);
    if (g != std::string::npos) {
      size_t end = std::string::npos;
      const size_t frac = (g < src_.size() && src_[g] == '.') ? digit_group(g + 1) : std::string::npos;
      if (frac != std::string::npos) {
        const size_t e = exponent(frac);
        end = e != std::string::npos ? e : frac;
      } else {
        end = exponent(g);
      }
      if (end != std::string::npos) {
        emit(TokenType::Float, pos, src_.substr(pos, end - pos));
        out_.back().float_value = std::strtod(without_underscores(out_.back().value).c_str(), nullptr);
        return end;
      }
    }
    return lex_integer(pos);
  }

  size_t lex_integer(size_t pos) {
    int base = 10;
    size_t digits = pos;
    if (src_[pos] == '0' && pos + 1 < src_.size()) {
      const char p = static_cast<char>(src_[pos + 1] | 0x20);
      base = p == 'b' ? 2 : p == 'o' ? 8 : p == 'x' ? 16 : 10;
      if (base != 10) digits = pos + 2;
    }
    auto digit_ok = [&](char c) {
      const int v = hex_value(c);
      return v >= 0 && v < base && (base == 16 || is_ascii_digit(c));
    };
    size_t e = digits;
    if (base == 10 && src_[pos] == '0') {
      e = pos + 1;
      while (e < src_.size() && (src_[e] == '0' || (src_[e] == '_' && e + 1 < src_.size() && src_[e + 1] == '0'))) {
        e += src_[e] == '_' ? 2 : 1;
      }
    } else {
      while (e < src_.size()) {
        if (digit_ok(src_[e])) {
          ++e;
        } else if (src_[e] == '_' && e + 1 < src_.size() && digit_ok(src_[e + 1]) && (e > digits || base != 10)) {
          e += 2;
        } else {
          break;
        }
      }
      if (e == digits) {  // "0x" without digits: the literal is just "0"
        base = 10;
        e = pos + 1;
      }
    }
    const std::string text = without_underscores(src_.substr(digits, e - digits));
    uint64_t value = 0;
    for (char c : text) {
      const auto d = static_cast<uint64_t>(hex_value(c));
      if (value > (static_cast<uint64_t>(INT64_MAX) - d) / static_cast<uint64_t>(base)) {
        throw located_error(ErrorKind::Unsupported, pos_at(pos), "integer literal too large");
      }
      value = value * static_cast<uint64_t>(base) + d;
    }
    emit(TokenType::Integer, pos, src_.substr(pos, e - pos));
    out_.back().int_value = static_cast<int64_t>(value);
    return e;
  }

  size_t lex_string(size_t pos) {
    const char quote = src_[pos];
    size_t e = pos + 1;
    while (e < src_.size() && src_[e] != quote) e += src_[e] == '\\' ? 2 : 1;
    if (e >= src_.size()) error(pos, fmt::format("unexpected character '{}' (unterminated string)", quote));
    emit(TokenType::String, pos, unescape(pos, std::string_view(src_).substr(pos + 1, e - pos - 1)));
    return e + 1;
  }

  // Python's unicode-escape decoding, as jinja2 applies it to string literals.
  std::string unescape(size_t at, std::string_view s) const {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
      if (s[i] != '\\' || i + 1 >= s.size()) {
        utf8::append(out, utf8::next(s, i));
        continue;
      }
      const char c = s[i + 1];
      i += 2;
      switch (c) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': utf8::append(out, hex_escape(at, s, i, 2)); break;
        case 'u': utf8::append(out, hex_escape(at, s, i, 4)); break;
        case 'U': utf8::append(out, hex_escape(at, s, i, 8)); break;
        case 'N': throw located_error(ErrorKind::Unsupported, pos_at(at), "\\N{...} escapes are not supported");
        default:
          if (c >= '0' && c <= '7') {
            char32_t v = static_cast<char32_t>(c - '0');
            for (int k = 0; k < 2 && i < s.size() && s[i] >= '0' && s[i] <= '7'; ++k) v = v * 8 + static_cast<char32_t>(s[i++] - '0');
            utf8::append(out, v);
          } else {
            i -= 1;  // unknown escape: the backslash stays, the character follows
            out += '\\';
            if (static_cast<unsigned char>(c) >= 0x80) {
              // jinja2 escapes non-ASCII characters as \xNN, \uNNNN before
              // decoding, so after a backslash what remains is "xNN"...
              out += python_escape_text(utf8::next(s, i)).substr(1);
            }
          }
      }
    }
    return out;
  }

  static std::string python_escape_text(char32_t cp) {
    if (cp >= utf8::kRawByteBase) cp = 0xDC00 + (cp - utf8::kRawByteBase);
    if (cp < 0x100) return fmt::format("\\x{:02x}", static_cast<unsigned>(cp));
    if (cp < 0x10000) return fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
    return fmt::format("\\U{:08x}", static_cast<unsigned>(cp));
  }

  char32_t hex_escape(size_t at, std::string_view s, size_t& i, int n) const {
    char32_t v = 0;
    for (int k = 0; k < n; ++k) {
      const int h = i < s.size() ? hex_value(s[i]) : -1;
      if (h < 0) error(at, "truncated \\x, \\u or \\U escape in string literal");
      v = v * 16 + static_cast<char32_t>(h);
      ++i;
    }
    if (v > 0x10FFFF) error(at, "illegal Unicode character in string literal");
    if (v >= 0xD800 && v <= 0xDFFF) return 0xFFFD;
    return v;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> out_;
  bool line_starting_ = true;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace cohort::chat
