// llama.cpp's GBNF reads an empty alternative as the empty string
// (`ws ::= | " "`, `( | "a")`, as in its own grammars/json.gbnf); the
// grammar engine wants that written as "". This rewrites those spots.
#pragma once

#include <string>
#include <string_view>

namespace cohort::engine {

// `gbnf` with "" written wherever an alternative is empty: after `::=`, `|`
// or `(`, when what follows (past blanks, newlines and comments) is `|`, `)`
// or the end. Strings, character classes and comments are skipped as GBNF
// reads them. Other text is unchanged (a grammar with no empty alternative
// comes back equal).
std::string write_empty_alternatives(std::string_view gbnf);

}  // namespace cohort::engine
