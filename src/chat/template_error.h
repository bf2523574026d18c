// Errors of the chat template engine.
//
// Every failure a template can cause (bad syntax, a construct this engine does
// not implement, a runtime type error, an explicit raise_exception(), a limit)
// reaches callers as ChatTemplateError, a cohort::Error whose message names the
// line and column in the template source. kind() lets callers tell "this
// template is beyond the engine" (Syntax, Unsupported: fall back) from "this
// conversation is rejected by the template" (Raised, Runtime, Limit: report).
#pragma once

#include <string>
#include <utility>

#include "common/error.h"

namespace cohort::chat {

enum class ErrorKind {
  Syntax,       // the source is not valid Jinja
  Unsupported,  // valid Jinja, but a tag, filter, test or method this engine lacks
  Runtime,      // a type error, undefined value, division by zero... while rendering
  Raised,       // the template called raise_exception(message)
  Limit,        // output size, loop iterations or nesting depth exceeded
};

const char* error_kind_name(ErrorKind kind);

class ChatTemplateError : public Error {
 public:
  ChatTemplateError(ErrorKind kind, const std::string& message) : Error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// A 1-based position in the template source.
struct SourcePos {
  int line = 0;
  int column = 0;
};

// Thrown by value operations, filters and methods, which do not know where in
// the template they run; the evaluator attaches the position of the innermost
// expression or statement and turns it into a ChatTemplateError.
struct Fault {
  ErrorKind kind = ErrorKind::Runtime;
  std::string message;
  bool located = false;
  SourcePos pos;
};

[[noreturn]] inline void fault(ErrorKind kind, std::string message) {
  throw Fault{kind, std::move(message), false, {}};
}
[[noreturn]] inline void runtime_fault(std::string message) {
  fault(ErrorKind::Runtime, std::move(message));
}

// The public error for a fault at `pos`.
ChatTemplateError located_error(ErrorKind kind, SourcePos pos, const std::string& what);

}  // namespace cohort::chat
