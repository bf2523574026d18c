// The Tokenizer facade: concurrent use, range checks, moves.
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "tokenizer/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace cohort::tokenizer {
namespace tokenizer_test {

TEST(Tokenizer, ConcurrentEncodesAgreeWithASerialOne) {
  const Tokenizer tok = Tokenizer::from_gguf(testing::bpe_metadata(
      {.pre = "llama-bpe", .merges = {{"t", "h"}, {"th", "e"}, {" ", "the"}}, .extra = {{"<|eot_id|>", 3}}}));
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i) texts.push_back("the theme " + std::to_string(i * 7919) + " <|eot_id|> \xE4\xB8\xAD");
  std::vector<std::vector<int32_t>> serial;
  for (const std::string& t : texts) serial.push_back(tok.encode(t, true, true));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int rep = 0; rep < 20; ++rep) {
        for (size_t i = 0; i < texts.size(); ++i) mismatches[w] += tok.encode(texts[i], true, true) != serial[i];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(Tokenizer, IdsOutsideTheVocabularyAreErrors) {
  const Tokenizer tok = Tokenizer::from_gguf(testing::bpe_metadata({}));
  EXPECT_THROW(tok.token_to_piece(-1), Error);
  EXPECT_THROW(tok.token_to_piece(tok.n_vocab()), Error);
  EXPECT_THROW(tok.decode(std::vector<int32_t>{0, 99999}, false), Error);
}

TEST(Tokenizer, DetokenizersSurviveAMoveOfTheTokenizer) {
  Tokenizer tok = Tokenizer::from_gguf(testing::bpe_metadata({}));
  Detokenizer d = tok.detokenizer();
  const Tokenizer moved = std::move(tok);
  EXPECT_EQ(d.push('h'), "h");
  EXPECT_EQ(moved.encode("h", false, false), (std::vector<int32_t>{'h'}));
}

TEST(Tokenizer, BosWithoutABosTokenIsAnError) {
  gguf::Metadata md = testing::bpe_metadata({.pre = "chatglm-bpe"});
  md.set("tokenizer.ggml.add_bos_token", gguf::Value(true));
  const Tokenizer tok = Tokenizer::from_gguf(md);
  EXPECT_EQ(tok.bos(), kNoToken);
  EXPECT_THROW(tok.encode("x", true, false), Error);
  EXPECT_EQ(tok.encode("x", false, false), (std::vector<int32_t>{'x'}));
}

TEST(Tokenizer, DuplicateTokenTextsAreRefused) {
  const gguf::Metadata md = testing::bpe_metadata({.extra = {{"a", 1}}});  // 'a' is byte token 97 already
  EXPECT_THROW(Tokenizer::from_gguf(md), Error);
}

TEST(Tokenizer, TokenTextsEndAtTheirFirstNul) {
  // llama.cpp reads token texts as C strings.
  const Tokenizer tok = Tokenizer::from_gguf(testing::bpe_metadata({.extra = {{std::string("xy\0z", 4), 1}}}));
  EXPECT_EQ(tok.vocab().token(256).text, "xy");
}

}  // namespace tokenizer_test
}  // namespace cohort::tokenizer
