// Methods of built-in types that templates call: 'text'.strip(),
// message.content.split('</think>'), tool.items(), messages.index(m)...
//
// Mutating methods (list.append, dict.update, ...) are refused as
// jinja2.sandbox.ImmutableSandboxedEnvironment refuses them: the attribute
// is an Undefined that faults when called.
#pragma once

#include <optional>
#include <string>

#include "chat/eval_context.h"
#include "chat/value.h"

namespace cohort::chat {

// obj.name as a bound method, or nullopt when obj's type has no such method.
// The returned function may keep `ctx` and must not outlive the render.
std::optional<Value> bind_method(EvalContext& ctx, const Value& obj, const std::string& name);

// Python str.split(sep, maxsplit) / str.rsplit; sep nullptr splits on whitespace runs.
std::vector<std::string> split_string(const std::string& s, const std::string* sep, int64_t maxsplit, bool from_right);
// Python str.title() and str.capitalize().
std::string title_case(const std::string& s);
std::string capitalize(const std::string& s);

}  // namespace cohort::chat
