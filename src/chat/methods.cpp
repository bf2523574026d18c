#include "chat/methods.h"

#include <algorithm>
#include <fmt/format.h>

#include "chat/ops.h"
#include "chat/unicode.h"

namespace cohort::chat {
namespace {

using Method = Value (*)(EvalContext&, const Value& self, const CallArgs& args);

const std::string* optional_str(const Value* v, const char* what) {
  if (!v || v->is_none()) return nullptr;
  if (!v->is_string()) runtime_fault(fmt::format("{} arg must be None or str", what));
  return &v->str();
}

int64_t optional_int(const Value* v, int64_t fallback) {
  if (!v) return fallback;
  if (!v->is_integral()) runtime_fault(fmt::format("'{}' object cannot be interpreted as an integer", type_name(*v)));
  return v->as_int();
}

const std::string& str_arg(const Value& v, const char* callee) {
  if (!v.is_string()) runtime_fault(fmt::format("{}() argument must be str, not {}", callee, type_name(v)));
  return v.str();
}

Value strings_list(std::vector<std::string> parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (auto& p : parts) out.push_back(Value::string(std::move(p)));
  return Value::list(std::move(out));
}

Value m_strip(const Value& self, const CallArgs& args, bool left, bool right, const char* name) {
  ArgReader a(args, name, {"chars"});
  return Value::string(utf8::strip(self.str(), optional_str(a.get(0), name), left, right));
}
Value m_strip_both(EvalContext&, const Value& s, const CallArgs& a) { return m_strip(s, a, true, true, "strip"); }
Value m_lstrip(EvalContext&, const Value& s, const CallArgs& a) { return m_strip(s, a, true, false, "lstrip"); }
Value m_rstrip(EvalContext&, const Value& s, const CallArgs& a) { return m_strip(s, a, false, true, "rstrip"); }

Value m_split_impl(const Value& self, const CallArgs& args, bool from_right, const char* name) {
  ArgReader a(args, name, {"sep", "maxsplit"});
  const std::string* sep = optional_str(a.get(0), name);
  if (sep && sep->empty()) runtime_fault("empty separator");
  return strings_list(split_string(self.str(), sep, optional_int(a.get(1), -1), from_right));
}
Value m_split(EvalContext&, const Value& s, const CallArgs& a) { return m_split_impl(s, a, false, "split"); }
Value m_rsplit(EvalContext&, const Value& s, const CallArgs& a) { return m_split_impl(s, a, true, "rsplit"); }

Value m_splitlines(EvalContext&, const Value& self, const CallArgs& args) {
  ArgReader a(args, "splitlines", {"keepends"});
  const bool keep = a.get(0) && truthy(*a.get(0));
  const std::u32string cps = utf8::decode(self.str());
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!utf8::is_line_break(cps[i])) continue;
    size_t end = i + 1;
    if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') end = i + 2;
    lines.push_back(utf8::encode(std::u32string_view(cps).substr(start, (keep ? end : i) - start)));
    start = end;
    i = end - 1;
  }
  if (start < cps.size()) lines.push_back(utf8::encode(std::u32string_view(cps).substr(start)));
  return strings_list(std::move(lines));
}

