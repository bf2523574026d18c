#include "server/structured_output.h"

#include <optional>
#include <string>

#include <fmt/format.h>

#include "common/error.h"
#include "server/schema_normalization.h"

namespace cohort::server {
namespace {

// What a request asks for, before compiling.
struct Constraint {
  enum class Kind { gbnf, schema, any_json } kind;
  std::string text;   // the GBNF, or the schema as JSON text
  std::string field;  // the field it came from, for errors
};

// A JSON schema: an object (a boolean schema constrains nothing useful).
Constraint schema_of(const Json& schema, const std::string& field) {
  if (!schema.is_object()) {
    reject_field(field, fmt::format("must be a JSON schema (an object), got {}", json_type_name(schema)));
  }
  try {
    return {Constraint::Kind::schema, normalize_schema(schema).dump(), field};
  } catch (const Error& e) {
    reject_field(field, e.what());
  }
}

std::optional<Constraint> read_response_format(const Json& body) {
  const Json* format = read_object(body, "response_format");
  if (!format) return std::nullopt;
  const auto type_field = format->find("type");
  if (type_field == format->end() || type_field->is_null()) reject_field("response_format.type", "is required");
  if (!type_field->is_string()) {
    reject_field("response_format.type", fmt::format("must be a string, got {}", json_type_name(*type_field)));
  }
  const std::string* type = &type_field->get_ref<const std::string&>();
  if (*type == "text") return std::nullopt;
  if (*type == "json_object") {
    const auto schema = format->find("schema");
    if (schema == format->end() || schema->is_null()) {
      return Constraint{Constraint::Kind::any_json, "", "response_format"};
    }
    return schema_of(*schema, "response_format.schema");
  }
  if (*type == "json_schema") {
    const auto wrapper = format->find("json_schema");
    if (wrapper == format->end() || !wrapper->is_object()) {
      reject_field("response_format.json_schema",
                   "must be an object holding the schema when 'type' is \"json_schema\"");
    }
    const auto schema = wrapper->find("schema");
    if (schema == wrapper->end() || schema->is_null()) {
      reject_field("response_format.json_schema.schema", "is required");
    }
    return schema_of(*schema, "response_format.json_schema.schema");
  }
  reject_field("response_format.type",
               fmt::format("must be \"text\", \"json_object\" or \"json_schema\", got \"{}\"", *type));
}

// The one constraint the request asks for, if any.
std::optional<Constraint> read_constraint(const Json& body) {
  std::optional<Constraint> found;
  auto add = [&](std::optional<Constraint> c) {
    if (!c) return;
    if (found) {
      reject_field(c->field, fmt::format("cannot be combined with '{}': give one grammar, schema or "
                                         "response_format", found->field));
    }
    found = std::move(c);
  };
  if (auto gbnf = read_string(body, "grammar"); gbnf && !gbnf->empty()) {
    add(Constraint{Constraint::Kind::gbnf, *gbnf, "grammar"});
  }
  if (const auto it = body.find("json_schema"); it != body.end() && !it->is_null()) {
    add(schema_of(*it, "json_schema"));
  }
  add(read_response_format(body));
  return found;
}

}  // namespace

std::shared_ptr<const engine::Grammar> read_structured_output(const Json& body,
                                                              const engine::GrammarCompiler* compiler) {
  const std::optional<Constraint> c = read_constraint(body);
  if (!c) return nullptr;
  if (compiler == nullptr) reject_field(c->field, "is not supported by this server");
  try {
    switch (c->kind) {
      case Constraint::Kind::gbnf: return compiler->gbnf(c->text);
      case Constraint::Kind::schema: return compiler->json_schema(c->text);
      case Constraint::Kind::any_json: return compiler->any_json();
    }
  } catch (const Error& e) {
    reject_field(c->field, e.what());
  }
  return nullptr;
}

}  // namespace cohort::server
