// llama.cpp's GBNF in the grammar engine's dialect (xgrammar's EBNF). The
// two read the same text the same way but in two spots, which this rewrites:
//   - an empty alternative (`ws ::= | " "`, `( | "a")`, as in llama.cpp's own
//     grammars/json.gbnf) is the empty string; the engine wants "" written;
//   - `.` is any one character (code point), a newline too; the engine has no
//     `.` (it reads a rule named "."), and is given the class of every code
//     point, [\u0000-\U0010FFFF], as its own regex converter writes `.`.
#pragma once

#include <string>
#include <string_view>

namespace cohort::engine {

// `gbnf` with "" written wherever an alternative is empty (after `::=`, `|`
// or `(`, when what follows, past blanks, newlines and comments, is `|`, `)`
// or the end) and every `.` written as the class of all code points. Strings,
// character classes and comments are skipped as GBNF reads them. Other text
// is unchanged (a grammar with neither comes back equal).
std::string rewrite_llama_gbnf(std::string_view gbnf);

}  // namespace cohort::engine
