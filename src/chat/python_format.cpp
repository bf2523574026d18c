#include "chat/python_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/template_error.h"
#include "chat/unicode.h"

namespace cohort::chat {

std::string format_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  // Shortest digits that round-trip, in scientific form: d[.ddd]e[+-]x.
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (!sci.empty() && sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp = std::stoi(sci.substr(e_pos + 1));
  const int decpt = exp + 1;  // position of the decimal point after the first digit
  const int n = static_cast<int>(digits.size());
  std::string out = sign;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (decpt >= n) {
      out += digits + std::string(static_cast<size_t>(decpt - n), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (n > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return out + ebuf;
}

std::string repr_string(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  size_t i = 0;
  while (i < s.size()) {
    const char32_t cp = utf8::next(s, i);
    char buf[16];
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (utf8::is_printable(cp)) {
      utf8::append(out, cp);
    } else {
      // Raw bytes are shown as Python shows surrogate escapes.
      const auto c = static_cast<unsigned>(cp >= utf8::kRawByteBase ? 0xDC00 + (cp - utf8::kRawByteBase) : cp);
      if (c < 0x100) {
        std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      } else if (c < 0x10000) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      } else {
        std::snprintf(buf, sizeof(buf), "\\U%08x", c);
      }
      out += buf;
    }
  }
  out += quote;
  return out;
}

namespace {

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  size_t i = 0;
  char buf[16];
  while (i < s.size()) {
    const char32_t cp = utf8::next(s, i);
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
      auto c = static_cast<unsigned>(cp >= utf8::kRawByteBase ? 0xDC00 + (cp - utf8::kRawByteBase) : cp);
      if (c >= 0x10000) {
        c -= 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      }
      out += buf;
    } else {
      utf8::append(out, cp);
    }
  }
  out += '"';
}

std::string json_float(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-Infinity" : "Infinity";
  return format_float(v);
}

// A dict key as json.dumps turns it into a string.
std::string json_key(const Value& k) {
  switch (k.type()) {
    case Value::Type::String: return k.str();
    case Value::Type::None: return "null";
    case Value::Type::Bool: return k.bool_value() ? "true" : "false";
    case Value::Type::Int: return std::to_string(k.int_value());
    case Value::Type::Float: return json_float(k.float_value());
    default: runtime_fault("keys must be str, int, float, bool or None, not " + type_name(k));
  }
}

class JsonWriter {
 public:
  JsonWriter(const JsonOptions& options, int max_depth) : opt_(options), max_depth_(max_depth) {}

  void write(const Value& v, int depth) {
    if (depth > max_depth_) runtime_fault("tojson: value nests too deeply");
    switch (v.type()) {
      case Value::Type::None: out += "null"; return;
      case Value::Type::Bool: out += v.bool_value() ? "true" : "false"; return;
      case Value::Type::Int: out += std::to_string(v.int_value()); return;
      case Value::Type::Float: out += json_float(v.float_value()); return;
      case Value::Type::String: json_string(out, v.str(), opt_.ensure_ascii); return;
      case Value::Type::List:
        if (v.list().kind != SeqKind::List && v.list().kind != SeqKind::Tuple) break;
        write_list(v.list(), depth);
        return;
      case Value::Type::Dict: write_dict(v.dict(), depth); return;
      default: break;
    }
    runtime_fault("Object of type " + type_name(v) + " is not JSON serializable");
  }

  std::string out;

 private:
  void newline(int depth) {
    if (!opt_.indent) return;
    out += '\n';
    for (int i = 0; i < depth; ++i) out += *opt_.indent;
  }

  void write_list(const ListData& l, int depth) {
    if (l.items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (i > 0) out += opt_.item_separator;
      newline(depth + 1);
      write(l.items[i], depth + 1);
    }
    newline(depth);
    out += ']';
  }

  void write_dict(const DictData& d, int depth) {
    if (d.size() == 0) {
      out += "{}";
      return;
    }
    std::vector<std::pair<std::string, const Value*>> items;
    items.reserve(d.size());
    for (const auto& [k, val] : d.entries()) items.emplace_back(json_key(k), &val);
    if (opt_.sort_keys) {
      std::stable_sort(items.begin(), items.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    out += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += opt_.item_separator;
      newline(depth + 1);
      json_string(out, items[i].first, opt_.ensure_ascii);
      out += opt_.key_separator;
      write(*items[i].second, depth + 1);
    }
    newline(depth);
    out += '}';
  }

  const JsonOptions& opt_;
  int max_depth_;
};

}  // namespace

std::string to_json(const Value& v, const JsonOptions& options, int max_depth) {
  JsonWriter w(options, max_depth);
  w.write(v, 0);
  return std::move(w.out);
}

}  // namespace cohort::chat
