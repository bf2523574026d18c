#include "tokenizer/regex_rewrite.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.h"
#include "tokenizer/utf8.h"

namespace cohort::tokenizer {
namespace {

// Unicode White_Space, as class items.
constexpr std::string_view kWhiteSpaceItems =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

bool is_non_ascii_white_space(uint32_t c) {
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Appends the class items for [lo, hi] minus non-ASCII white space.
void append_range(std::string& out, uint32_t lo, uint32_t hi) {
  uint32_t start = lo;
  for (uint32_t c = lo; c <= hi + 1; ++c) {
    if (c <= hi && !is_non_ascii_white_space(c)) continue;
    if (start < c) {
      out += fmt::format("\\x{{{:X}}}", start);
      if (c - 1 > start) out += fmt::format("-\\x{{{:X}}}", c - 1);
    }
    start = c + 1;
  }
}

class Rewriter {
 public:
  explicit Rewriter(std::string_view p) : p_(p) {}

  std::string run() {
    while (i_ < p_.size()) {
      if (p_[i_] == '[') {
        rewrite_class();
      } else if (p_[i_] == '\\') {
        rewrite_escape_outside();
      } else {
        out_ += p_[i_++];
      }
    }
    return out_;
  }

 private:
  // "\p{..}" at i_, or empty if there is none.
  std::string_view property_at(size_t i) const {
    if (i + 2 >= p_.size() || p_[i] != '\\' || p_[i + 1] != 'p' || p_[i + 2] != '{') return {};
    const size_t close = p_.find('}', i);
    if (close == std::string_view::npos) fail("pre-tokenizer regex: unterminated \\p{{ in '{}'", p_);
    return p_.substr(i, close - i + 1);
  }

  static std::string_view normalized_property(std::string_view prop) {
    if (prop == "\\p{Lu}" || prop == "\\p{Ll}" || prop == "\\p{Lt}" || prop == "\\p{Lm}" ||
        prop == "\\p{Lo}") {
      return "\\p{L}";
    }
    return prop;
  }

  void rewrite_escape_outside() {
    if (std::string_view prop = property_at(i_); !prop.empty()) {
      i_ += prop.size();
      prop = normalized_property(prop);
      out_ += prop;
      return;
    }
    const char c = i_ + 1 < p_.size() ? p_[i_ + 1] : '\0';
    if (c == 's') {
      out_ += fmt::format("[{}]", kWhiteSpaceItems);
    } else if (c == 'S') {
      out_ += fmt::format("[^{}]", kWhiteSpaceItems);
    } else {
      out_.append(p_.substr(i_, 2));
    }
    i_ += 2;
  }

  // One class atom at i_: a literal character (as UTF-8 or \x{HHHH},
  // decoded) or another escape (copied as written). Advances i_.
  struct Atom {
    std::string_view text;
    uint32_t cpt = 0;
    bool literal = false;
  };
  Atom next_atom() {
    const size_t start = i_;
    if (p_.substr(i_, 3) == "\\x{") {  // \x{HHHH}: a literal code point
      const size_t close = p_.find('}', i_);
      if (close == std::string_view::npos) fail("pre-tokenizer regex: unterminated \\x{{ in '{}'", p_);
      const std::string hex(p_.substr(i_ + 3, close - i_ - 3));
      i_ = close + 1;
      return {p_.substr(start, i_ - start), static_cast<uint32_t>(std::stoul(hex, nullptr, 16)), true};
    }
    if (p_[i_] == '\\') {
      i_ = std::min(i_ + 2, p_.size());
      return {p_.substr(start, i_ - start), 0, false};
    }
    const LenientCodepoint c = decode_lenient(p_, i_);
    i_ += c.length;
    return {p_.substr(start, c.length), c.cpt, true};
  }

  // A literal or a range at i_ (not a property, not \s).
  void rewrite_class_item(std::string& items) {
    const Atom lo = next_atom();
    if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
      ++i_;
      const Atom hi = next_atom();
      if (lo.literal && hi.literal && (lo.cpt >= 0x80 || hi.cpt >= 0x80)) {
        append_range(items, lo.cpt, hi.cpt);
      } else {
        items += fmt::format("{}-{}", lo.text, hi.text);
      }
      return;
    }
    if (lo.literal && lo.cpt >= 0x80) {
      append_range(items, lo.cpt, lo.cpt);
    } else {
      items += lo.text;
    }
  }

  void rewrite_class() {
    ++i_;  // '['
    const bool negated = i_ < p_.size() && p_[i_] == '^';
    if (negated) ++i_;
    std::string items;
    while (i_ < p_.size() && p_[i_] != ']') {
      if (std::string_view prop = property_at(i_); !prop.empty()) {
        i_ += prop.size();
        items += normalized_property(prop);
        continue;
      }
      if (p_[i_] == '\\' && i_ + 1 < p_.size() && p_[i_ + 1] == 'S') {
        fail("pre-tokenizer regex: \\S inside a class is not supported: '{}'", p_);
      }
      if (p_[i_] == '\\' && i_ + 1 < p_.size() && p_[i_ + 1] == 's') {
        items += kWhiteSpaceItems;
        i_ += 2;
        continue;
      }
      rewrite_class_item(items);
    }
    if (i_ >= p_.size()) fail("pre-tokenizer regex: unterminated class in '{}'", p_);
    ++i_;  // ']'
    out_ += fmt::format("[{}{}]", negated ? "^" : "", items);
  }

  std::string_view p_;
  size_t i_ = 0;
  std::string out_;
};

}  // namespace

std::string rewrite_for_pcre2(std::string_view pattern) { return Rewriter(pattern).run(); }

}  // namespace cohort::tokenizer
