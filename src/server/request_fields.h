// Typed reading of the known fields of a JSON request body.
//
// An absent field or JSON null means "not given" (nullopt), as in OpenAI's
// API. A field present with the wrong JSON type, or a value outside its
// range, is a RequestError (400) whose message and param name the field.
// Fields the server does not know are never looked at.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/request_error.h"

namespace cohort::server {

using Json = nlohmann::ordered_json;

// [[noreturn]] RequestError 400 naming `field`: "'<field>' <what>".
[[noreturn]] void reject_field(const std::string& field, const std::string& what);

std::optional<bool> read_bool(const Json& body, const std::string& field);
std::optional<std::string> read_string(const Json& body, const std::string& field);
// An integer (JSON integer, not 1.5 or "1") in [lo, hi].
std::optional<int64_t> read_int(const Json& body, const std::string& field, int64_t lo, int64_t hi);
// A number in [lo, hi], or (lo, hi] when lo_open.
std::optional<double> read_number(const Json& body, const std::string& field, double lo, double hi,
                                  bool lo_open = false);
// An object (for nested options such as stream_options).
const Json* read_object(const Json& body, const std::string& field);

// The JSON type name as users know it ("string", "integer", "array", ...).
const char* json_type_name(const Json& value);

}  // namespace cohort::server
