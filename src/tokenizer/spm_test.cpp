// SentencePiece-style tokenization on hand-built vocabularies.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenizer/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace cohort::tokenizer {
namespace spm_test {

using testing::SpmSpec;
using testing::spm_byte_id;
using testing::spm_metadata;

constexpr int32_t kUnk = 0, kBos = 1, kEos = 2;
constexpr int32_t piece_id(int32_t i) { return 3 + 256 + i; }

TEST(Spm, UnknownCharactersFallBackToByteTokens) {
  const Tokenizer tok = Tokenizer::from_gguf(spm_metadata({.pieces = {{"\xE2\x96\x81", -1}}}));
  // "é" is not a piece: its two bytes; the leading space is "▁".
  EXPECT_EQ(tok.encode("\xC3\xA9", false, false),
            (std::vector{piece_id(0), spm_byte_id(0xC3), spm_byte_id(0xA9)}));
}

TEST(Spm, HighestScoringPairMergesFirst) {
  // In "▁ab", "ab" outscores "▁a", so a+b merge first; then ▁+ab merges if "▁ab" is a piece.
  const SpmSpec with_whole{.pieces = {{"\xE2\x96\x81", -5}, {"a", -5}, {"b", -5}, {"\xE2\x96\x81" "a", -3},
                                      {"ab", -1}, {"\xE2\x96\x81" "ab", -4}}};
  const Tokenizer tok = Tokenizer::from_gguf(spm_metadata(with_whole));
  EXPECT_EQ(tok.encode("ab", false, false), (std::vector{piece_id(5)}));
  const SpmSpec without_whole{.pieces = {{"\xE2\x96\x81", -5}, {"a", -5}, {"b", -5},
                                         {"\xE2\x96\x81" "a", -3}, {"ab", -1}}};
  const Tokenizer tok2 = Tokenizer::from_gguf(spm_metadata(without_whole));
  EXPECT_EQ(tok2.encode("ab", false, false), (std::vector{piece_id(0), piece_id(4)}));
}

TEST(Spm, BosIsAddedAndTheSpacePrefixRemovedOnDecode) {
  const Tokenizer tok = Tokenizer::from_gguf(spm_metadata({.pieces = {{"\xE2\x96\x81hi", -1}, {"hi", -2}}}));
  EXPECT_EQ(tok.encode("hi", true, false), (std::vector{kBos, piece_id(0)}));
  EXPECT_EQ(tok.decode(std::vector{piece_id(0)}, false), "hi");
  // After BOS the space is kept, as llama_detokenize does without remove_special.
  EXPECT_EQ(tok.decode(std::vector{kBos, piece_id(0)}, false), " hi");
  EXPECT_EQ(tok.decode(std::vector{kBos, piece_id(0)}, true), "<s> hi");
}

TEST(Spm, NoSpacePrefixWhenTheVocabularySaysSo) {
  gguf::Metadata md = spm_metadata({.pieces = {{"hi", -1}}});
  md.set("tokenizer.ggml.add_space_prefix", gguf::Value(false));
  const Tokenizer tok = Tokenizer::from_gguf(md);
  EXPECT_EQ(tok.encode("hi", false, false), (std::vector{piece_id(0)}));
}

TEST(Spm, TextAfterASpecialTokenGetsASpacePrefixAgain) {
  const Tokenizer tok = Tokenizer::from_gguf(spm_metadata({.pieces = {{"\xE2\x96\x81x", -1}, {"x", -2}}}));
  EXPECT_EQ(tok.encode("x</s>x", false, true), (std::vector{piece_id(0), kEos, piece_id(0)}));
  // Without parse_special "</s>" is text; the bytes of '<', '/', 's', '>' fall back.
  const std::vector<int32_t> ids = tok.encode("x</s>", false, false);
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_EQ(tok.decode(ids, false), "x</s>");
}

TEST(Spm, EosIsAppendedWhenAsked) {
  gguf::Metadata md = spm_metadata({});
  md.set("tokenizer.ggml.add_eos_token", gguf::Value(true));
  const Tokenizer tok = Tokenizer::from_gguf(md);
  const std::vector<int32_t> ids = tok.encode("", true, false);
  EXPECT_EQ(ids, (std::vector{kBos, kEos}));
  EXPECT_EQ(tok.bos(), kBos);
  EXPECT_TRUE(tok.is_eog(kEos));
  EXPECT_FALSE(tok.is_eog(kUnk));
}

TEST(Spm, RoundTripsValidText) {
  const Tokenizer tok = Tokenizer::from_gguf(spm_metadata({.pieces = {{"\xE2\x96\x81", -1}, {"the", -2}}}));
  // (A literal U+2581 in the text would come back as a space.)
  for (const std::string s : {" leading", "the end  ", "\xF0\x9F\x98\x80\n\t", ""}) {
    EXPECT_EQ(tok.decode(tok.encode(s, false, false), false), s);
  }
}

}  // namespace spm_test
}  // namespace cohort::tokenizer
