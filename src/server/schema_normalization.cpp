#include "server/schema_normalization.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// `tuple` as exactly those items, all required, in `schema`.
void set_tuple(Json& schema, Json tuple) {
  schema["items"] = false;
  if (!schema.contains("minItems")) schema["minItems"] = tuple.size();
  schema["prefixItems"] = std::move(tuple);
}

// Arrays as llama.cpp's converter reads them: `items` as an array is a
// tuple of exactly those items (draft 4 to 2019-09), and so is prefixItems
// alone (2020-12 would allow fewer items and any more); prefixItems as a
// schema, not an array, is every item's schema. prefixItems beside a
// schema in `items` keeps its 2020-12 meaning (llama.cpp would drop the
// prefix).
void rewrite_array(Json& schema) {
  const auto items = schema.find("items");
  const auto prefix = schema.find("prefixItems");
  if (items != schema.end() && items->is_array() && prefix == schema.end()) {
    Json tuple = std::move(*items);  // before inserting keys, which moves the others
    set_tuple(schema, std::move(tuple));
  } else if (prefix != schema.end() && (!prefix->is_array() || items == schema.end())) {
    Json value = std::move(*prefix);
    schema.erase("prefixItems");
    if (value.is_array()) set_tuple(schema, std::move(value));
    else if (!schema.contains("items")) schema["items"] = std::move(value);  // else `items` wins, as in llama.cpp
  }
}

// A schema without `type` typed as llama.cpp's converter types it, where
// the engine would take any value instead: one with `pattern`, minLength,
// maxLength or a format it knows is a string ({"format": "date"} is a
// date, not anything); one with properties an object; one with items an
// array.
void infer_type(Json& schema) {
  constexpr std::array<std::string_view, 6> kDecided = {"type", "$ref", "anyOf", "oneOf", "enum", "const"};
  for (const std::string_view key : kDecided) {
    if (schema.contains(key)) return;
  }
  if (schema.contains("allOf")) return;
  const auto format = schema.find("format");
  const bool known_format = format != schema.end() &&
                            (*format == "date" || *format == "time" || *format == "date-time" || *format == "uuid");
  if (schema.contains("properties")) {
    schema["type"] = "object";
  } else if (schema.contains("items") || schema.contains("prefixItems")) {
    schema["type"] = "array";
  } else if (known_format || schema.contains("pattern") || schema.contains("minLength") ||
             schema.contains("maxLength")) {
    schema["type"] = "string";
  }
}

// Integers of at most 16 digits, as llama.cpp's converter writes them:
// the open side of a half-bounded range closed at 10^16 - 1 (an unbounded
// integer gets that limit from the engine: cmake/xgrammar-json-numbers.patch).
// A multipleOf over a range makes the engine list every multiple in it, so
// more than kMaxMultiples of them are refused.
constexpr int64_t kIntegerLimit = 9'999'999'999'999'999;
constexpr int64_t kMaxMultiples = 4096;

