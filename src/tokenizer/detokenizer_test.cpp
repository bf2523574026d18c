// Pieces, whole-sequence decoding, and the streaming decoder's UTF-8 rules.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenizer/detokenizer.h"
#include "tokenizer/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace cohort::tokenizer {
namespace detokenizer_test {

using testing::spm_byte_id;

std::vector<std::string> stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool special = false) {
  Detokenizer d = tok.detokenizer(special);
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(d.push(id));
  out.push_back(d.finish());
  return out;
}

TEST(Detokenizer, ACharacterSplitAcrossTokensIsEmittedOnceWhole) {
  const Tokenizer tok = Tokenizer::from_gguf(testing::spm_metadata({}));
  // "€" = E2 82 AC, one byte token each, then 'x'.
  EXPECT_EQ(stream(tok, {spm_byte_id(0xE2), spm_byte_id(0x82), spm_byte_id(0xAC), spm_byte_id('x')}),
            (std::vector<std::string>{"", "", "\xE2\x82\xAC", "x", ""}));
}

TEST(Detokenizer, NeverEmitsIllFormedUtf8) {
  const Tokenizer tok = Tokenizer::from_gguf(testing::spm_metadata({}));
  // A lone continuation byte, a lead byte cut short by ASCII, a lead byte at the end.
  EXPECT_EQ(stream(tok, {spm_byte_id(0x80), spm_byte_id(0xE2), spm_byte_id('a'), spm_byte_id(0xF0)}),
            (std::vector<std::string>{"\xEF\xBF\xBD", "", "\xEF\xBF\xBD" "a", "", "\xEF\xBF\xBD"}));
}

TEST(Detokenizer, BpeSplitCharacterAcrossMergedTokens) {
  // "😀" = F0 9F 98 80 as tokens "F0 9F" and "98 80".
  const Tokenizer tok = Tokenizer::from_gguf(
      testing::bpe_metadata({.pre = "qwen2", .merges = {{"\xF0", "\x9F"}, {"\x98", "\x80"}}}));
  const std::vector<int32_t> ids = tok.encode("\xF0\x9F\x98\x80", false, false);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(stream(tok, ids), (std::vector<std::string>{"", "\xF0\x9F\x98\x80", ""}));
  EXPECT_EQ(tok.token_to_piece(ids[0]), "\xF0\x9F");
}

TEST(Detokenizer, ControlTokensAreHiddenUnlessSpecial) {
  const Tokenizer tok = Tokenizer::from_gguf(
      testing::bpe_metadata({.pre = "smollm", .extra = {{"<|im_end|>", 3}, {"<tool>", 4}}}));
  const std::vector<int32_t> ids = tok.encode("a<|im_end|><tool>", false, true);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(tok.decode(ids, false), "a<tool>");  // user-defined tokens always render
  EXPECT_EQ(tok.decode(ids, true), "a<|im_end|><tool>");
  EXPECT_TRUE(tok.is_eog(ids[1]));
  EXPECT_EQ(stream(tok, ids, false), (std::vector<std::string>{"a", "", "<tool>", ""}));
}

TEST(Detokenizer, CleanUpSpacesAsLlamaCpp) {
  auto clean = [](std::string s) {
    clean_up_spaces(s);
    return s;
  };
  EXPECT_EQ(clean("Hello , world ! Yes ? No ."), "Hello, world! Yes? No.");
  EXPECT_EQ(clean("it ' s"), "it's");
  EXPECT_EQ(clean("I 'm sure they 're here, don 't you 'll"), "I'm sure they're here, don 't you 'll");
  EXPECT_EQ(clean(" ."), ".");
  EXPECT_EQ(clean(""), "");
}

TEST(Detokenizer, CleanSpacesAppliesOnlyWhereTheVocabularyAsks) {
  const Tokenizer gpt2 = Tokenizer::from_gguf(testing::bpe_metadata({.pre = "gpt-2"}));
  const Tokenizer qwen2 = Tokenizer::from_gguf(testing::bpe_metadata({.pre = "qwen2"}));
  const std::string text = "Hi , there";
  EXPECT_EQ(gpt2.decode(gpt2.encode(text, false, false), false), "Hi, there");
  EXPECT_EQ(qwen2.decode(qwen2.encode(text, false, false), false), text);
}

}  // namespace detokenizer_test
}  // namespace cohort::tokenizer
