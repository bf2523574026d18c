#include "chat/value.h"

#include <nlohmann/json.hpp>

#include "chat/python_format.h"
#include "chat/template_error.h"

namespace cohort::chat {

namespace {

const std::string kEmpty;

// Python hashes equal numbers equally; only strings are indexed, other keys
// are few in practice and searched linearly.
bool same_key(const Value& a, const Value& b) {
  if (a.is_string() != b.is_string()) return false;
  return equals(a, b);
}

}  // namespace

const Value* DictData::find(std::string_view key) const {
  auto it = string_index_.find(std::string(key));
  return it == string_index_.end() ? nullptr : &entries_[it->second].second;
}

const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  for (const auto& [k, v] : entries_) {
    if (same_key(k, key)) return &v;
  }
  return nullptr;
}

void DictData::set(const Value& key, Value value) {
  if (key.is_string()) {
    auto [it, inserted] = string_index_.emplace(key.str(), entries_.size());
    if (!inserted) {
      entries_[it->second].second = std::move(value);
      return;
    }
    entries_.emplace_back(key, std::move(value));
    return;
  }
  for (auto& [k, v] : entries_) {
    if (same_key(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(key, std::move(value));
}

Value Value::undefined(std::string hint) {
  return Value(Storage(Undef{std::make_shared<const std::string>(std::move(hint))}));
}

Value Value::string(std::string s) {
  return Value(Storage(std::make_shared<const std::string>(std::move(s))));
}

Value Value::list(std::vector<Value> items, SeqKind kind) {
  auto l = std::make_shared<ListData>();
  l->items = std::move(items);
  l->kind = kind;
  return Value(Storage(ListPtr(std::move(l))));
}

Value Value::range(std::vector<Value> items, std::string text) {
  auto l = std::make_shared<ListData>();
  l->items = std::move(items);
  l->kind = SeqKind::Range;
  l->range_text = std::move(text);
  return Value(Storage(ListPtr(std::move(l))));
}

Value Value::dict(DictData d) {
  return Value(Storage(DictPtr(std::make_shared<const DictData>(std::move(d)))));
}

Value Value::function(std::string name, std::function<Value(const CallArgs&)> fn) {
  auto f = std::make_shared<Function>();
  f->name = std::move(name);
  f->call = std::move(fn);
  return Value(Storage(FnPtr(std::move(f))));
}

double Value::as_double() const {
  if (is_float()) return float_value();
  return static_cast<double>(as_int());
}

const std::string& Value::undefined_hint() const {
  const auto& u = std::get<Undef>(v_);
  return u.hint ? *u.hint : kEmpty;
}

const void* Value::identity() const {
  switch (type()) {
    case Type::String: return std::get<StrPtr>(v_).get();
    case Type::List: return std::get<ListPtr>(v_).get();
    case Type::Dict: return std::get<DictPtr>(v_).get();
    case Type::Object: return std::get<ObjPtr>(v_).get();
    case Type::Function: return std::get<FnPtr>(v_).get();
    default: return nullptr;
  }
}

bool truthy(const Value& v) {
  switch (v.type()) {
    case Value::Type::Undefined:
    case Value::Type::None: return false;
    case Value::Type::Bool: return v.bool_value();
    case Value::Type::Int: return v.int_value() != 0;
    case Value::Type::Float: return v.float_value() != 0.0;
    case Value::Type::String: return !v.str().empty();
    case Value::Type::List: return v.list().kind == SeqKind::Generator || !v.list().items.empty();
    case Value::Type::Dict: return v.dict().size() != 0;
    case Value::Type::Object:
    case Value::Type::Function: return true;
  }
  return false;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::Undefined:
    case Value::Type::None: return true;
    case Value::Type::String: return a.str() == b.str();
    case Value::Type::List: {
      const auto& x = a.list();
      const auto& y = b.list();
      if (x.kind != y.kind || x.kind == SeqKind::Generator) return x.kind == y.kind && &x == &y;
      if (x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!equals(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case Value::Type::Dict: {
      const auto& x = a.dict();
      const auto& y = b.dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries()) {
        const Value* other = y.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

std::string type_name(const Value& v) {
  switch (v.type()) {
    case Value::Type::Undefined: return "Undefined";
    case Value::Type::None: return "NoneType";
    case Value::Type::Bool: return "bool";
    case Value::Type::Int: return "int";
    case Value::Type::Float: return "float";
    case Value::Type::String: return "str";
    case Value::Type::List:
      switch (v.list().kind) {
        case SeqKind::List: return "list";
        case SeqKind::Tuple: return "tuple";
        case SeqKind::Range: return "range";
        case SeqKind::Generator: return "generator";
        case SeqKind::DictKeys: return "dict_keys";
        case SeqKind::DictValues: return "dict_values";
        case SeqKind::DictItems: return "dict_items";
      }
      return "list";
    case Value::Type::Dict: return "dict";
    case Value::Type::Object: return v.object().kind == ObjectKind::Loop ? "LoopContext" : "Namespace";
    case Value::Type::Function: return "function";
  }
  return "object";
}

namespace {

constexpr int kMaxNesting = 256;  // printing and JSON conversion depth

std::string repr_at(const Value& v, int depth);
std::string str_at(const Value& v, int depth);

std::string repr_list(const ListData& l, int depth) {
  switch (l.kind) {
    case SeqKind::Range: return l.range_text;
    case SeqKind::Generator: return "<generator object>";
    case SeqKind::DictKeys: return "dict_keys(" + repr_list(ListData{l.items, SeqKind::List, {}}, depth) + ")";
    case SeqKind::DictValues: return "dict_values(" + repr_list(ListData{l.items, SeqKind::List, {}}, depth) + ")";
    case SeqKind::DictItems: return "dict_items(" + repr_list(ListData{l.items, SeqKind::List, {}}, depth) + ")";
    default: break;
  }
  std::string out = l.is_tuple() ? "(" : "[";
  for (size_t i = 0; i < l.items.size(); ++i) {
    if (i > 0) out += ", ";
    out += repr_at(l.items[i], depth + 1);
  }
  if (l.is_tuple() && l.items.size() == 1) out += ",";
  out += l.is_tuple() ? ")" : "]";
  return out;
}

std::string repr_dict(const DictData& d, int depth) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : d.entries()) {
    if (!first) out += ", ";
    first = false;
    out += repr_at(k, depth + 1) + ": " + repr_at(v, depth + 1);
  }
  return out + "}";
}

std::string repr_at(const Value& v, int depth) {
  switch (v.type()) {
    case Value::Type::Undefined: return "Undefined";
    case Value::Type::String: return repr_string(v.str());
    default: return str_at(v, depth);
  }
}

std::string str_at(const Value& v, int depth) {
  if (depth > kMaxNesting) runtime_fault("value nests too deeply to print");
  switch (v.type()) {
    case Value::Type::Undefined: return "";
    case Value::Type::None: return "None";
    case Value::Type::Bool: return v.bool_value() ? "True" : "False";
    case Value::Type::Int: return std::to_string(v.int_value());
    case Value::Type::Float: return format_float(v.float_value());
    case Value::Type::String: return v.str();
    case Value::Type::List: return repr_list(v.list(), depth);
    case Value::Type::Dict: return repr_dict(v.dict(), depth);
    case Value::Type::Object:
      if (v.object().kind == ObjectKind::Loop) {
        const Value* index = v.object().attrs.find(std::string_view("index"));
        const Value* length = v.object().attrs.find(std::string_view("length"));
        return "<LoopContext " + (index ? to_str(*index) : "?") + "/" + (length ? to_str(*length) : "?") + ">";
      }
      return "<Namespace " + repr_dict(v.object().attrs, depth) + ">";
    case Value::Type::Function: return "<function " + v.function().name + ">";
  }
  return "";
}

Value json_at(const nlohmann::ordered_json& j, int depth);

}  // namespace

std::string repr(const Value& v) { return repr_at(v, 0); }
std::string to_str(const Value& v) { return str_at(v, 0); }
Value from_json(const nlohmann::ordered_json& j) { return json_at(j, 0); }

namespace {

Value json_at(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxNesting) {
    throw ChatTemplateError(ErrorKind::Limit, "chat template input nests deeper than 256 levels");
  }
  using J = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case J::null: return Value::none();
    case J::boolean: return Value::boolean(j.get<bool>());
    case J::number_integer: return Value::integer(j.get<int64_t>());
    case J::number_unsigned: {
      const auto u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
      return Value::number(static_cast<double>(u));
    }
    case J::number_float: return Value::number(j.get<double>());
    case J::string: return Value::string(j.get<std::string>());
    case J::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(json_at(e, depth + 1));
      return Value::list(std::move(items));
    }
    case J::object: {
      DictData d;
      for (const auto& [k, e] : j.items()) d.set(Value::string(k), json_at(e, depth + 1));
      return Value::dict(std::move(d));
    }
    default: return Value::none();
  }
}

}  // namespace
}  // namespace cohort::chat
