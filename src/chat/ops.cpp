#include "chat/ops.h"

#include <cmath>
#include <fmt/format.h>

#include "chat/methods.h"
#include "chat/unicode.h"

namespace cohort::chat {
namespace {

// A list or tuple: the sequences that support + * < and slicing as such.
bool plain_sequence(const Value& v) {
  return v.is_list() && (v.list().kind == SeqKind::List || v.list().kind == SeqKind::Tuple);
}

[[noreturn]] void unsupported_operands(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  runtime_fault(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, type_name(a), type_name(b)));
}

[[noreturn]] void overflow() { fault(ErrorKind::Unsupported, "integer overflow (beyond 64 bits)"); }

Value repeat(EvalContext& ctx, const Value& seq, int64_t n) {
  if (n <= 0) return seq.is_string() ? Value::string("") : Value::list({}, seq.list().kind);
  const auto count = static_cast<size_t>(n);
  if (seq.is_string()) {
    const std::string& s = seq.str();
    if (!s.empty() && count > kMaxValueBytes / s.size()) check_value_size(kMaxValueBytes + 1);
    check_value_size(s.size() * count);
    ctx.charge(s.size() * count);
    std::string out;
    out.reserve(s.size() * count);
    for (size_t i = 0; i < count; ++i) out += s;
    return Value::string(std::move(out));
  }
  const auto& items = seq.list().items;
  if (!items.empty() && count > kMaxValueBytes / (32 * items.size())) check_value_size(kMaxValueBytes + 1);
  check_value_size(items.size() * count * 32);
  ctx.charge(items.size() * count * 32);
  std::vector<Value> out;
  out.reserve(items.size() * count);
  for (size_t i = 0; i < count; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.list().kind);
}

Value add(EvalContext& ctx, const Value& a, const Value& b) {
  if (a.is_integral() && b.is_integral()) {
    int64_t r;
    if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) overflow();
    return Value::integer(r);
  }
  if (a.is_number() && b.is_number()) return Value::number(a.as_double() + b.as_double());
  if (a.is_string() && b.is_string()) {
    check_value_size(a.str().size() + b.str().size());
    ctx.charge(a.str().size() + b.str().size());
    return Value::string(a.str() + b.str());
  }
  if (a.is_list() && b.is_list() && a.list().kind == b.list().kind && plain_sequence(a)) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    check_value_size((x.size() + y.size()) * 32);
    ctx.charge((x.size() + y.size()) * 32);
    std::vector<Value> out(x);
    out.insert(out.end(), y.begin(), y.end());
    return Value::list(std::move(out), a.list().kind);
  }
  if (a.is_string() && !b.is_undefined()) {
    runtime_fault(fmt::format("can only concatenate str (not \"{}\") to str", type_name(b)));
  }
  unsupported_operands("+", a, b);
}

double float_floordiv(double x, double y) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0.0) {
    if ((y < 0) != (mod < 0)) div -= 1.0;
  }
  if (div == 0.0) return std::copysign(0.0, x / y);
  double fl = std::floor(div);
  if (div - fl > 0.5) fl += 1.0;
  return fl;
}

double float_mod(double x, double y) {
  double mod = std::fmod(x, y);
  if (mod != 0.0) {
    if ((y < 0) != (mod < 0)) mod += y;
  } else {
    mod = std::copysign(0.0, y);
  }
  return mod;
}

Value arith(const std::string& op, const Value& a, const Value& b) {
  if (!a.is_number() || !b.is_number()) unsupported_operands(op, a, b);
  const bool ints = a.is_integral() && b.is_integral();
  if (op == "/") {
    if (b.as_double() == 0.0) runtime_fault("division by zero");
    return Value::number(a.as_double() / b.as_double());
  }
  if (ints) {
    const int64_t x = a.as_int();
    const int64_t y = b.as_int();
    int64_t r = 0;
    if (op == "-") {
      if (__builtin_sub_overflow(x, y, &r)) overflow();
    } else if (op == "*") {
      if (__builtin_mul_overflow(x, y, &r)) overflow();
    } else {  // "//" and "%": Python floors toward negative infinity
      if (y == 0) runtime_fault("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) overflow();
      int64_t q = x / y;
      int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        q -= 1;
        m += y;
      }
      r = op == "//" ? q : m;
    }
    return Value::integer(r);
  }
  const double x = a.as_double();
  const double y = b.as_double();
  if (op == "-") return Value::number(x - y);
  if (op == "*") return Value::number(x * y);
  if (y == 0.0) runtime_fault(op == "//" ? "float floor division by zero" : "float modulo");
  return Value::number(op == "//" ? float_floordiv(x, y) : float_mod(x, y));
}

