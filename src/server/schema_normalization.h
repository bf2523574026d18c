// A request's JSON schema rewritten into what the grammar engine (xgrammar,
// engine::GrammarCompiler::json_schema) reads as llama.cpp's converter
// (llama-server's json_schema) reads it, or refused where the engine would
// not hold answers to it:
//   - allOf of several schemas, each an object with properties or an enum
//     (through $refs; the alternatives of a component that is an anyOf):
//     one object with all their properties (required, but those from an
//     anyOf) and no others, or the enum values all of them list;
//   - a schema without `type` is a string where it has a pattern, a length
//     or a known format, an object where it has properties, an array where
//     it has items;
//   - tuples: `items` as an array (draft 4 to 2019-09), or prefixItems
//     alone, is exactly those items, all required; prefixItems as a schema
//     is the schema of every item;
//   - integers of at most 16 digits: a half-bounded range closed at
//     10^16 - 1 (unbounded ones are limited so by the engine, which we patch:
//     cmake/xgrammar-json-numbers.patch);
//   - dates and times: `format` date, time or date-time (RFC 3339) where no
//     `pattern` is given becomes a pattern, since the engine's own formats
//     allow days a month does not have (2023-02-31), a leap second at any
//     minute and endless digits after the seconds' point (an answer runs to
//     max_tokens);
//   - strings of minLength/maxLength (up to 1024) without a pattern or
//     format become a pattern of that many characters that need no escape
//     (the engine's own form let raw control characters through);
//   - keywords the engine parses past without enforcing them are refused:
//     allOf of several schemas other than the above (one, as pydantic
//     writes a $ref with a description, it reads; not beside other
//     constraints), not, if/then/else, contains, uniqueItems,
//     dependentRequired, dependentSchemas and draft 7's dependencies; and
//     multipleOf over a range of more than 4096 multiples (the engine would
//     list them all).
// Only subschemas are looked at (values of properties, items, allOf, $defs,
// ...), never data (enum, const, default, examples) nor property names.
//
// Thread safety: pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/request_fields.h"

namespace cohort::server {

// `schema` rewritten as above. Throws cohort::Error naming the keyword the
// engine would ignore and where it is, as a JSON pointer (RFC 6901) into
// `schema`: "uses 'allOf' of 2 schemas at /properties/a/allOf, ...".
Json normalize_schema(const Json& schema);

// The pattern a string of `format` "date", "time" or "date-time" gets; none
// for another format.
std::optional<std::string> rfc3339_pattern(std::string_view format);

}  // namespace cohort::server
