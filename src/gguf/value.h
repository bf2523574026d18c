// GGUF metadata values: the thirteen value types of the format, arrays of any
// of them (arrays may nest), and an ordered key/value table.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cohort::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5,
  FLOAT32 = 6, BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11,
  FLOAT64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;

std::string_view value_type_name(ValueType type);
// Bytes a value of this type occupies at least in a file (strings: their
// length field; arrays: type and count fields).
uint64_t min_encoded_size(ValueType type);

struct Array;

// One metadata value. Holds exactly the type it was read or built with.
class Value {
 public:
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float,
                               bool, std::string, std::shared_ptr<const Array>, uint64_t,
                               int64_t, double>;

  Value() : v_(uint8_t{0}) {}
  template <typename T>
  explicit Value(T v) : v_(std::move(v)) {}
  explicit Value(const char* s) : v_(std::string(s)) {}
  explicit Value(Array array);

  // The variant index equals the GGUF type id by construction.
  ValueType type() const { return static_cast<ValueType>(v_.index()); }
  const Storage& storage() const { return v_; }

  bool is_integer() const;
  // Integer value of any integer type, if it fits in int64 (uint64 above
  // INT64_MAX does not).
  std::optional<int64_t> as_int() const;
  // Any integer or float type, as double.
  std::optional<double> as_double() const;
  const std::string* as_string() const { return std::get_if<std::string>(&v_); }
  const Array* as_array() const;
  std::optional<bool> as_bool() const;

  // Short human rendering: numbers, quoted strings, arrays as `[type; n]`.
  std::string to_display() const;

  bool operator==(const Value& other) const;

 private:
  Storage v_;
};

struct Array {
  ValueType elem_type = ValueType::UINT8;
  std::vector<Value> items;
  bool operator==(const Array& other) const {
    return elem_type == other.elem_type && items == other.items;
  }
};

// Metadata in file order, with lookup by key. Keys are unique.
class Metadata {
 public:
  // Returns false (and changes nothing) if the key already exists.
  bool insert(std::string key, Value value);
  // Sets or replaces.
  void set(std::string key, Value value);
  const Value* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

  // Typed getters: nullopt when absent; cohort::Error naming the key when
  // present with a type that does not convert.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  const Array* get_array(std::string_view key) const;

 private:
  std::vector<std::pair<std::string, Value>> entries_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace cohort::gguf
