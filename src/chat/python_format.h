// Text forms that Python gives values, which templates print byte for byte:
// repr() of floats and strings, and json.dumps() as the `tojson` filter of
// transformers calls it (ensure_ascii=False, key order kept).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "chat/value.h"

namespace cohort::chat {

// Python repr(float): shortest round-trip digits; "1.0", "1e+16", "1e-05", "inf", "nan".
std::string format_float(double v);
// Python repr(str): quotes chosen as Python does, escapes for non-printables.
std::string repr_string(std::string_view s);

struct JsonOptions {
  std::optional<std::string> indent;  // nullopt: one line; else the unit of indentation
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool ensure_ascii = false;
  bool sort_keys = false;
};

// Python json.dumps(v, ...). Faults (Runtime) on values JSON cannot hold
// (Undefined, functions, namespaces) and on nesting deeper than `max_depth`.
std::string to_json(const Value& v, const JsonOptions& options, int max_depth = 256);

}  // namespace cohort::chat
