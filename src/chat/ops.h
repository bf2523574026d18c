// Operators and element access with Python's semantics, as a template
// compiled by jinja2 performs them.
//
// Type errors (1 + "a", "a" < 1, len(5)) fault with Python's message; using an
// Undefined where a value is required faults with the Undefined's hint. Access
// to a missing key, index or attribute yields Undefined, as in Jinja.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chat/eval_context.h"
#include "chat/value.h"

namespace cohort::chat {

// Faults with the hint of an Undefined ("'x' is undefined").
[[noreturn]] void fail_undefined(const Value& v);

// Arithmetic and concatenation: + - * / // % ** ~.
Value binary_op(EvalContext& ctx, const std::string& op, const Value& a, const Value& b);
// Unary - and +.
Value unary_op(const std::string& op, const Value& v);
// == != < <= > >= in, "not in".
bool compare_op(const std::string& op, const Value& a, const Value& b);
// Python `item in container`.
bool contains(const Value& container, const Value& item);
// Python ordering: <0, 0, >0; faults for unorderable pairs (op names the operator).
int compare_values(const Value& a, const Value& b, const char* op = "<");

// obj.name (attribute first, then key) and obj[key] (key first, then attribute).
Value get_attr(EvalContext& ctx, const Value& obj, const std::string& name);
Value get_item(EvalContext& ctx, const Value& obj, const Value& key);
// obj[start:stop:step]; a nullopt bound is omitted.
Value slice_value(const Value& obj, const Value* start, const Value* stop, const Value* step);

// The items a for loop visits: list items, dict keys, string characters;
// nothing for Undefined. Faults for values that are not iterable.
std::vector<Value> iterate(const Value& v);
// Python len(); 0 for Undefined.
int64_t length(const Value& v);

}  // namespace cohort::chat