Value m_affix(const Value& self, const CallArgs& args, bool prefix, const char* name) {
  ArgReader a(args, name, {"prefix", "start", "end"});
  if (a.get(1) || a.get(2)) fault(ErrorKind::Unsupported, fmt::format("{}() with start/end is not supported", name));
  const Value& p = a.required(0);
  const std::string& s = self.str();
  auto test = [&](const std::string& x) {
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (p.is_list()) {
    for (const Value& x : p.list().items) {
      if (test(str_arg(x, name))) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  return Value::boolean(test(str_arg(p, name)));
}
Value m_startswith(EvalContext&, const Value& s, const CallArgs& a) { return m_affix(s, a, true, "startswith"); }
Value m_endswith(EvalContext&, const Value& s, const CallArgs& a) { return m_affix(s, a, false, "endswith"); }

Value no_args(const CallArgs& args, const char* name) {
  ArgReader a(args, name, {});
  return Value();
}
Value m_upper(EvalContext&, const Value& s, const CallArgs& a) {
  no_args(a, "upper");
  return Value::string(utf8::upper(s.str()));
}
Value m_lower(EvalContext&, const Value& s, const CallArgs& a) {
  no_args(a, "lower");
  return Value::string(utf8::lower(s.str()));
}
Value m_title(EvalContext&, const Value& s, const CallArgs& a) {
  no_args(a, "title");
  return Value::string(title_case(s.str()));
}
Value m_capitalize(EvalContext&, const Value& s, const CallArgs& a) {
  no_args(a, "capitalize");
  return Value::string(capitalize(s.str()));
}

Value m_replace(EvalContext& ctx, const Value& self, const CallArgs& args) {
  ArgReader a(args, "replace", {"old", "new", "count"});
  const std::string& from = str_arg(a.required(0), "replace");
  const std::string& to = str_arg(a.required(1), "replace");
  int64_t count = optional_int(a.get(2), -1);
  const std::string& s = self.str();
  std::string out;
  if (from.empty()) {  // Python inserts `to` around every character
    const std::u32string cps = utf8::decode(s);
    check_value_size(s.size() + to.size() * (cps.size() + 1));
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count != 0) {
        out += to;
        --count;
      }
      if (i < cps.size()) utf8::append(out, cps[i]);
    }
  } else {
    size_t pos = 0;
    while (count != 0) {
      const size_t hit = s.find(from, pos);
      if (hit == std::string::npos) break;
      out.append(s, pos, hit - pos);
      out += to;
      check_value_size(out.size());
      pos = hit + from.size();
      --count;
    }
    out.append(s, pos, std::string::npos);
  }
  ctx.charge(out.size());
  return Value::string(std::move(out));
}

Value m_find_impl(const Value& self, const CallArgs& args, bool from_right, bool must, const char* name) {
  ArgReader a(args, name, {"sub"});
  const std::string& sub = str_arg(a.required(0), name);
  const std::string& s = self.str();
  const size_t hit = from_right ? s.rfind(sub) : s.find(sub);
  if (hit == std::string::npos) {
    if (must) runtime_fault("substring not found");
    return Value::integer(-1);
  }
  return Value::integer(static_cast<int64_t>(utf8::length(std::string_view(s).substr(0, hit))));
}
Value m_find(EvalContext&, const Value& s, const CallArgs& a) { return m_find_impl(s, a, false, false, "find"); }
Value m_rfind(EvalContext&, const Value& s, const CallArgs& a) { return m_find_impl(s, a, true, false, "rfind"); }
Value m_index(EvalContext&, const Value& s, const CallArgs& a) { return m_find_impl(s, a, false, true, "index"); }
Value m_rindex(EvalContext&, const Value& s, const CallArgs& a) { return m_find_impl(s, a, true, true, "rindex"); }

Value m_count(EvalContext&, const Value& self, const CallArgs& args) {
  ArgReader a(args, "count", {"sub"});
  const std::string& sub = str_arg(a.required(0), "count");
  const std::string& s = self.str();
  if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8::length(s)) + 1);
  int64_t n = 0;
  for (size_t pos = s.find(sub); pos != std::string::npos; pos = s.find(sub, pos + sub.size())) ++n;
  return Value::integer(n);
}

Value m_join(EvalContext& ctx, const Value& self, const CallArgs& args) {
  ArgReader a(args, "join", {"iterable"});
  std::string out;
  bool first = true;
  for (const Value& v : iterate(a.required(0))) {
    if (!first) out += self.str();
    first = false;
    out += str_arg(v, "join");
    check_value_size(out.size());
  }
  ctx.charge(out.size());
  return Value::string(std::move(out));
}

template <bool (*Pred)(char32_t)>
Value m_is(EvalContext&, const Value& self, const CallArgs& args) {
  no_args(args, "is...");
  const std::u32string cps = utf8::decode(self.str());
  if (cps.empty()) return Value::boolean(false);
  return Value::boolean(std::all_of(cps.begin(), cps.end(), Pred));
}
bool is_alnum(char32_t c) { return utf8::is_alpha(c) || utf8::is_digit(c); }

Value m_case_test(const Value& self, const CallArgs& args, bool want_upper) {
  no_args(args, want_upper ? "isupper" : "islower");
  bool cased = false;
  for (char32_t c : utf8::decode(self.str())) {
    if (want_upper ? utf8::is_lower(c) : utf8::is_upper(c)) return Value::boolean(false);
    cased = cased || utf8::is_upper(c) || utf8::is_lower(c);
  }
  return Value::boolean(cased);
}
Value m_isupper(EvalContext&, const Value& s, const CallArgs& a) { return m_case_test(s, a, true); }
Value m_islower(EvalContext&, const Value& s, const CallArgs& a) { return m_case_test(s, a, false); }

