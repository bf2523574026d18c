// Parser for the Jinja subset: tokens to a syntax tree.
//
// The grammar and operator precedence follow jinja2.parser.Parser (lowest to
// highest): conditional `a if c else b`, `or`, `and`, `not`, comparisons and
// `in` / `not in` (chainable), `+ -`, `~`, `* / // %`, `**`, unary `- +`,
// then primaries with postfix `.attr`, `[item]`, `[a:b:c]`, `(call)`, filters
// `| f(args)` and tests `is [not] t(args)`.
//
// Supported tags: if/elif/else, for (with `if` filter, else, loop
// unpacking), set (expression, namespace attribute, block), macro, filter,
// with, break/continue, raw, generation. include/extends/block/import/call
// and the like are refused as unsupported.
//
// Nesting (brackets, blocks, expression height) is limited to kMaxNesting so
// that untrusted templates cannot exhaust the stack while being parsed,
// evaluated or destroyed.
#pragma once

#include <string_view>

#include "chat/ast.h"

namespace cohort::chat {

inline constexpr int kMaxNesting = 100;

// Throws ChatTemplateError (Syntax or Unsupported) naming line and column.
Body parse_template(std::string_view source);

}  // namespace cohort::chat
