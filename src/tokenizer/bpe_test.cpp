// Byte-level BPE on hand-built vocabularies: merge order, word boundaries,
// ignore_merges, load errors.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "tokenizer/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace cohort::tokenizer {
namespace bpe_test {

using testing::BpeSpec;
using testing::bpe_metadata;

int32_t id_of(const Tokenizer& tok, const std::string& raw) {
  const int32_t id = tok.vocab().find(bytes_to_table_text(raw));
  EXPECT_NE(id, kNoToken) << raw;
  return id;
}

TEST(Bpe, LowestRankMergesFirst) {
  // "bc" outranks "ab"; so "abc" is a + bc, never ab + c.
  const Tokenizer tok = Tokenizer::from_gguf(bpe_metadata({.merges = {{"b", "c"}, {"a", "b"}, {"ab", "c"}}}));
  EXPECT_EQ(tok.encode("abc", false, false), (std::vector{id_of(tok, "a"), id_of(tok, "bc")}));
  EXPECT_EQ(tok.encode("ab", false, false), (std::vector{id_of(tok, "ab")}));
}

TEST(Bpe, LaterMergesBuildOnEarlierOnes) {
  const Tokenizer tok = Tokenizer::from_gguf(bpe_metadata({.merges = {{"a", "b"}, {"ab", "c"}}}));
  EXPECT_EQ(tok.encode("abc", false, false), (std::vector{id_of(tok, "abc")}));
  EXPECT_EQ(tok.encode("abcab", false, false), (std::vector{id_of(tok, "abc"), id_of(tok, "ab")}));
}

TEST(Bpe, EqualRanksMergeLeftmostFirst) {
  const Tokenizer tok = Tokenizer::from_gguf(bpe_metadata({.merges = {{"a", "a"}}}));
  EXPECT_EQ(tok.encode("aaa", false, false), (std::vector{id_of(tok, "aa"), id_of(tok, "a")}));
  EXPECT_EQ(tok.encode("aaaa", false, false), (std::vector{id_of(tok, "aa"), id_of(tok, "aa")}));
}

TEST(Bpe, MergesStopAtWordBoundaries) {
  // gpt-2 splits "a b" into "a" and " b"; the merge of "a" with " " never applies.
  const Tokenizer tok = Tokenizer::from_gguf(bpe_metadata({.merges = {{"a", " "}, {" ", "b"}}}));
  EXPECT_EQ(tok.encode("a b", false, false), (std::vector{id_of(tok, "a"), id_of(tok, " b")}));
}

TEST(Bpe, IgnoreMergesTakesAWholeWordToken) {
  BpeSpec spec{.merges = {{"x", "y"}}, .extra = {{"xyz", 1}}};
  const Tokenizer plain = Tokenizer::from_gguf(bpe_metadata(spec));
  EXPECT_EQ(plain.encode("xyz", false, false), (std::vector{id_of(plain, "xy"), id_of(plain, "z")}));
  spec.pre = "llama-bpe";  // llama 3 tokenizes whole-word tokens directly
  const Tokenizer llama3 = Tokenizer::from_gguf(bpe_metadata(spec));
  EXPECT_EQ(llama3.encode("xyz", false, false), (std::vector{id_of(llama3, "xyz")}));
}

TEST(Bpe, EveryByteSurvivesARoundTrip) {
  const Tokenizer tok = Tokenizer::from_gguf(bpe_metadata({.pre = "qwen2"}));
  const std::string text = "tab\there\r\nnull\x01 caf\xC3\xA9 \xF0\x9F\x98\x80 \xE4\xB8\xAD";
  EXPECT_EQ(tok.decode(tok.encode(text, false, false), false), text);
}

TEST(Bpe, InvalidUtf8IsReplacedAsLlamaCppDoes) {
  const Tokenizer tok = Tokenizer::from_gguf(bpe_metadata({.pre = "qwen2"}));
  EXPECT_EQ(tok.decode(tok.encode("a\xFF", false, false), false), "a\xEF\xBF\xBD");
}

TEST(Bpe, AddSpecialFollowsTheVocabulary) {
  gguf::Metadata md = bpe_metadata({.pre = "llama-bpe", .extra = {{"<|begin_of_text|>", 3}}});
  md.set("tokenizer.ggml.bos_token_id", gguf::Value(uint32_t{256}));
  const Tokenizer tok = Tokenizer::from_gguf(md);
  EXPECT_EQ(tok.encode("a", true, false), (std::vector{256, id_of(tok, "a")}));
  md.set("tokenizer.ggml.add_bos_token", gguf::Value(false));
  EXPECT_EQ(Tokenizer::from_gguf(md).encode("a", true, false), (std::vector{id_of(tok, "a")}));
}

TEST(Bpe, UnknownPreTypeIsAnErrorListingTheSupportedOnes) {
  try {
    Tokenizer::from_gguf(bpe_metadata({.pre = "no-such-pre"}));
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no-such-pre"), std::string::npos) << what;
    EXPECT_NE(what.find("llama-bpe"), std::string::npos) << what;
    EXPECT_NE(what.find("smollm"), std::string::npos) << what;
  }
}

TEST(Bpe, UnsupportedModelAndMissingMergesAreErrors) {
  gguf::Metadata md = bpe_metadata({});
  md.set("tokenizer.ggml.model", gguf::Value("bert"));
  EXPECT_THROW(Tokenizer::from_gguf(md), Error);
  gguf::Metadata no_merges;
  no_merges.set("tokenizer.ggml.model", gguf::Value("gpt2"));
  no_merges.set("tokenizer.ggml.tokens", testing::string_array({"a"}));
  EXPECT_THROW(Tokenizer::from_gguf(no_merges), Error);
  EXPECT_THROW(Tokenizer::from_gguf(gguf::Metadata{}), Error);
}

TEST(Bpe, EveryPreTypeSplitsAndRoundTrips) {
  const std::string text = "Hello, World! It's 2024-05-17: x=12345; \"quoted\"\n\n\tTabs   and  spaces \xC3\xA9t\xC3\xA9 "
                           "\xD0\x9F\xD1\x80\xD0\xB8 \xE4\xB8\xAD\xE6\x96\x87 ~~ \xF0\x9F\x98\x80";
  const std::string names = supported_pre_types();
  size_t start = 0;
  while (start < names.size()) {
    size_t comma = names.find(", ", start);
    if (comma == std::string::npos) comma = names.size();
    const std::string pre = names.substr(start, comma - start);
    start = comma + 2;
    const Tokenizer tok = Tokenizer::from_gguf(bpe_metadata({.pre = pre}));
    const std::vector<int32_t> ids = tok.encode(text, false, false);
    std::string joined;
    for (int32_t id : ids) joined += tok.token_to_piece(id);
    EXPECT_EQ(joined, text) << pre;
  }
}

}  // namespace bpe_test
}  // namespace cohort::tokenizer