Value power(const Value& a, const Value& b) {
  if (!a.is_number() || !b.is_number()) unsupported_operands("** or pow()", a, b);
  if (a.is_integral() && b.is_integral() && b.as_int() >= 0) {
    int64_t base = a.as_int();
    int64_t e = b.as_int();
    int64_t r = 1;
    while (e > 0) {
      if (e & 1) {
        if (__builtin_mul_overflow(r, base, &r)) overflow();
      }
      e >>= 1;
      if (e > 0 && __builtin_mul_overflow(base, base, &base)) overflow();
    }
    return Value::integer(r);
  }
  const double x = a.as_double();
  const double y = b.as_double();
  if (x == 0.0 && y < 0) runtime_fault("0.0 cannot be raised to a negative power");
  if (x < 0 && y != std::floor(y)) fault(ErrorKind::Unsupported, "complex numbers are not supported");
  return Value::number(std::pow(x, y));
}

}  // namespace

void fail_undefined(const Value& v) {
  const std::string& hint = v.undefined_hint();
  runtime_fault(hint.empty() ? "undefined value" : hint);
}

Value binary_op(EvalContext& ctx, const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = to_str(a);
    std::string t = to_str(b);
    check_value_size(s.size() + t.size());
    ctx.charge(s.size() + t.size());
    return Value::string(s + t);
  }
  if (op == "+") return add(ctx, a, b);
  if (op == "*") {
    if ((a.is_string() || plain_sequence(a)) && b.is_integral()) return repeat(ctx, a, b.as_int());
    if ((b.is_string() || plain_sequence(b)) && a.is_integral()) return repeat(ctx, b, a.as_int());
  }
  if (op == "**") return power(a, b);
  if (op == "%" && a.is_string()) fault(ErrorKind::Unsupported, "printf-style '%' string formatting is not supported");
  return arith(op, a, b);
}

Value unary_op(const std::string& op, const Value& v) {
  if (!v.is_number()) {
    if (v.is_undefined()) fail_undefined(v);
    runtime_fault(fmt::format("bad operand type for unary {}: '{}'", op, type_name(v)));
  }
  if (v.is_float()) return Value::number(op == "-" ? -v.float_value() : v.float_value());
  const int64_t i = v.as_int();
  if (op == "-" && i == INT64_MIN) overflow();
  return Value::integer(op == "-" ? -i : i);
}

int compare_values(const Value& a, const Value& b, const char* op) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    const double x = a.as_double();
    const double y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.str().compare(b.str());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list() && a.list().kind == b.list().kind && plain_sequence(a)) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return compare_values(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  runtime_fault(fmt::format("'{}' not supported between instances of '{}' and '{}'", op, type_name(a), type_name(b)));
}

bool contains(const Value& container, const Value& item) {
  switch (container.type()) {
    case Value::Type::String:
      if (!item.is_string()) {
        if (item.is_undefined()) fail_undefined(item);
        runtime_fault(fmt::format("'in <string>' requires string as left operand, not {}", type_name(item)));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Type::List:
      for (const Value& v : container.list().items) {
        if (equals(v, item)) return true;
      }
      return false;
    case Value::Type::Dict: return container.dict().find(item) != nullptr;
    case Value::Type::Undefined: return false;
    default: runtime_fault(fmt::format("argument of type '{}' is not iterable", type_name(container)));
  }
}

bool compare_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in") return contains(b, a);
  if (op == "not in") return !contains(b, a);
  const int c = compare_values(a, b, op.c_str());
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

namespace {

std::string owner_name(const Value& obj) {
  if (obj.is_none()) return "'None'";
  return fmt::format("'{} object'", type_name(obj));
}

Value no_attribute(const Value& obj, const std::string& name) {
  return Value::undefined(fmt::format("{} has no attribute '{}'", owner_name(obj), name));
}

Value object_attr(const Value& obj, const std::string& name) {
  if (const Value* v = obj.object().attrs.find(std::string_view(name))) return *v;
  return no_attribute(obj, name);
}

}  // namespace

Value get_attr(EvalContext& ctx, const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_object()) return object_attr(obj, name);
  if (std::optional<Value> m = bind_method(ctx, obj, name)) return *m;
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(std::string_view(name))) return *v;
  }
  return no_attribute(obj, name);
}

