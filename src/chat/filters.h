// Built-in filters (`x | name(args)`) and tests (`x is name(args)`) with
// jinja2's semantics, `tojson` as transformers overrides it (json.dumps with
// ensure_ascii=False, indent, separators, sort_keys=False).
//
// Filters that jinja2 implements lazily (map, select, reverse...) return
// lists here; the difference shows only when such a result is printed
// without `| list`, which real templates do not do.
#pragma once

#include <string_view>

#include "chat/eval_context.h"
#include "chat/value.h"

namespace cohort::chat {

using FilterFn = Value (*)(EvalContext& ctx, const Value& input, const CallArgs& args);
using TestFn = bool (*)(EvalContext& ctx, const Value& input, const CallArgs& args);

// nullptr when there is no such filter or test. is_known_jinja_filter is
// also true for jinja2 filters that this engine lacks.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);
bool is_known_jinja_filter(std::string_view name);

// Calls a filter or test by name; faults when there is none.
Value apply_filter(EvalContext& ctx, std::string_view name, const Value& input, const CallArgs& args);
bool apply_test(EvalContext& ctx, std::string_view name, const Value& input, const CallArgs& args);

}  // namespace cohort::chat
