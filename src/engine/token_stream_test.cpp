// TokenStream: the one sample / accept / stop loop. Greedy picks the
// argmax, the text comes from the detokenizer and passes the stop checker
// (stop strings across tokens held back, an end-of-generation token ends
// the stream and shows nothing), the prompt feeds the penalties, and a
// sampler error changes nothing.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "engine/token_stream.h"
#include "tokenizer/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace cohort::engine {
namespace token_stream_test {

const tokenizer::Tokenizer& vocab() {
  // 256 byte tokens, then <|im_end|> (257 tokens).
  static const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(
      tokenizer::testing::bpe_metadata({.pre = "smollm", .extra = {{"<|im_end|>", 3}}}));
  return tok;
}

int32_t id_of(const std::string& text) {
  const std::vector<int32_t> ids = vocab().encode(text, false, true);
  EXPECT_EQ(ids.size(), 1u) << text;
  return ids.at(0);
}

// Logits that make `best` the argmax, `second` the runner-up by `gap`.
std::vector<float> peaked(int32_t best, int32_t second = -1, float gap = 1.0f) {
  std::vector<float> l(static_cast<size_t>(vocab().n_vocab()), 0.0f);
  l[static_cast<size_t>(best)] = 2.0f;
  if (second >= 0) l[static_cast<size_t>(second)] = 2.0f - gap;
  return l;
}

TokenStream greedy(StopParams stop, SamplingParams s = {}) {
  s.temp = 0;
  return TokenStream(s, vocab().n_vocab(), 64, vocab().detokenizer(false), std::move(stop));
}

StopParams eog_and(std::vector<std::string> stop_strings) {
  StopParams p;
  p.eog_tokens.insert(id_of("<|im_end|>"));
  p.stop = std::move(stop_strings);
  return p;
}

TEST(TokenStream, GreedyTextThenAnEndOfGenerationTokenWithoutText) {
  TokenStream s = greedy(eog_and({}));
  EXPECT_EQ(s.next(peaked(id_of("h"))).text, "h");
  EXPECT_EQ(s.next(peaked(id_of("i"))).text, "i");
  EXPECT_FALSE(s.finished());
  const StreamToken end = s.next(peaked(id_of("<|im_end|>")));
  EXPECT_EQ(end.id, id_of("<|im_end|>"));
  EXPECT_EQ(end.text, "");
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.reason(), FinishReason::eog);
  EXPECT_EQ(s.n_generated(), 3);
  EXPECT_EQ(s.last_token(), id_of("<|im_end|>"));
}

TEST(TokenStream, AStopStringAcrossTokensIsHeldBackAndNeverShown) {
  TokenStream s = greedy(eog_and({"lo"}));
  std::string shown;
  for (const char* t : {"h", "e", "l"}) shown += s.next(peaked(id_of(t))).text;
  EXPECT_EQ(shown, "he");  // "l" could begin "lo"
  EXPECT_EQ(s.next(peaked(id_of("o"))).text, "");
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.reason(), FinishReason::stop);
  EXPECT_EQ(s.flush(), "");  // nothing after a stop string is released
}

TEST(TokenStream, FlushReleasesWhatWasHeldBack) {
  TokenStream s = greedy(eog_and({"lo"}));
  EXPECT_EQ(s.next(peaked(id_of("l"))).text, "");
  EXPECT_EQ(s.flush(), "l");
}

TEST(TokenStream, TheMaxTokensThTokenEndsTheStream) {
  StopParams p = eog_and({});
  p.max_tokens = 2;
  TokenStream s = greedy(std::move(p));
  s.next(peaked(id_of("a")));
  EXPECT_FALSE(s.finished());
  s.next(peaked(id_of("b")));
  EXPECT_EQ(s.reason(), FinishReason::length);
}

TEST(TokenStream, ThePromptFeedsTheRepeatPenalty) {
  SamplingParams sp;
  sp.repeat_penalty = 2.0f;  // a positive logit is halved for a token seen
  const int32_t a = id_of("a"), b = id_of("b");
  TokenStream fresh = greedy(eog_and({}), sp);
  EXPECT_EQ(fresh.next(peaked(a, b, 0.1f)).id, a);
  TokenStream seen = greedy(eog_and({}), sp);
  seen.accept_prompt(std::vector<int32_t>{a});
  EXPECT_EQ(seen.next(peaked(a, b, 0.1f)).id, b);
}

TEST(TokenStream, ASamplerErrorChangesNothing) {
  TokenStream s = greedy(eog_and({}));
  std::vector<float> none(static_cast<size_t>(vocab().n_vocab()), -std::numeric_limits<float>::infinity());
  EXPECT_THROW(s.next(none), Error);
  EXPECT_EQ(s.n_generated(), 0);
  EXPECT_EQ(s.last_token(), -1);
  EXPECT_EQ(s.next(peaked(id_of("x"))).text, "x");
}

}  // namespace token_stream_test
}  // namespace cohort::engine
