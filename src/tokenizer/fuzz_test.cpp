// Random and adversarial input: nothing crashes, streaming output is always
// well-formed UTF-8, and valid text round-trips where llama.cpp's does.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenizer/test_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace cohort::tokenizer {
namespace fuzz_test {

// Bytes drawn from a mix that hits the interesting cases often: ASCII,
// pieces of valid characters, stray continuation and invalid lead bytes,
// and text of the special tokens.
std::string random_text(std::mt19937& rng) {
  static const std::vector<std::string> kAtoms = {
      "a", "Z", " ", "  ", "\n", "\r\n", "\t", "'s", "'LL", "123", "4", ".", ",", "~", "!?",
      "\xC3\xA9", "\xD0\x96", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "\xE2\x80\x8D", "\xE3\x80\x80",
      "\xC2\x85", "\xC2\xA0", "\xE2\x80\xA8", "\x80", "\xBF", "\xC3", "\xE2\x82", "\xF0\x9F\x98",
      "\xFF", "\xFE", "\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xF7\xBF\xBF\xBF",
      std::string(1, '\0'), "<|im_end|>", "<tool>", "<s>", "</s>", "\xE2\x96\x81"};
  std::uniform_int_distribution<size_t> length(0, 24), pick(0, kAtoms.size() - 1), byte(0, 255);
  std::string s;
  for (size_t n = length(rng); n > 0; --n) {
    if (rng() % 8 == 0) {
      s.push_back(static_cast<char>(byte(rng)));
    } else {
      s += kAtoms[pick(rng)];
    }
  }
  return s;
}

void exercise(const Tokenizer& tok, const std::string& text, bool expect_round_trip) {
  for (bool add_special : {false, true}) {
    for (bool parse_special : {false, true}) {
      const std::vector<int32_t> ids = tok.encode(text, add_special, parse_special);
      for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok.n_vocab()) << id;
      for (bool special : {false, true}) {
        const std::string decoded = tok.decode(ids, special);
        Detokenizer d = tok.detokenizer(special);
        std::string streamed;
        for (int32_t id : ids) streamed += d.push(id);
        streamed += d.finish();
        ASSERT_TRUE(is_valid_utf8(streamed));
        if (expect_round_trip && !add_special && !parse_special && is_valid_utf8(text)) {
          ASSERT_EQ(decoded, text);
        }
      }
    }
  }
}

TEST(TokenizerFuzz, RandomBytesNeverCrashBpe) {
  std::mt19937 rng(1234);
  for (const char* pre : {"smollm", "llama-bpe", "qwen2", "gpt-4o", "tekken", "deepseek-llm",
                          "deepseek-coder", "deepseek-v3", "falcon", "poro-chat", "default", "superbpe"}) {
    const Tokenizer tok = Tokenizer::from_gguf(testing::bpe_metadata(
        {.pre = pre, .merges = {{" ", "a"}, {"a", "a"}, {"\xE4", "\xB8"}}, .extra = {{"<|im_end|>", 3}, {"<tool>", 4}}}));
    // clean_spaces vocabularies change " ." on decode, so only the others round-trip.
    const bool round_trip = !tok.vocab().clean_spaces();
    for (int i = 0; i < 300; ++i) exercise(tok, random_text(rng), round_trip);
  }
}

TEST(TokenizerFuzz, RandomBytesNeverCrashSpm) {
  std::mt19937 rng(99);
  const Tokenizer tok = Tokenizer::from_gguf(testing::spm_metadata(
      {.pieces = {{"\xE2\x96\x81", -4}, {"\xE2\x96\x81" "a", -1}, {"aa", -2}, {"\xE4\xB8\xAD", -3}},
       .extra = {{"<tool>", 4}}}));
  for (int i = 0; i < 1000; ++i) {
    const std::string text = random_text(rng);
    // A literal U+2581 decodes to a space, and text after a user-defined
    // token gets a space prefix, so such texts do not round-trip.
    exercise(tok, text, text.find("\xE2\x96\x81") == std::string::npos && text.find("<tool>") == std::string::npos);
  }
}

TEST(TokenizerFuzz, LongRunsDoNotExhaustTheRegexEngine) {
  const std::string spaces(200000, ' ');
  const std::string letters(200000, 'a');
  const std::string mixed = [] {
    std::string s;
    for (int i = 0; i < 50000; ++i) s += "aB\xC3\xA9";
    return s;
  }();
  for (const char* pre : {"gpt-4o", "tekken", "smollm", "llama-bpe", "deepseek-v3", "granite-embed-multi-97m"}) {
    const Tokenizer tok = Tokenizer::from_gguf(testing::bpe_metadata({.pre = pre}));
    for (const std::string* s : {&spaces, &letters, &mixed}) {
      const std::vector<int32_t> ids = tok.encode(*s, false, false);
      EXPECT_EQ(ids.size(), s->size()) << pre;  // no merges: one token per byte
    }
  }
}

}  // namespace fuzz_test
}  // namespace cohort::tokenizer
