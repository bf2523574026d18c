// Turns a pre-tokenizer regex, written as llama.cpp lists it, into a PCRE2
// pattern that splits text exactly as llama.cpp does.
//
// llama.cpp does not run these patterns with Unicode-aware \s or \p{..}. It
// either (a) replaces every non-ASCII code point by one byte standing for its
// category and runs std::regex on that, or (b) runs std::wregex on the code
// points with non-ASCII white space replaced by '\v'. The visible effects,
// which the rewrite reproduces under PCRE2 in UTF mode *without* UCP (so \d,
// \w and \b stay ASCII, as in std::regex):
//   - \s and \S mean Unicode White_Space (ASCII \t-\r and space, U+0085,
//     U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000);
//   - \p{Lu} \p{Ll} \p{Lt} \p{Lm} \p{Lo} all mean \p{L};
//   - a literal non-ASCII White_Space character inside a class never matches
//     (the text holds '\v' there), so it is removed from classes and ranges.
#pragma once

#include <string>
#include <string_view>

namespace cohort::tokenizer {

// REQUIRES: the pattern uses only the subset of syntax found in the
// pre-tokenizer table (no \S inside a class, no nested classes). Throws
// cohort::Error otherwise.
std::string rewrite_for_pcre2(std::string_view pattern);

}  // namespace cohort::tokenizer
