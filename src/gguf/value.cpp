#include "gguf/value.h"

#include <array>
#include <limits>

#include <fmt/format.h>

#include "common/error.h"

namespace cohort::gguf {

std::string_view value_type_name(ValueType type) {
  static constexpr std::array<std::string_view, kValueTypeCount> kNames = {
      "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
      "bool", "string", "array", "uint64", "int64", "float64"};
  auto i = static_cast<uint32_t>(type);
  return i < kValueTypeCount ? kNames[i] : "invalid";
}

uint64_t min_encoded_size(ValueType type) {
  switch (type) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::BOOL: return 1;
    case ValueType::UINT16: case ValueType::INT16: return 2;
    case ValueType::UINT32: case ValueType::INT32: case ValueType::FLOAT32: return 4;
    case ValueType::UINT64: case ValueType::INT64: case ValueType::FLOAT64: return 8;
    case ValueType::STRING: return 8;
    case ValueType::ARRAY: return 12;
  }
  return 1;
}

Value::Value(Array array) : v_(std::make_shared<const Array>(std::move(array))) {}

const Array* Value::as_array() const {
  auto p = std::get_if<std::shared_ptr<const Array>>(&v_);
  return p ? p->get() : nullptr;
}

bool Value::is_integer() const {
  switch (type()) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::UINT16: case ValueType::INT16:
    case ValueType::UINT32: case ValueType::INT32: case ValueType::UINT64: case ValueType::INT64:
      return true;
    default:
      return false;
  }
}

std::optional<int64_t> Value::as_int() const {
  if (!is_integer()) return std::nullopt;
  if (auto u = std::get_if<uint64_t>(&v_)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  return std::visit(
      [](const auto& x) -> int64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T>) return static_cast<int64_t>(x);
        else return 0;
      },
      v_);
}

std::optional<double> Value::as_double() const {
  if (auto f = std::get_if<float>(&v_)) return *f;
  if (auto d = std::get_if<double>(&v_)) return *d;
  if (auto u = std::get_if<uint64_t>(&v_)) return static_cast<double>(*u);
  if (auto i = as_int()) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
  if (auto b = std::get_if<bool>(&v_)) return *b;
  return std::nullopt;
}

std::string Value::to_display() const {
  if (auto s = as_string()) {
    constexpr size_t kMax = 60;
    std::string shown = s->size() > kMax ? s->substr(0, kMax) + "..." : *s;
    for (char& c : shown) {
      if (c == '\n') c = ' ';
    }
    return fmt::format("\"{}\"", shown);
  }
  if (auto a = as_array()) {
    return fmt::format("[{}; {}]", value_type_name(a->elem_type), a->items.size());
  }
  if (auto b = as_bool()) return *b ? "true" : "false";
  if (auto f = std::get_if<float>(&v_)) return fmt::format("{}", *f);
  if (auto d = std::get_if<double>(&v_)) return fmt::format("{}", *d);
  if (auto u = std::get_if<uint64_t>(&v_)) return fmt::format("{}", *u);
  return fmt::format("{}", as_int().value_or(0));
}

bool Value::operator==(const Value& other) const {
  if (type() != other.type()) return false;
  if (auto a = as_array()) return *a == *other.as_array();
  return v_ == other.v_;
}

bool Metadata::insert(std::string key, Value value) {
  if (index_.count(key) != 0) return false;
  index_.emplace(key, entries_.size());
  entries_.emplace_back(std::move(key), std::move(value));
  return true;
}

void Metadata::set(std::string key, Value value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  insert(std::move(key), std::move(value));
}

const Value* Metadata::find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

std::optional<std::string> Metadata::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (auto s = v->as_string()) return *s;
  fail("metadata key '{}' has type {}, expected string", key, value_type_name(v->type()));
}

std::optional<int64_t> Metadata::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (auto i = v->as_int()) return *i;
  fail("metadata key '{}' has type {} ({}), expected an integer", key,
       value_type_name(v->type()), v->to_display());
}

std::optional<double> Metadata::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (auto d = v->as_double()) return *d;
  fail("metadata key '{}' has type {}, expected a number", key, value_type_name(v->type()));
}

std::optional<bool> Metadata::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (auto b = v->as_bool()) return *b;
  fail("metadata key '{}' has type {}, expected bool", key, value_type_name(v->type()));
}

const Array* Metadata::get_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return nullptr;
  if (auto a = v->as_array()) return a;
  fail("metadata key '{}' has type {}, expected array", key, value_type_name(v->type()));
}

}  // namespace cohort::gguf
