#include "chat/template_error.h"

#include <fmt/format.h>

namespace cohort::chat {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Syntax: return "syntax error";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::Runtime: return "error";
    case ErrorKind::Raised: return "raised";
    case ErrorKind::Limit: return "limit exceeded";
  }
  return "error";
}

ChatTemplateError located_error(ErrorKind kind, SourcePos pos, const std::string& what) {
  if (kind == ErrorKind::Raised) {
    return ChatTemplateError(kind, fmt::format("chat template raised an exception at line {}, column {}: {}",
                                               pos.line, pos.column, what));
  }
  return ChatTemplateError(kind, fmt::format("chat template {} at line {}, column {}: {}", error_kind_name(kind),
                                             pos.line, pos.column, what));
}

}  // namespace cohort::chat
