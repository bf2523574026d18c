// ReasoningSplit (--reasoning-format): a leading think block as reasoning,
// the same parts however the text is cut into pieces, and the answers'
// reasoning_content through ResponseBuilder.
#include "server/reasoning.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/openai_response.h"

namespace cohort::server {
namespace reasoning_test {

ReasoningParts whole(ReasoningFormat f, bool open, const std::string& text) {
  ReasoningSplit s(f, open);
  ReasoningParts p = s.push(text);
  const ReasoningParts rest = s.flush();
  return {p.reasoning + rest.reasoning, p.content + rest.content};
}

// The text in random pieces, each piece's parts concatenated.
ReasoningParts in_pieces(ReasoningFormat f, bool open, const std::string& text, std::mt19937& rng) {
  ReasoningSplit s(f, open);
  ReasoningParts all;
  for (size_t i = 0; i < text.size();) {
    const size_t n = 1 + rng() % 4;
    const ReasoningParts p = s.push(std::string_view(text).substr(i, n));
    all.reasoning += p.reasoning;
    all.content += p.content;
    i += n;
  }
  const ReasoningParts rest = s.flush();
  return {all.reasoning + rest.reasoning, all.content + rest.content};
}

struct Case {
  ReasoningFormat format;
  bool open;
  std::string text, reasoning, content;
};

TEST(ReasoningSplit, ALeadingThinkBlockIsReasoningHoweverTheTextIsCut) {
  const auto deepseek = ReasoningFormat::deepseek, legacy = ReasoningFormat::deepseek_legacy;
  const std::vector<Case> cases = {
      {deepseek, false, "<think>Let me see.</think>\n\nHello!", "Let me see.", "Hello!"},
      {deepseek, false, "  \n<think>a</think>b", "a", "b"},
      {deepseek, false, "Hello <think>not a block</think>", "", "Hello <think>not a block</think>"},
      {deepseek, false, "<think>never closed", "never closed", ""},
      {deepseek, false, "<thi", "", "<thi"},
      {deepseek, false, "", "", ""},
      {deepseek, false, "<think></think>x", "", "x"},
      {deepseek, true, "opened by the prompt</think>\nanswer", "opened by the prompt", "answer"},
      {deepseek, true, "a </thin> b</think>c", "a </thin> b", "c"},
      {legacy, false, "<think>a</think>\nb", "a", "<think>a</think>\nb"},
      {ReasoningFormat::none, false, "<think>a</think>b", "", "<think>a</think>b"},
  };
  std::mt19937 rng(3);
  for (const Case& c : cases) {
    const ReasoningParts w = whole(c.format, c.open, c.text);
    EXPECT_EQ(w.reasoning, c.reasoning) << c.text;
    EXPECT_EQ(w.content, c.content) << c.text;
    for (int trial = 0; trial < 20; ++trial) {
      const ReasoningParts p = in_pieces(c.format, c.open, c.text, rng);
      ASSERT_EQ(p.reasoning, c.reasoning) << c.text;
      ASSERT_EQ(p.content, c.content) << c.text;
    }
  }
}

TEST(ReasoningSplit, NamesAndOpenPrompts) {
  EXPECT_EQ(parse_reasoning_format("auto"), ReasoningFormat::deepseek);
  EXPECT_EQ(parse_reasoning_format("deepseek-legacy"), ReasoningFormat::deepseek_legacy);
  EXPECT_EQ(parse_reasoning_format("none"), ReasoningFormat::none);
  EXPECT_FALSE(parse_reasoning_format("Deepseek"));
  EXPECT_TRUE(opens_thinking("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(opens_thinking("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(opens_thinking("<|im_start|>assistant\n"));
}

std::vector<GeneratedToken> tokens_of(const std::vector<std::string>& pieces) {
  std::vector<GeneratedToken> out;
  for (const std::string& p : pieces) {
    GeneratedToken t;
    t.text = p;
    out.push_back(t);
  }
  return out;
}

TEST(ReasoningSplit, ChatAnswersCarryReasoningContent) {
  ResponseMeta m;
  m.endpoint = Endpoint::chat;
  m.reasoning = ReasoningFormat::deepseek;
  const TokenText text_of = [](int32_t) { return std::string(); };
  const std::vector<std::string> pieces = {"<thi", "nk>ab", "c</th", "ink>Hi", " there"};
  ResponseBuilder whole_answer(m, text_of);
  const Json message = whole_answer.full_response(tokens_of(pieces), engine::FinishReason::eog, {})["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "abc");
  EXPECT_EQ(message["content"], "Hi there");
  ResponseBuilder stream(m, text_of);
  std::string reasoning, content;
  for (const std::string& p : pieces) {
    const Json delta = stream.delta_chunk(tokens_of({p}))["choices"][0]["delta"];
    if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"].get<std::string>();
    content += delta["content"].get<std::string>();
  }
  EXPECT_EQ(reasoning, "abc");
  EXPECT_EQ(content, "Hi there");
  m.endpoint = Endpoint::completions;  // completions give the text as it is
  ResponseBuilder completion(m, text_of);
  EXPECT_EQ(completion.full_response(tokens_of(pieces), engine::FinishReason::eog, {})["choices"][0]["text"],
            "<think>abc</think>Hi there");
}

}  // namespace reasoning_test
}  // namespace cohort::server
