// The structured-output fields of a generation request, read into the
// grammar that constrains its output (engine/grammar.h):
//   grammar          GBNF text, as llama-server takes it ("" or absent: none);
//   json_schema      a JSON schema object (llama-server);
//   response_format  OpenAI's {"type": "text" | "json_object" | "json_schema"}:
//                    json_object is any JSON object, or the schema
//                    in its "schema" (llama-server's form); json_schema is
//                    the schema in json_schema.schema.
// At most one of them may constrain a request. A schema is normalized
// first (server/schema_normalization.h). A malformed field, an unknown
// response_format type, a schema keyword the engine would ignore (named,
// with its JSON pointer) or a grammar or schema the engine refuses is a
// RequestError 400 naming the field and, in the engine's words, what is
// wrong with it.
//
// Thread safety: pure (the compiler is thread-safe).
#pragma once

#include <memory>

#include "engine/grammar.h"
#include "server/request_fields.h"

namespace cohort::server {

// The request's grammar, compiled by `compiler`; null when it asks for none.
// A request that asks for one where `compiler` is null is refused (400).
std::shared_ptr<const engine::Grammar> read_structured_output(const Json& body,
                                                              const engine::GrammarCompiler* compiler);

}  // namespace cohort::server
