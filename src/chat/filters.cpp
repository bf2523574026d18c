// Scalar and string filters, and the filter registry.
#include "chat/filters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>

#include "chat/filters_impl.h"
#include "chat/methods.h"
#include "chat/ops.h"
#include "chat/python_format.h"
#include "chat/unicode.h"

namespace cohort::chat {
namespace {

using detail::attribute_of;

Value f_default(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "default", {"default_value", "boolean"});
  const bool boolean = a.get(1) && truthy(*a.get(1));
  if (in.is_undefined() || (boolean && !truthy(in))) return a.get_or(0, Value::string(""));
  return in;
}

Value f_length(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "length", {});
  return Value::integer(length(in));
}

Value f_string(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "string", {});
  return in.is_string() ? in : Value::string(to_str(in));
}

Value f_trim(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "trim", {"chars"});
  const Value* chars = a.get(0);
  if (chars && !chars->is_none() && !chars->is_string()) runtime_fault("strip arg must be None or str");
  return Value::string(utf8::strip(to_str(in), chars && chars->is_string() ? &chars->str() : nullptr, true, true));
}

Value f_upper(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "upper", {});
  return Value::string(utf8::upper(to_str(in)));
}

Value f_lower(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "lower", {});
  return Value::string(utf8::lower(to_str(in)));
}

Value f_capitalize(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "capitalize", {});
  return Value::string(capitalize(to_str(in)));
}

// jinja2's title: words split at runs of `-`, whitespace and opening brackets.
Value f_title(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "title", {});
  const std::u32string cps = utf8::decode(to_str(in));
  auto is_sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || utf8::is_space(c); };
  std::string out;
  for (size_t i = 0; i < cps.size();) {
    const bool sep = is_sep(cps[i]);
    size_t j = i;
    while (j < cps.size() && is_sep(cps[j]) == sep) ++j;
    utf8::append_upper(out, cps[i]);
    for (size_t k = i + 1; k < j; ++k) utf8::append(out, utf8::to_lower(cps[k]));
    i = j;
  }
  return Value::string(std::move(out));
}

Value f_replace(EvalContext& ctx, const Value& in, const CallArgs& args) {
  ArgReader a(args, "replace", {"old", "new", "count"});
  CallArgs call;
  call.positional = {Value::string(to_str(a.required(0))), Value::string(to_str(a.required(1)))};
  if (a.get(2) && !a.get(2)->is_none()) call.positional.push_back(*a.get(2));
  return bind_method(ctx, Value::string(to_str(in)), "replace")->function().call(call);
}

Value f_indent(EvalContext& ctx, const Value& in, const CallArgs& args) {
  ArgReader a(args, "indent", {"width", "first", "blank"});
  const Value width = a.get_or(0, Value::integer(4));
  std::string unit;
  if (width.is_string()) {
    unit = width.str();
  } else if (width.is_integral()) {
    check_value_size(static_cast<size_t>(std::clamp<int64_t>(width.as_int(), 0, INT64_MAX / 2)));
    unit.assign(static_cast<size_t>(std::max<int64_t>(width.as_int(), 0)), ' ');
  } else {
    runtime_fault("indent width must be an integer or a string");
  }
  const bool first = a.get(1) && truthy(*a.get(1));
  const bool blank = a.get(2) && truthy(*a.get(2));
  if (!in.is_string()) {  // jinja2 appends "\n" to the input, which only a string allows
    if (in.is_undefined()) fail_undefined(in);
    runtime_fault(fmt::format("'{}' object has no attribute 'splitlines'", type_name(in)));
  }
  CallArgs none;
  const Value lines_v = bind_method(ctx, Value::string(in.str() + "\n"), "splitlines")->function().call(none);
  const auto& lines = lines_v.list().items;
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i].str();
    if (i > 0) out += "\n";
    if (i > 0 && (blank || !line.empty())) out += unit;
    out += line;
    check_value_size(out.size());
  }
  if (first) out = unit + out;
  ctx.charge(out.size());
  return Value::string(std::move(out));
}

Value f_tojson(EvalContext& ctx, const Value& in, const CallArgs& args) {
  ArgReader a(args, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions opt;
  opt.ensure_ascii = a.get(0) && truthy(*a.get(0));
  opt.sort_keys = a.get(3) && truthy(*a.get(3));
  if (const Value* indent = a.get(1); indent && !indent->is_none()) {
    if (indent->is_string()) {
      opt.indent = indent->str();
    } else if (indent->is_integral()) {
      opt.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent->as_int(), 0, 1024)), ' ');
    } else {
      runtime_fault("tojson indent must be an integer or a string");
    }
    opt.item_separator.resize(1);  // "," (an assignment trips a GCC 12 -Wrestrict false positive)
  }
  if (const Value* sep = a.get(2); sep && !sep->is_none()) {
    if (!sep->is_list() || sep->list().items.size() != 2 || !sep->list().items[0].is_string() ||
        !sep->list().items[1].is_string()) {
      runtime_fault("tojson separators must be a pair of strings");
    }
    opt.item_separator = sep->list().items[0].str();
    opt.key_separator = sep->list().items[1].str();
  }
  std::string out = to_json(in, opt);
  check_value_size(out.size());
  ctx.charge(out.size());
  return Value::string(std::move(out));
}

// Python float() of a string: optional sign, digits with underscores, inf/nan.
std::optional<double> parse_float(const std::string& text) {
  std::string s = utf8::strip(text, nullptr, true, true);
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
        return std::nullopt;
      }
      continue;
    }
    clean += s[i];
  }
  if (clean.empty() || clean.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return v;
}

Value f_float(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "float", {"default"});
  if (in.is_undefined()) fail_undefined(in);
  if (in.is_number()) return Value::number(in.as_double());
  if (in.is_string()) {
    if (auto v = parse_float(in.str())) return Value::number(*v);
  }
  return a.get_or(0, Value::number(0.0));
}