Value m_affix_remove(const Value& self, const CallArgs& args, bool prefix) {
  ArgReader a(args, prefix ? "removeprefix" : "removesuffix", {"affix"});
  const std::string& x = str_arg(a.required(0), "removeprefix");
  const std::string& s = self.str();
  if (x.size() > s.size()) return self;
  if (prefix && s.compare(0, x.size(), x) == 0) return Value::string(s.substr(x.size()));
  if (!prefix && s.compare(s.size() - x.size(), x.size(), x) == 0) return Value::string(s.substr(0, s.size() - x.size()));
  return self;
}
Value m_removeprefix(EvalContext&, const Value& s, const CallArgs& a) { return m_affix_remove(s, a, true); }
Value m_removesuffix(EvalContext&, const Value& s, const CallArgs& a) { return m_affix_remove(s, a, false); }

// dict methods
Value m_items(EvalContext&, const Value& self, const CallArgs& args) {
  no_args(args, "items");
  std::vector<Value> out;
  for (const auto& [k, v] : self.dict().entries()) out.push_back(Value::list({k, v}, SeqKind::Tuple));
  return Value::list(std::move(out), SeqKind::DictItems);
}
Value m_keys(EvalContext&, const Value& self, const CallArgs& args) {
  no_args(args, "keys");
  return Value::list(iterate(self), SeqKind::DictKeys);
}
Value m_values(EvalContext&, const Value& self, const CallArgs& args) {
  no_args(args, "values");
  std::vector<Value> out;
  for (const auto& [k, v] : self.dict().entries()) out.push_back(v);
  return Value::list(std::move(out), SeqKind::DictValues);
}
Value m_get(EvalContext&, const Value& self, const CallArgs& args) {
  ArgReader a(args, "get", {"key", "default"});
  if (const Value* v = self.dict().find(a.required(0))) return *v;
  return a.get_or(1, Value::none());
}
Value m_copy(EvalContext&, const Value& self, const CallArgs& args) {
  no_args(args, "copy");
  return self;
}

// list methods
Value m_list_index(EvalContext&, const Value& self, const CallArgs& args) {
  ArgReader a(args, "index", {"value"});
  const auto& items = self.list().items;
  for (size_t i = 0; i < items.size(); ++i) {
    if (equals(items[i], a.required(0))) return Value::integer(static_cast<int64_t>(i));
  }
  runtime_fault(fmt::format("{} is not in list", repr(a.required(0))));
}
Value m_list_count(EvalContext&, const Value& self, const CallArgs& args) {
  ArgReader a(args, "count", {"value"});
  const auto& items = self.list().items;
  return Value::integer(std::count_if(items.begin(), items.end(), [&](const Value& v) { return equals(v, a.required(0)); }));
}

struct MethodEntry {
  const char* name;
  Method fn;
};

constexpr MethodEntry kStrMethods[] = {
    {"strip", m_strip_both}, {"lstrip", m_lstrip}, {"rstrip", m_rstrip}, {"split", m_split},
    {"rsplit", m_rsplit}, {"splitlines", m_splitlines}, {"startswith", m_startswith},
    {"endswith", m_endswith}, {"upper", m_upper}, {"lower", m_lower}, {"casefold", m_lower},
    {"title", m_title}, {"capitalize", m_capitalize}, {"replace", m_replace}, {"find", m_find},
    {"rfind", m_rfind}, {"index", m_index}, {"rindex", m_rindex}, {"count", m_count}, {"join", m_join},
    {"isdigit", m_is<utf8::is_digit>}, {"isdecimal", m_is<utf8::is_digit>}, {"isnumeric", m_is<utf8::is_digit>},
    {"isalpha", m_is<utf8::is_alpha>}, {"isalnum", m_is<is_alnum>}, {"isspace", m_is<utf8::is_space>},
    {"isupper", m_isupper}, {"islower", m_islower}, {"removeprefix", m_removeprefix},
    {"removesuffix", m_removesuffix},
};
// Python str methods this engine does not implement: calling one is Unsupported.
constexpr const char* kOtherStrMethods[] = {
    "center", "encode", "expandtabs", "format", "format_map", "isascii", "isidentifier", "isprintable",
    "istitle", "ljust", "maketrans", "partition", "rjust", "rpartition", "swapcase", "translate", "zfill"};