namespace {

// Python index into a sequence of n items; nullopt when out of range.
std::optional<size_t> sequence_index(const Value& key, size_t n) {
  int64_t i = key.as_int();
  if (i < 0) i += static_cast<int64_t>(n);
  if (i < 0 || i >= static_cast<int64_t>(n)) return std::nullopt;
  return static_cast<size_t>(i);
}

}  // namespace

Value get_item(EvalContext& ctx, const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(key)) return *v;
  } else if (obj.is_list() && obj.list().indexable() && key.is_integral()) {
    const auto& items = obj.list().items;
    if (auto i = sequence_index(key, items.size())) return items[*i];
    return Value::undefined(fmt::format("{} has no element {}", owner_name(obj), to_str(key)));
  } else if (obj.is_string() && key.is_integral()) {
    const std::u32string cps = utf8::decode(obj.str());
    if (auto i = sequence_index(key, cps.size())) return Value::string(utf8::encode(cps.substr(*i, 1)));
    return Value::undefined(fmt::format("{} has no element {}", owner_name(obj), to_str(key)));
  }
  if (key.is_string()) return get_attr(ctx, obj, key.str());
  return Value::undefined(fmt::format("{} has no element {}", owner_name(obj), repr(key)));
}

namespace {

// CPython's PySlice_AdjustIndices, giving the indices a slice visits.
std::vector<size_t> slice_indices(size_t length, const Value* start, const Value* stop, const Value* step) {
  auto bound = [](const Value* v) -> std::optional<int64_t> {
    if (!v || v->is_none()) return std::nullopt;
    if (!v->is_integral()) runtime_fault("slice indices must be integers or None");
    return v->as_int();
  };
  const int64_t n = static_cast<int64_t>(length);
  const int64_t st = bound(step).value_or(1);
  if (st == 0) runtime_fault("slice step cannot be zero");
  const int64_t lower = st > 0 ? 0 : -1;
  const int64_t upper = st > 0 ? n : n - 1;
  auto adjust = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v;
    if (x < 0) return std::max(x + n, lower);
    return std::min(x, upper);
  };
  const int64_t b = adjust(bound(start), st > 0 ? lower : upper);
  const int64_t e = adjust(bound(stop), st > 0 ? upper : lower);
  std::vector<size_t> out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(static_cast<size_t>(i));
  return out;
}

}  // namespace

Value slice_value(const Value& obj, const Value* start, const Value* stop, const Value* step) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_string()) {
    const std::u32string cps = utf8::decode(obj.str());
    std::u32string out;
    for (size_t i : slice_indices(cps.size(), start, stop, step)) out.push_back(cps[i]);
    return Value::string(utf8::encode(out));
  }
  if (obj.is_list() && obj.list().indexable()) {
    const auto& items = obj.list().items;
    std::vector<Value> out;
    for (size_t i : slice_indices(items.size(), start, stop, step)) out.push_back(items[i]);
    return Value::list(std::move(out), obj.list().is_tuple() ? SeqKind::Tuple : SeqKind::List);
  }
  // jinja2 slices with Python's own subscript, which raises where getitem
  // would give Undefined.
  if (obj.is_dict()) runtime_fault("unhashable type: 'slice'");
  runtime_fault(fmt::format("'{}' object is not subscriptable", type_name(obj)));
}

std::vector<Value> iterate(const Value& v) {
  switch (v.type()) {
    case Value::Type::Undefined: return {};
    case Value::Type::List: return v.list().items;
    case Value::Type::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.dict().size());
      for (const auto& [k, val] : v.dict().entries()) keys.push_back(k);
      return keys;
    }
    case Value::Type::String: {
      std::vector<Value> chars;
      const std::string& s = v.str();
      size_t i = 0;
      while (i < s.size()) {
        std::string c;
        utf8::append(c, utf8::next(s, i));
        chars.push_back(Value::string(std::move(c)));
      }
      return chars;
    }
    default: runtime_fault(fmt::format("'{}' object is not iterable", type_name(v)));
  }
}

int64_t length(const Value& v) {
  switch (v.type()) {
    case Value::Type::Undefined: return 0;
    case Value::Type::String: return static_cast<int64_t>(utf8::length(v.str()));
    case Value::Type::List:
      if (v.list().kind == SeqKind::Generator) runtime_fault("object of type 'generator' has no len()");
      return static_cast<int64_t>(v.list().items.size());
    case Value::Type::Dict: return static_cast<int64_t>(v.dict().size());
    default: runtime_fault(fmt::format("object of type '{}' has no len()", type_name(v)));
  }
}

}  // namespace cohort::chat
