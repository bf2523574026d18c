// Pre-tokenizer splits, including the points where llama.cpp's regex
// handling differs from a plain Unicode-aware engine.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/regex_rewrite.h"

namespace cohort::tokenizer {
namespace pre_tokenizer_test {

std::vector<std::string> split(const std::string& pre, const std::string& text) {
  const PreTokenizer p(find_pre_type(pre));
  std::vector<std::string> words;
  for (const TextSpan& s : p.split(text)) words.push_back(text.substr(s.offset, s.length));
  return words;
}

using Words = std::vector<std::string>;

TEST(PreTokenizer, Gpt2KeepsOneSpaceForTheNextWord) {
  EXPECT_EQ(split("gpt-2", "Hello world  foo"), (Words{"Hello", " world", " ", " foo"}));
  EXPECT_EQ(split("gpt-2", "end   "), (Words{"end", "   "}));
  EXPECT_EQ(split("gpt-2", "it's"), (Words{"it", "'s"}));
  EXPECT_EQ(split("gpt-2", "IT'S"), (Words{"IT", "'", "S"}));  // case-sensitive
}

TEST(PreTokenizer, Llama3ContractionsAreCaseInsensitiveAndDigitsGroupByThree) {
  EXPECT_EQ(split("llama-bpe", "I'M here"), (Words{"I", "'M", " here"}));
  EXPECT_EQ(split("llama-bpe", "1234567"), (Words{"123", "456", "7"}));
  EXPECT_EQ(split("llama-bpe", "a\n\n b"), (Words{"a", "\n\n", " b"}));
}

TEST(PreTokenizer, SmollmSplitsDigitsOneByOne) {
  EXPECT_EQ(split("smollm", "x=2024"), (Words{"x", "=", "2", "0", "2", "4"}));
}

TEST(PreTokenizer, UnicodeWhiteSpaceIsSpace) {
  // U+3000 is \s for llama.cpp, and U+0085 too (PCRE2 alone disagrees on the latter).
  EXPECT_EQ(split("gpt-2", "a\xE3\x80\x80\xE3\x80\x80" "b"), (Words{"a", "\xE3\x80\x80", "\xE3\x80\x80", "b"}));
  EXPECT_EQ(split("qwen2", "a\xC2\x85\xC2\x85" "b"), (Words{"a", "\xC2\x85", "\xC2\x85" "b"}));
}

TEST(PreTokenizer, SymbolsAndPunctuationGroupInDeepseekV3) {
  EXPECT_EQ(split("deepseek-v3", "host:~$ ls"), (Words{"host", ":~$", " ls"}));
}

TEST(PreTokenizer, EmptyMatchesSplitWithoutText) {
  EXPECT_EQ(split("superbpe", "1234567"), (Words{"1", "234", "567"}));
}

TEST(PreTokenizer, EveryTypeCompilesAndCoversItsInput) {
  const std::string text = "Hi! 12,345 caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87\n\n  x";
  const std::string names = supported_pre_types();
  for (size_t start = 0; start < names.size();) {
    size_t comma = names.find(", ", start);
    if (comma == std::string::npos) comma = names.size();
    std::string joined;
    for (const std::string& w : split(names.substr(start, comma - start), text)) joined += w;
    EXPECT_EQ(joined, text) << names.substr(start, comma - start);
    start = comma + 2;
  }
}

TEST(RegexRewrite, ClassesDropLiteralWhiteSpace) {
  EXPECT_EQ(rewrite_for_pcre2("[\xE3\x80\x80-\xE3\x80\x82]"), "[\\x{3001}-\\x{3002}]");
  EXPECT_EQ(rewrite_for_pcre2("[\\x{2FFF}-\\x{3002}a]"), "[\\x{2FFF}\\x{3001}-\\x{3002}a]");
  EXPECT_EQ(rewrite_for_pcre2("\\p{Lu}+"), "\\p{L}+");
  EXPECT_EQ(rewrite_for_pcre2("[^\\p{S}\\s]"), "[^\\p{S}\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]");
  EXPECT_THROW(rewrite_for_pcre2("[\\S]"), Error);
}

TEST(PreTokenizer, UnknownTypeIsAnError) { EXPECT_THROW(find_pre_type("klingon"), Error); }

}  // namespace pre_tokenizer_test
}  // namespace cohort::tokenizer
