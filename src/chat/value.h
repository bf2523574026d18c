// Values of the template language: Python's objects as Jinja sees them.
//
// A Value is one of: Undefined (a missing variable, key or attribute; renders
// as "" and fails when used in arithmetic, as jinja2's default Undefined does),
// None, Bool, Int (64-bit; overflow is an error where Python would grow),
// Float, String (UTF-8), List (also tuples), Dict (insertion-ordered), Object
// (namespace() and the loop variable: mutable attributes), and Function
// (built-in functions, bound methods, macros).
//
// Copying a Value is cheap: strings, lists, dicts, objects and functions are
// shared, immutable (lists, dicts, strings) or deliberately shared-mutable
// (objects, whose attributes `{% set ns.x = ... %}` changes for every holder).
// Values are used by one render at a time; nothing here is thread-safe beyond
// what const access to immutable data gives.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace cohort::chat {

class Value;

// Arguments of a call: f(a, b, key=c).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Function {
  std::string name;  // shown when a function is printed and in errors
  std::function<Value(const CallArgs&)> call;
};

// The Python sequence a ListData stands for. Template syntax builds lists
// and tuples; the others come from range(), from filters that jinja2
// implements as generators (select, map, unique...) and from dict views
// (d.items()). They differ in printing, truthiness (a generator is always
// true), len() (a generator has none) and indexing (only List, Tuple, Range).
enum class SeqKind : uint8_t { List, Tuple, Range, Generator, DictKeys, DictValues, DictItems };

struct ListData {
  std::vector<Value> items;
  SeqKind kind = SeqKind::List;
  std::string range_text;  // Range: how Python prints it, "range(0, 3)"

  bool is_tuple() const { return kind == SeqKind::Tuple; }
  bool indexable() const { return kind == SeqKind::List || kind == SeqKind::Tuple || kind == SeqKind::Range; }
};

// Insertion-ordered mapping with Python key equality (1 == 1.0 == True).
// String keys are also indexed by hash so large objects stay fast.
class DictData {
 public:
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Inserts, or replaces the value of an equal key in place.
  void set(const Value& key, Value value);
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<std::pair<Value, Value>> entries_;
  std::unordered_map<std::string, size_t> string_index_;
};

enum class ObjectKind { Namespace, Loop };

struct ObjectData {
  ObjectKind kind = ObjectKind::Namespace;
  DictData attrs;
};

class Value {
 public:
  enum class Type : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Object, Function };

  // Undefined, with the message to give when it is used where a value is
  // required ("'x' is undefined", "'dict object' has no attribute 'y'").
  Value() : v_(Undef{}) {}
  static Value undefined(std::string hint);
  static Value none() { return Value(Storage(nullptr)); }
  static Value boolean(bool b) { return Value(Storage(b)); }
  static Value integer(int64_t i) { return Value(Storage(i)); }
  static Value number(double f) { return Value(Storage(f)); }
  static Value string(std::string s);
  static Value list(std::vector<Value> items, SeqKind kind = SeqKind::List);
  static Value range(std::vector<Value> items, std::string text);
  static Value dict(DictData d);
  static Value object(std::shared_ptr<ObjectData> o) { return Value(Storage(std::move(o))); }
  static Value function(std::string name, std::function<Value(const CallArgs&)> fn);

  Type type() const { return static_cast<Type>(v_.index()); }
  bool is_undefined() const { return type() == Type::Undefined; }
  bool is_none() const { return type() == Type::None; }
  bool is_bool() const { return type() == Type::Bool; }
  bool is_int() const { return type() == Type::Int; }
  bool is_float() const { return type() == Type::Float; }
  bool is_string() const { return type() == Type::String; }
  bool is_list() const { return type() == Type::List; }
  bool is_dict() const { return type() == Type::Dict; }
  bool is_object() const { return type() == Type::Object; }
  bool is_function() const { return type() == Type::Function; }
  // Bool, Int or Float (Python's bool is an int).
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_integral() const { return is_bool() || is_int(); }

  bool bool_value() const { return std::get<bool>(v_); }
  int64_t int_value() const { return std::get<int64_t>(v_); }
  double float_value() const { return std::get<double>(v_); }
  // REQUIRES: is_integral().
  int64_t as_int() const { return is_bool() ? (bool_value() ? 1 : 0) : int_value(); }
  // REQUIRES: is_number().
  double as_double() const;
  const std::string& str() const { return *std::get<StrPtr>(v_); }
  const ListData& list() const { return *std::get<ListPtr>(v_); }
  const DictData& dict() const { return *std::get<DictPtr>(v_); }
  ObjectData& object() const { return *std::get<ObjPtr>(v_); }
  const Function& function() const { return *std::get<FnPtr>(v_); }
  const std::string& undefined_hint() const;
  // Identity of shared data, for the `sameas` test.
  const void* identity() const;

 private:
  struct Undef {
    std::shared_ptr<const std::string> hint;
  };
  using StrPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const ListData>;
  using DictPtr = std::shared_ptr<const DictData>;
  using ObjPtr = std::shared_ptr<ObjectData>;
  using FnPtr = std::shared_ptr<const Function>;
  using Storage = std::variant<Undef, std::nullptr_t, bool, int64_t, double, StrPtr, ListPtr,
                               DictPtr, ObjPtr, FnPtr>;

  explicit Value(Storage v) : v_(std::move(v)) {}
  Storage v_;
};

// Python truthiness (empty string, list, dict, 0, None, Undefined are false).
bool truthy(const Value& v);
// Python `==`.
bool equals(const Value& a, const Value& b);
// Python's type name: "str", "int", "dict", "NoneType", "Undefined"...
std::string type_name(const Value& v);

// Python str() and repr() of a value; Undefined is "".
std::string to_str(const Value& v);
std::string repr(const Value& v);

// JSON input (messages, tools, extra context) as template values.
Value from_json(const nlohmann::ordered_json& j);

}  // namespace cohort::chat
