#include "server/schema_normalization.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "common/error.h"

namespace cohort::server {
namespace {

template <size_t N>
bool is_one_of(const std::array<std::string_view, N>& keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// Keywords whose value is a schema or an array of schemas (2020-12, and
// draft 7's spellings).
constexpr std::array<std::string_view, 15> kSchemaKeywords = {
    "items", "prefixItems", "additionalItems", "contains", "unevaluatedItems", "additionalProperties",
    "propertyNames", "unevaluatedProperties", "allOf", "anyOf", "oneOf", "not", "if", "then", "else"};
// Keywords whose value maps names to schemas.
constexpr std::array<std::string_view, 6> kSchemaMapKeywords = {
    "properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"};
// Keywords xgrammar 0.2.9 reads past (json_schema_converter.cc: never read,
// or only warned of under a verbose flag); uniqueItems too, when true.
constexpr std::array<std::string_view, 8> kIgnoredByEngine = {
    "not", "if", "then", "else", "contains", "dependentRequired", "dependentSchemas", "dependencies"};
// Keywords that constrain no value: all that may stand beside a one-schema
// allOf, which the engine reads as that schema alone (a $ref, anyOf, type,
// properties, ... beside it would be dropped, or drop it).
constexpr std::array<std::string_view, 12> kAnnotations = {
    "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment",
    "$schema", "$id", "$defs", "definitions"};

// `key` as a JSON pointer's reference token: ~ as ~0, / as ~1.
std::string pointer_token(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// Calls visit(s, pointer) on every subschema s of `schema`, innermost first,
// then on `schema` itself (at `pointer`): a visit may rewrite its own schema's
// keywords, and sees the pointers of the schema as given.
template <typename Visit>
void visit_schemas(Json& schema, const std::string& pointer, const Visit& visit) {
  if (!schema.is_object()) return;
  for (auto& [key, value] : schema.items()) {
    const std::string at = pointer + "/" + pointer_token(key);
    if (is_one_of(kSchemaMapKeywords, key) && value.is_object()) {
      for (auto& [name, sub] : value.items()) visit_schemas(sub, at + "/" + pointer_token(name), visit);
    } else if (is_one_of(kSchemaKeywords, key) && value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i) visit_schemas(value[i], fmt::format("{}/{}", at, i), visit);
    } else if (is_one_of(kSchemaKeywords, key)) {
      visit_schemas(value, at, visit);
    }
  }
  visit(schema, pointer);
}

[[noreturn]] void refuse(const std::string& what, const std::string& pointer) {
  fail("uses {} at {}, which structured output cannot enforce (the grammar engine would ignore it)", what,
       pointer);
}

void check_enforceable(const Json& schema, const std::string& pointer) {
  for (const auto& [key, value] : schema.items()) {
    if (is_one_of(kIgnoredByEngine, key) || (key == "uniqueItems" && value == true)) {
      refuse(fmt::format("'{}'", key), pointer + "/" + key);
    }
  }
  const auto all_of = schema.find("allOf");
  if (all_of == schema.end() || !all_of->is_array()) return;  // not an array: the engine's own 400
  if (all_of->size() != 1) refuse(fmt::format("'allOf' of {} schemas", all_of->size()), pointer + "/allOf");
  for (const auto& item : schema.items()) {
    if (item.key() != "allOf" && !is_one_of(kAnnotations, item.key())) {
      refuse(fmt::format("'allOf' beside '{}'", item.key()), pointer + "/allOf");
    }
  }
}

// A tuple (`items` an array) as prefixItems, closed, all required.
void rewrite_tuple(Json& schema) {
  const auto items = schema.find("items");
  if (items == schema.end() || !items->is_array() || schema.contains("prefixItems")) return;
  Json tuple = std::move(*items);  // before inserting keys, which moves the others
  schema["items"] = false;
  if (!schema.contains("minItems")) schema["minItems"] = tuple.size();
  schema["prefixItems"] = std::move(tuple);
}

}  // namespace

// RFC 3339's full-date, full-time and date-time (section 5.6) as patterns in
// the subset of ECMAScript regular expressions that the engine reads
// (xgrammar's regex_converter.cc: no lookahead). Narrower than the RFC where
// that keeps answers short or Python's checks (jsonschema's format_checker)
// content: years 0001 to 9999 (date.fromisoformat refuses 0000), upper-case
// T and Z, at most 3 digits of a second (llama.cpp's converter allows
// exactly 3), and no leap second (the RFC allows :60 only where UTC's time is
// 23:59, which depends on the offset).
std::optional<std::string> rfc3339_pattern(std::string_view format) {
  // No {m,n} counts: xgrammar 0.2.9 mis-reads one inside an optional
  // group ("(x[0-9]{1,3})?" takes a digit without the x), so every count
  // is written out.
  constexpr std::string_view kYear =
      "(?:[0-9][0-9][0-9][1-9]|[0-9][0-9][1-9]0|[0-9][1-9]00|[1-9]000)";
  // Divisible by 4 but not by 100, or by 400 (and not 0000).
  constexpr std::string_view kLeapYear =
      "(?:[0-9][0-9](?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)";
  constexpr std::string_view kTime =
      R"((?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9](?:[0-9][0-9]?)?)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9]))";
  // Each day within its month; February 29th in leap years only.
  const std::string date = fmt::format(
      "(?:{}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|"
      "02-(?:0[1-9]|1[0-9]|2[0-8]))|{}-02-29)",
      kYear, kLeapYear);
  if (format == "date") return fmt::format("^{}$", date);
  if (format == "time") return fmt::format("^{}$", kTime);
  if (format == "date-time") return fmt::format("^{}T{}$", date, kTime);
  return std::nullopt;
}

namespace {

void rewrite_date_format(Json& schema) {
  const auto format = schema.find("format");
  if (format == schema.end() || !format->is_string() || schema.contains("pattern")) return;
  std::optional<std::string> pattern = rfc3339_pattern(format->get_ref<const std::string&>());
  if (!pattern) return;
  schema.erase("format");  // the engine's own format would take the place of the pattern
  schema["pattern"] = std::move(*pattern);
}

// A string with minLength or maxLength and neither pattern nor format as
// a pattern of that many characters that need no escape: xgrammar 0.2.9
// writes such a string as characters other than quote, backslash, CR and
// LF, so the other control characters (U+0000 to U+001F) came out raw,
// which is not JSON. Escapes stay out, as they were.
constexpr uint64_t kMaxPatternLength = 1024;

void rewrite_bounded_string(Json& schema) {
  const auto type = schema.find("type");
  if (type == schema.end() || *type != "string" || schema.contains("pattern") || schema.contains("format")) return;
  const auto min = schema.find("minLength");
  const auto max = schema.find("maxLength");
  const bool has_min = min != schema.end() && min->is_number_unsigned();
  const bool has_max = max != schema.end() && max->is_number_unsigned();
  if (!has_min && !has_max) return;
  const uint64_t lo = has_min ? min->get<uint64_t>() : 0;
  const std::string hi = has_max ? std::to_string(max->get<uint64_t>()) : "";
  // Left to the engine: an impossible pair (it names the error), and counts
  // too large to write out as states of a pattern.
  if ((has_max && (max->get<uint64_t>() < lo || max->get<uint64_t>() > kMaxPatternLength)) || lo > kMaxPatternLength)
    return;
  schema["pattern"] = fmt::format(R"(^[^"\\\x00-\x1f]{{{},{}}}$)", lo, hi);
  schema.erase("minLength");
  schema.erase("maxLength");
}

}  // namespace

Json normalize_schema(const Json& schema) {
  Json out = schema;
  visit_schemas(out, "", [](Json& s, const std::string& pointer) {
    check_enforceable(s, pointer);
    rewrite_tuple(s);
    rewrite_date_format(s);
    rewrite_bounded_string(s);
  });
  return out;
}

}  // namespace cohort::server
