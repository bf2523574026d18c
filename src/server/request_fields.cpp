#include "server/request_fields.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace cohort::server {
namespace {

// The field's value if present and not null.
const Json* given(const Json& body, const std::string& field) {
  const auto it = body.find(field);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void wrong_type(const std::string& field, const char* expected, const Json& value) {
  reject_field(field, fmt::format("must be {}, got {}", expected, json_type_name(value)));
}

std::string number_text(double v) {
  return std::isfinite(v) ? fmt::format("{}", v) : std::string(v > 0 ? "inf" : "-inf");
}

}  // namespace

void reject_field(const std::string& field, const std::string& what) {
  throw RequestError(400, fmt::format("'{}' {}", field, what), field);
}

const char* json_type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::string: return "string";
    case Json::value_t::array: return "array";
    case Json::value_t::object: return "object";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer";
    case Json::value_t::number_float: return "number";
    default: return "binary";
  }
}

std::optional<bool> read_bool(const Json& body, const std::string& field) {
  const Json* v = given(body, field);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(field, "a boolean", *v);
  return v->get<bool>();
}

std::optional<std::string> read_string(const Json& body, const std::string& field) {
  const Json* v = given(body, field);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(field, "a string", *v);
  return v->get<std::string>();
}

std::optional<int64_t> read_int(const Json& body, const std::string& field, int64_t lo, int64_t hi) {
  const Json* v = given(body, field);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) wrong_type(field, "an integer", *v);
  const bool too_big = v->is_number_unsigned() &&
                       v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const int64_t x = too_big ? std::numeric_limits<int64_t>::max() : v->get<int64_t>();
  if (too_big || x < lo || x > hi) {
    reject_field(field, fmt::format("must be between {} and {}, got {}", lo, hi, v->dump()));
  }
  return x;
}

std::optional<double> read_number(const Json& body, const std::string& field, double lo, double hi,
                                  bool lo_open) {
  const Json* v = given(body, field);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(field, "a number", *v);
  const double x = v->get<double>();
  const bool low = lo_open ? !(x > lo) : !(x >= lo);
  if (!std::isfinite(x) || low || !(x <= hi)) {
    reject_field(field, fmt::format("must be {} {} and <= {}, got {}", lo_open ? ">" : ">=",
                                    number_text(lo), number_text(hi), number_text(x)));
  }
  return x;
}

const Json* read_object(const Json& body, const std::string& field) {
  const Json* v = given(body, field);
  if (v && !v->is_object()) wrong_type(field, "an object", *v);
  return v;
}

}  // namespace cohort::server