constexpr MethodEntry kDictMethods[] = {
    {"items", m_items}, {"keys", m_keys}, {"values", m_values}, {"get", m_get}, {"copy", m_copy}};
constexpr const char* kDictMutators[] = {"pop", "popitem", "setdefault", "update", "clear", "fromkeys"};

constexpr MethodEntry kListMethods[] = {{"index", m_list_index}, {"count", m_list_count}, {"copy", m_copy}};
constexpr const char* kListMutators[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};

template <size_t N>
const MethodEntry* find_entry(const MethodEntry (&table)[N], const std::string& name) {
  for (const MethodEntry& e : table) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

template <size_t N>
bool listed(const char* const (&names)[N], const std::string& name) {
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return name == n; });
}

Value bound(EvalContext& ctx, const Value& self, const std::string& type, const MethodEntry& e) {
  EvalContext* c = &ctx;
  Method fn = e.fn;
  return Value::function(type + "." + e.name, [c, self, fn](const CallArgs& args) { return fn(*c, self, args); });
}

Value unsafe(const std::string& type, const std::string& name) {
  return Value::undefined(fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, type));
}

}  // namespace

std::optional<Value> bind_method(EvalContext& ctx, const Value& obj, const std::string& name) {
  if (obj.is_string()) {
    if (const MethodEntry* e = find_entry(kStrMethods, name)) return bound(ctx, obj, "str", *e);
    if (listed(kOtherStrMethods, name)) {
      return Value::function("str." + name, [name](const CallArgs&) -> Value {
        fault(ErrorKind::Unsupported, fmt::format("str.{}() is not supported", name));
      });
    }
  } else if (obj.is_dict()) {
    if (const MethodEntry* e = find_entry(kDictMethods, name)) return bound(ctx, obj, "dict", *e);
    if (listed(kDictMutators, name)) return unsafe("dict", name);
  } else if (obj.is_list()) {
    if (const MethodEntry* e = find_entry(kListMethods, name)) return bound(ctx, obj, "list", *e);
    if (listed(kListMutators, name)) return unsafe("list", name);
  }
  return std::nullopt;
}

std::vector<std::string> split_string(const std::string& s, const std::string* sep, int64_t maxsplit,
                                      bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    if (!from_right) {
      size_t pos = 0;
      for (size_t hit; maxsplit != 0 && (hit = s.find(*sep, pos)) != std::string::npos; --maxsplit) {
        parts.push_back(s.substr(pos, hit - pos));
        pos = hit + sep->size();
      }
      parts.push_back(s.substr(pos));
      return parts;
    }
    size_t end = s.size();
    for (; maxsplit != 0 && end >= sep->size(); --maxsplit) {
      const size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string::npos) break;
      parts.push_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    parts.push_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  std::u32string cps = utf8::decode(s);
  if (from_right) std::reverse(cps.begin(), cps.end());
  size_t i = 0;
  while (true) {
    while (i < cps.size() && utf8::is_space(cps[i])) ++i;
    if (i == cps.size()) break;
    if (maxsplit == 0) {
      size_t e = cps.size();
      while (e > i && utf8::is_space(cps[e - 1])) --e;
      parts.push_back(utf8::encode(std::u32string_view(cps).substr(i, e - i)));
      break;
    }
    size_t j = i;
    while (j < cps.size() && !utf8::is_space(cps[j])) ++j;
    parts.push_back(utf8::encode(std::u32string_view(cps).substr(i, j - i)));
    i = j;
    if (maxsplit > 0) --maxsplit;
  }
  if (from_right) {
    for (auto& p : parts) {
      std::u32string r = utf8::decode(p);
      std::reverse(r.begin(), r.end());
      p = utf8::encode(r);
    }
    std::reverse(parts.begin(), parts.end());
  }
  return parts;
}

std::string title_case(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  size_t i = 0;
  while (i < s.size()) {
    const char32_t c = utf8::next(s, i);
    if (prev_cased) {
      utf8::append(out, utf8::to_lower(c));
    } else {
      utf8::append(out, utf8::to_upper_simple(c));
    }
    prev_cased = utf8::is_upper(c) || utf8::is_lower(c);
  }
  return out;
}

std::string capitalize(const std::string& s) {
  std::string out;
  size_t i = 0;
  bool first = true;
  while (i < s.size()) {
    const char32_t c = utf8::next(s, i);
    utf8::append(out, first ? utf8::to_upper_simple(c) : utf8::to_lower(c));
    first = false;
  }
  return out;
}

}  // namespace cohort::chat
