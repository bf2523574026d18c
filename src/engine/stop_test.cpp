// Stop conditions: EOG tokens, max tokens, stop strings across token
// boundaries with holdback, and whole UTF-8 characters in every chunk.
#include "engine/stop.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"

namespace cohort::engine {
namespace stop_test {

constexpr int32_t kEos = 2;
constexpr int32_t kText = 10;  // any non-EOG token

StopParams with_stop(std::vector<std::string> stop, int max_tokens = -1) {
  StopParams p;
  p.eog_tokens = {kEos};
  p.max_tokens = max_tokens;
  p.stop = std::move(stop);
  return p;
}

TEST(Stop, FinishReasonNamesAreOpenAIs) {
  EXPECT_STREQ(finish_reason_name(FinishReason::eog), "stop");
  EXPECT_STREQ(finish_reason_name(FinishReason::stop), "stop");
  EXPECT_STREQ(finish_reason_name(FinishReason::length), "length");
  EXPECT_STREQ(finish_reason_name(FinishReason::none), "");
}

TEST(Stop, EogTokenEndsWithoutItsTextAndReleasesHeldText) {
  StopChecker c(with_stop({"###"}));
  EXPECT_EQ(c.push(kText, "ab#").text, "ab");
  const StopResult r = c.push(kEos, "</s>");
  EXPECT_EQ(r.reason, FinishReason::eog);
  EXPECT_EQ(r.text, "#");
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(c.n_generated(), 2);
}

TEST(Stop, MaxTokensEndsWithLengthAndReleasesHeldText) {
  StopChecker c(with_stop({"###"}, 2));
  EXPECT_EQ(c.push(kText, "a").reason, FinishReason::none);
  const StopResult r = c.push(kText, "b##");
  EXPECT_EQ(r.reason, FinishReason::length);
  EXPECT_EQ(r.text, "b##");
}

TEST(Stop, StopStringInOnePieceIsCutWithEverythingAfterIt) {
  StopChecker c(with_stop({"###"}));
  const StopResult r = c.push(kText, "Hello###world");
  EXPECT_EQ(r.reason, FinishReason::stop);
  EXPECT_EQ(r.text, "Hello");
  EXPECT_EQ(c.matched_stop(), "###");
}

TEST(Stop, StopStringAcrossTokensIsHeldBackUntilItCompletes) {
  StopChecker c(with_stop({"###"}));
  EXPECT_EQ(c.push(kText, "Hel").text, "Hel");
  EXPECT_EQ(c.push(kText, "lo #").text, "lo ");
  EXPECT_EQ(c.held(), "#");
  EXPECT_EQ(c.push(kText, "#").text, "");
  EXPECT_EQ(c.held(), "##");
  const StopResult r = c.push(kText, "# rest");
  EXPECT_EQ(r.reason, FinishReason::stop);
  EXPECT_EQ(r.text, "");
}

TEST(Stop, HeldTextIsReleasedOnceItCannotBeAStopString) {
  StopChecker c(with_stop({"###"}));
  EXPECT_EQ(c.push(kText, "a#").text, "a");
  EXPECT_EQ(c.push(kText, "#b").text, "##b");
  EXPECT_EQ(c.held(), "");
}

TEST(Stop, SelfOverlappingStopString) {
  StopChecker c(with_stop({"abab"}));
  EXPECT_EQ(c.push(kText, "xaba").text, "x");
  EXPECT_EQ(c.push(kText, "c").text, "abac");
  EXPECT_EQ(c.push(kText, "ab").text, "");
  EXPECT_EQ(c.push(kText, "a").text, "");  // "aba" is held: "ab" + "a" could start "abab"
  const StopResult r = c.push(kText, "bab");  // "ababab": first match at 0
  EXPECT_EQ(r.reason, FinishReason::stop);
  EXPECT_EQ(r.text, "");
}

TEST(Stop, EarliestOfSeveralStopStringsWins) {
  StopChecker c(with_stop({"ND!", "END"}));
  const StopResult r = c.push(kText, "xxEND!");
  EXPECT_EQ(r.text, "xx");
  EXPECT_EQ(c.matched_stop(), "END");
}

TEST(Stop, StopStringOnTheLastAllowedTokenIsStop) {
  StopChecker c(with_stop({"\n\n"}, 1));
  const StopResult r = c.push(kText, "ok\n\n");
  EXPECT_EQ(r.reason, FinishReason::stop);
  EXPECT_EQ(r.text, "ok");
}

TEST(Stop, IncompleteUtf8IsHeldUntilTheCharacterCompletes) {
  StopChecker c(with_stop({}));
  EXPECT_EQ(c.push(kText, "1 \xE2\x82").text, "1 ");  // first two bytes of U+20AC
  EXPECT_EQ(c.push(kText, "\xAC!").text, "\xE2\x82\xAC!");
  EXPECT_EQ(c.push(kText, "\xF0\x9F").text, "");
  EXPECT_EQ(c.flush(), "\xF0\x9F");
  EXPECT_EQ(c.held(), "");
}

TEST(Stop, Utf8CompletePrefix) {
  EXPECT_EQ(utf8_complete_prefix(""), 0u);
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix("a\xC3"), 1u);
  EXPECT_EQ(utf8_complete_prefix("a\xC3\xA9"), 3u);
  EXPECT_EQ(utf8_complete_prefix("a\xF0\x9F\x98"), 1u);
  EXPECT_EQ(utf8_complete_prefix("a\xF0\x9F\x98\x80"), 5u);
  EXPECT_EQ(utf8_complete_prefix("\x80\x80\x80\x80"), 4u);  // invalid: not held forever
}

TEST(Stop, RejectsBadParameters) {
  EXPECT_THROW(StopChecker(with_stop({"a", ""})), Error);
  EXPECT_THROW(StopChecker(with_stop({}, 0)), Error);
  EXPECT_THROW(StopChecker(with_stop({}, -2)), Error);
}

// Whatever the split into pieces, the emitted text is the text before the
// first stop string, and nothing is emitted twice.
TEST(Stop, EmittedTextIsIndependentOfTokenBoundaries) {
  std::mt19937 rng(5);
  const std::vector<std::string> stops{"#b#a", "aa#"};
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text;
    const int n = std::uniform_int_distribution<int>(0, 30)(rng);
    for (int i = 0; i < n; ++i) text += "ab#"[std::uniform_int_distribution<int>(0, 2)(rng)];
    size_t cut = std::string::npos;
    for (const std::string& s : stops) cut = std::min(cut, text.find(s));
    const std::string expected = text.substr(0, cut);

    StopChecker c(with_stop(stops));
    std::string emitted;
    size_t at = 0;
    while (at < text.size() && !c.finished()) {
      const size_t len = std::uniform_int_distribution<size_t>(1, 4)(rng);
      emitted += c.push(kText, std::string_view(text).substr(at, len)).text;
      at += len;
    }
    if (!c.finished()) emitted += c.flush();
    EXPECT_EQ(emitted, expected) << "text " << text;
    EXPECT_EQ(c.finished(), cut != std::string::npos) << "text " << text;
  }
}

}  // namespace stop_test
}  // namespace cohort::engine