void bound_integer(Json& schema, const std::string& pointer) {
  if (schema.value("type", Json()) != "integer") return;
  auto number_at = [&](const char* key) -> std::optional<double> {
    const auto it = schema.find(key);
    if (it == schema.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  std::optional<double> lo = number_at("minimum");
  if (!lo) lo = number_at("exclusiveMinimum");
  std::optional<double> hi = number_at("maximum");
  if (!hi) hi = number_at("exclusiveMaximum");
  const auto multiple = schema.find("multipleOf");
  if (multiple != schema.end()) {
    if (lo && hi && multiple->is_number() && multiple->get<double>() > 0 &&
        (*hi - *lo) / multiple->get<double>() > static_cast<double>(kMaxMultiples)) {
      fail("uses 'multipleOf' over a range of more than {} multiples at {}/multipleOf, which structured output "
           "cannot enforce (the grammar engine would list every one)",
           kMaxMultiples, pointer);
    }
    return;  // the engine's own reading (a half-bounded multipleOf is dropped by it)
  }
  if (lo.has_value() == hi.has_value()) return;
  if (!lo) schema["minimum"] = -kIntegerLimit;
  if (!hi) schema["maximum"] = kIntegerLimit;
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

namespace {

// The schema a $ref (a JSON pointer into the document: "#/$defs/a") leads
// to, following chains of them; null where it leads nowhere in it.
const Json* resolve_refs(const Json& root, const Json& schema) {
  const Json* s = &schema;
  for (int hops = 0; hops < 32; ++hops) {
    if (!s->is_object()) return nullptr;
    const auto ref = s->find("$ref");
    if (ref == s->end()) return s;
    if (!ref->is_string() || ref->get_ref<const std::string&>().rfind('#', 0) != 0) return nullptr;
    try {
      s = &root.at(Json::json_pointer(ref->get_ref<const std::string&>().substr(1)));
    } catch (const Json::exception&) {
      return nullptr;
    }
  }
  return nullptr;
}

// An allOf of several schemas as llama.cpp's converter reads it, where each
// component (through $refs; each alternative of a component that is an
// anyOf) is an object with properties or an enum: one object with all
// their properties, required but those of an anyOf's alternatives, and no
// others; or, for enums, the values in every component. None otherwise.
std::optional<Json> merge_all_of(const Json& all_of, const Json& root) {
  Json properties = Json::object();
  Json required = Json::array();
  std::vector<std::pair<Json, size_t>> values;  // each enum value, and how many components list it
  bool objects = false;
  bool enums = false;
  auto add = [&](const Json& component, bool is_required) {
    const Json* c = resolve_refs(root, component);
    if (c == nullptr) return false;
    if (const auto props = c->find("properties"); props != c->end() && props->is_object()) {
      for (const auto& [name, sub] : props->items()) {
        if (!properties.contains(name)) properties[name] = sub;
        if (is_required && std::find(required.begin(), required.end(), name) == required.end()) {
          required.push_back(name);
        }
      }
      return objects = true;
    }
    const auto listed = c->find("enum");
    if (listed == c->end() || !listed->is_array()) return false;
    for (const Json& v : *listed) {
      auto seen = std::find_if(values.begin(), values.end(), [&](const auto& p) { return p.first == v; });
      if (seen == values.end()) values.emplace_back(v, 1);
      else ++seen->second;
    }
    return enums = true;
  };
  for (const Json& child : all_of) {
    const auto any_of = child.is_object() ? child.find("anyOf") : child.end();
    if (child.is_object() && any_of != child.end() && any_of->is_array()) {
      for (const Json& alternative : *any_of) {
        if (!add(alternative, false)) return std::nullopt;
      }
    } else if (!add(child, true)) {
      return std::nullopt;
    }
  }
  if (objects == enums) return std::nullopt;  // neither, or both kinds
  if (objects) {
    return Json{{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)},
                {"additionalProperties", false}};
  }
  Json in_all = Json::array();
  for (auto& [v, n] : values) {
    if (n == all_of.size()) in_all.push_back(std::move(v));
  }
  if (in_all.empty()) return std::nullopt;
  return Json{{"enum", std::move(in_all)}};
}

// Every allOf of several schemas that merge_all_of reads, beside nothing
// but annotations and `type`, replaced by what it reads.
void merge_all_ofs(Json& out, const Json& root) {
  visit_schemas(out, "", [&](Json& s, const std::string&) {
    const auto all_of = s.find("allOf");
    if (all_of == s.end() || !all_of->is_array() || all_of->size() < 2) return;
    for (const auto& item : s.items()) {
      if (item.key() != "allOf" && item.key() != "type" && !is_one_of(kAnnotations, item.key())) return;
    }
    std::optional<Json> merged = merge_all_of(*all_of, root);
    if (!merged) return;
    s.erase("allOf");
    s.erase("type");
    for (auto& [key, value] : merged->items()) s[key] = std::move(value);
  });
}

}  // namespace

Json normalize_schema(const Json& schema) {
  Json out = schema;
  merge_all_ofs(out, schema);
  visit_schemas(out, "", [](Json& s, const std::string& pointer) {
    check_enforceable(s, pointer);
    infer_type(s);
    rewrite_array(s);
    bound_integer(s, pointer);
    rewrite_date_format(s);
    rewrite_bounded_string(s);
  });
  return out;
}

}  // namespace cohort::server
