// Tests for `x is name(args)`, with jinja2's semantics (jinja2/tests.py).
#include <algorithm>
#include <fmt/format.h>

#include "chat/filters.h"
#include "chat/ops.h"
#include "chat/unicode.h"

namespace cohort::chat {
namespace {

void no_args(const CallArgs& args, const char* name) { ArgReader a(args, name, {}); }

bool t_defined(EvalContext&, const Value& v, const CallArgs& a) { return no_args(a, "defined"), !v.is_undefined(); }
bool t_undefined(EvalContext&, const Value& v, const CallArgs& a) { return no_args(a, "undefined"), v.is_undefined(); }
bool t_none(EvalContext&, const Value& v, const CallArgs& a) { return no_args(a, "none"), v.is_none(); }
bool t_boolean(EvalContext&, const Value& v, const CallArgs& a) { return no_args(a, "boolean"), v.is_bool(); }
bool t_true(EvalContext&, const Value& v, const CallArgs& a) { return no_args(a, "true"), v.is_bool() && v.bool_value(); }
bool t_false(EvalContext&, const Value& v, const CallArgs& a) { return no_args(a, "false"), v.is_bool() && !v.bool_value(); }
bool t_integer(EvalContext&, const Value& v, const CallArgs& a) { return no_args(a, "integer"), v.is_int(); }
bool t_float(EvalContext&, const Value& v, const CallArgs& a) { return no_args(a, "float"), v.is_float(); }
bool t_number(EvalContext&, const Value& v, const CallArgs& a) { return no_args(a, "number"), v.is_number(); }
bool t_string(EvalContext&, const Value& v, const CallArgs& a) { return no_args(a, "string"), v.is_string(); }
bool t_mapping(EvalContext&, const Value& v, const CallArgs& a) { return no_args(a, "mapping"), v.is_dict(); }
// Undefined is callable in jinja2 (calling it raises).
bool t_callable(EvalContext&, const Value& v, const CallArgs& a) {
  return no_args(a, "callable"), v.is_function() || v.is_undefined();
}
bool t_escaped(EvalContext&, const Value&, const CallArgs& a) { return no_args(a, "escaped"), false; }

// Undefined is iterable (empty) and a sequence (it has a length) in jinja2.
bool t_iterable(EvalContext&, const Value& v, const CallArgs& a) {
  no_args(a, "iterable");
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_sequence(EvalContext&, const Value& v, const CallArgs& a) {
  no_args(a, "sequence");
  return v.is_string() || (v.is_list() && v.list().indexable()) || v.is_dict() || v.is_undefined();
}

bool t_lower(EvalContext&, const Value& v, const CallArgs& a) {
  no_args(a, "lower");
  const std::string s = to_str(v);
  bool cased = false;
  for (char32_t c : utf8::decode(s)) {
    if (utf8::is_upper(c)) return false;
    cased = cased || utf8::is_lower(c);
  }
  return cased;
}

bool t_upper(EvalContext&, const Value& v, const CallArgs& a) {
  no_args(a, "upper");
  bool cased = false;
  for (char32_t c : utf8::decode(to_str(v))) {
    if (utf8::is_lower(c)) return false;
    cased = cased || utf8::is_upper(c);
  }
  return cased;
}

bool t_odd(EvalContext& c, const Value& v, const CallArgs& a) {
  no_args(a, "odd");
  return equals(binary_op(c, "%", v, Value::integer(2)), Value::integer(1));
}
bool t_even(EvalContext& c, const Value& v, const CallArgs& a) {
  no_args(a, "even");
  return equals(binary_op(c, "%", v, Value::integer(2)), Value::integer(0));
}
bool t_divisibleby(EvalContext& c, const Value& v, const CallArgs& args) {
  ArgReader a(args, "divisibleby", {"num"});
  return equals(binary_op(c, "%", v, a.required(0)), Value::integer(0));
}

template <const char* Op>
bool t_compare(EvalContext&, const Value& v, const CallArgs& args) {
  ArgReader a(args, Op, {"other"});
  return compare_op(Op, v, a.required(0));
}
constexpr char kEq[] = "==";
constexpr char kNe[] = "!=";
constexpr char kLt[] = "<";
constexpr char kLe[] = "<=";
constexpr char kGt[] = ">";
constexpr char kGe[] = ">=";

bool t_in(EvalContext&, const Value& v, const CallArgs& args) {
  ArgReader a(args, "in", {"seq"});
  return contains(a.required(0), v);
}

bool t_sameas(EvalContext&, const Value& v, const CallArgs& args) {
  ArgReader a(args, "sameas", {"other"});
  const Value& o = a.required(0);
  if (v.type() != o.type()) return false;
  if (v.identity() || o.identity()) return v.identity() == o.identity();
  return equals(v, o);
}

bool t_filter(EvalContext&, const Value& v, const CallArgs& a) {
  no_args(a, "filter");
  return v.is_string() && find_filter(v.str()) != nullptr;
}
bool t_test(EvalContext&, const Value& v, const CallArgs& a) {
  no_args(a, "test");
  return v.is_string() && find_test(v.str()) != nullptr;
}

struct TestEntry {
  const char* name;
  TestFn fn;
};

constexpr TestEntry kTests[] = {
    {"boolean", t_boolean}, {"callable", t_callable}, {"defined", t_defined},
    {"divisibleby", t_divisibleby}, {"eq", t_compare<kEq>}, {"equalto", t_compare<kEq>},
    {"==", t_compare<kEq>}, {"escaped", t_escaped}, {"even", t_even}, {"false", t_false},
    {"filter", t_filter}, {"float", t_float}, {"ge", t_compare<kGe>}, {">=", t_compare<kGe>},
    {"gt", t_compare<kGt>}, {">", t_compare<kGt>}, {"greaterthan", t_compare<kGt>}, {"in", t_in},
    {"integer", t_integer}, {"iterable", t_iterable}, {"le", t_compare<kLe>}, {"<=", t_compare<kLe>},
    {"lower", t_lower}, {"lt", t_compare<kLt>}, {"<", t_compare<kLt>}, {"lessthan", t_compare<kLt>},
    {"mapping", t_mapping}, {"ne", t_compare<kNe>}, {"!=", t_compare<kNe>}, {"none", t_none},
    {"number", t_number}, {"odd", t_odd}, {"sameas", t_sameas}, {"sequence", t_sequence},
    {"string", t_string}, {"test", t_test}, {"true", t_true}, {"undefined", t_undefined},
    {"upper", t_upper},
};

}  // namespace

TestFn find_test(std::string_view name) {
  for (const TestEntry& e : kTests) {
    if (name == e.name) return e.fn;
  }
  return nullptr;
}

}  // namespace cohort::chat
