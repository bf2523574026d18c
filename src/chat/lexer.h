// Tokenizer for the Jinja subset, with jinja2's whitespace rules as
// transformers configures them (trim_blocks=True, lstrip_blocks=True,
// keep_trailing_newline=False).
//
// The rules mirror jinja2.lexer.Lexer.tokeniter:
// - line endings (\r\n, \r) become \n and one trailing newline is dropped;
// - `{%-`, `{{-`, `{#-` strip all whitespace before the tag, `-%}`, `-}}`,
//   `-#}` all whitespace after it;
// - trim_blocks: one newline right after `%}` or `#}` is removed (`+%}` keeps it);
// - lstrip_blocks: spaces and tabs between the start of a line and `{%` or
//   `{#` are removed (`{%+` keeps them);
// - `{% raw %}...{% endraw %}` is data;
// - inside a tag, `%}`/`}}` only close it while brackets are balanced.
// Comments produce no tokens. Errors throw ChatTemplateError (Syntax).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chat/template_error.h"

namespace cohort::chat {

enum class TokenType {
  Data,           // literal text to output
  VariableBegin,  // {{
  VariableEnd,    // }}
  BlockBegin,     // {%
  BlockEnd,       // %}
  Name,
  String,         // value holds the decoded literal
  Integer,
  Float,
  Operator,       // value holds the operator text: "+", "//", "[", ...
  End,            // end of the template
};

struct Token {
  TokenType type = TokenType::End;
  std::string value;
  int64_t int_value = 0;
  double float_value = 0.0;
  SourcePos pos;
};

// Tokens of a whole template, ending with one End token.
std::vector<Token> tokenize(std::string_view source);

}  // namespace cohort::chat