Value f_int(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "int", {"default", "base"});
  const Value fallback = a.get_or(0, Value::integer(0));
  if (in.is_undefined()) fail_undefined(in);
  if (in.is_integral()) return Value::integer(in.as_int());
  auto from_double = [&](double d) {
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(d));
  };
  if (in.is_float()) return from_double(in.float_value());
  if (!in.is_string()) return fallback;
  const int base = a.get(1) && a.get(1)->is_integral() ? static_cast<int>(a.get(1)->as_int()) : 10;
  const std::string s = utf8::strip(in.str(), nullptr, true, true);
  if (!s.empty() && s.find('_') == std::string::npos && base >= 2 && base <= 36) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, base);
    if (end == s.c_str() + s.size() && errno == 0) return Value::integer(v);
  }
  if (auto d = parse_float(in.str())) return from_double(*d);
  return fallback;
}

Value f_abs(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "abs", {});
  if (in.is_float()) return Value::number(std::fabs(in.float_value()));
  return unary_op(in.is_integral() && in.as_int() < 0 ? "-" : "+", in);
}

Value f_round(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "round", {"precision", "method"});
  const int64_t precision = a.get(0) && a.get(0)->is_integral() ? a.get(0)->as_int() : 0;
  const std::string method = a.get(1) ? to_str(*a.get(1)) : "common";
  if (!in.is_number()) runtime_fault(fmt::format("type {} doesn't define __round__ method", type_name(in)));
  if (method != "common" && method != "ceil" && method != "floor") {
    runtime_fault("method must be common, ceil or floor");
  }
  if (in.is_integral() && method == "common") return Value::integer(in.as_int());
  const double x = in.as_double();
  if (method != "common") {
    const double m = std::pow(10.0, static_cast<double>(precision));
    return Value::number((method == "ceil" ? std::ceil(x * m) : std::floor(x * m)) / m);
  }
  if (precision == 0) return Value::number(std::nearbyint(x));
  if (precision < 0 || precision > 300 || !std::isfinite(x)) fault(ErrorKind::Unsupported, "round precision out of range");
  char buf[400];
  std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(precision), x);  // correctly rounded, half to even
  return Value::number(std::strtod(buf, nullptr));
}

Value f_escape(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "escape", {});
  std::string out;
  for (char c : to_str(in)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value::string(std::move(out));
}

Value f_safe(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "safe", {});
  return in.is_string() ? in : Value::string(to_str(in));
}

Value f_wordcount(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "wordcount", {});
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : utf8::decode(to_str(in))) {
    const bool w = utf8::is_alpha(c) || utf8::is_digit(c) || c == '_';
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

Value f_attr(EvalContext& ctx, const Value& in, const CallArgs& args) {
  ArgReader a(args, "attr", {"name"});
  return get_attr(ctx, in, to_str(a.required(0)));
}

struct FilterEntry {
  const char* name;
  FilterFn fn;
};

constexpr FilterEntry kFilters[] = {
    {"abs", f_abs}, {"attr", f_attr}, {"capitalize", f_capitalize}, {"count", f_length},
    {"d", f_default}, {"default", f_default}, {"dictsort", detail::f_dictsort}, {"e", f_escape},
    {"escape", f_escape}, {"first", detail::f_first}, {"float", f_float}, {"indent", f_indent},
    {"int", f_int}, {"items", detail::f_items}, {"join", detail::f_join}, {"last", detail::f_last},
    {"length", f_length}, {"list", detail::f_list}, {"lower", f_lower}, {"map", detail::f_map},
    {"max", detail::f_max}, {"min", detail::f_min}, {"reject", detail::f_reject},
    {"rejectattr", detail::f_rejectattr}, {"replace", f_replace}, {"reverse", detail::f_reverse},
    {"round", f_round}, {"safe", f_safe}, {"select", detail::f_select},
    {"selectattr", detail::f_selectattr}, {"sort", detail::f_sort}, {"string", f_string},
    {"sum", detail::f_sum}, {"title", f_title}, {"tojson", f_tojson}, {"trim", f_trim},
    {"unique", detail::f_unique}, {"upper", f_upper}, {"wordcount", f_wordcount},
};

// jinja2 filters without an implementation here.
constexpr const char* kOtherJinjaFilters[] = {
    "batch", "center", "filesizeformat", "forceescape", "format", "groupby", "pprint", "random",
    "slice", "striptags", "truncate", "urlencode", "urlize", "wordwrap", "xmlattr"};

}  // namespace

FilterFn find_filter(std::string_view name) {
  for (const FilterEntry& e : kFilters) {
    if (name == e.name) return e.fn;
  }
  return nullptr;
}

bool is_known_jinja_filter(std::string_view name) {
  return find_filter(name) ||
         std::any_of(std::begin(kOtherJinjaFilters), std::end(kOtherJinjaFilters), [&](const char* n) { return name == n; });
}

Value apply_filter(EvalContext& ctx, std::string_view name, const Value& input, const CallArgs& args) {
  FilterFn fn = find_filter(name);
  if (!fn) {
    if (is_known_jinja_filter(name)) fault(ErrorKind::Unsupported, fmt::format("unsupported filter '{}'", name));
    fault(ErrorKind::Unsupported, fmt::format("no filter named '{}'", name));
  }
  return fn(ctx, input, args);
}

bool apply_test(EvalContext& ctx, std::string_view name, const Value& input, const CallArgs& args) {
  TestFn fn = find_test(name);
  if (!fn) fault(ErrorKind::Unsupported, fmt::format("no test named '{}'", name));
  return fn(ctx, input, args);
}

}  // namespace cohort::chat
