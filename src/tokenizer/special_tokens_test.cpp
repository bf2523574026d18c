// Special tokens written in the text: which are matched, in which order.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenizer/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace cohort::tokenizer {
namespace special_tokens_test {

// Byte-level vocabulary with specials after the 256 byte tokens.
constexpr int32_t kImStart = 256, kImEnd = 257, kTool = 258, kToolCall = 259, kLong = 260;

Tokenizer make() {
  return Tokenizer::from_gguf(testing::bpe_metadata({.pre = "smollm",
                                                     .extra = {{"<|im_start|>", 3},
                                                               {"<|im_end|>", 3},
                                                               {"<tool>", 4},
                                                               {"<tool_call>", 4},
                                                               {"<|im_end|>x", 3}}}));
}

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

TEST(SpecialTokens, ControlTokensNeedParseSpecial) {
  const Tokenizer tok = make();
  EXPECT_TRUE(contains(tok.encode("<|im_start|>user", false, true), kImStart));
  const std::vector<int32_t> as_text = tok.encode("<|im_start|>user", false, false);
  EXPECT_FALSE(contains(as_text, kImStart));
  EXPECT_EQ(tok.decode(as_text, false), "<|im_start|>user");
}

TEST(SpecialTokens, UserDefinedTokensAreAlwaysMatched) {
  const Tokenizer tok = make();
  EXPECT_EQ(tok.encode("<tool>", false, false), (std::vector{kTool}));
  EXPECT_EQ(tok.encode("<tool><tool>", false, true), (std::vector{kTool, kTool}));
}

TEST(SpecialTokens, LongerTokensAreMatchedFirst) {
  const Tokenizer tok = make();
  EXPECT_EQ(tok.encode("<tool_call>", false, false), (std::vector{kToolCall}));
  EXPECT_EQ(tok.encode("<|im_end|>x<|im_end|>", false, true), (std::vector{kLong, kImEnd}));
}

TEST(SpecialTokens, TextAroundSpecialTokensIsTokenizedSeparately) {
  const Tokenizer tok = make();
  const std::vector<int32_t> ids = tok.encode("a<|im_start|>b", false, true);
  EXPECT_EQ(ids, (std::vector{int32_t{'a'}, kImStart, int32_t{'b'}}));
}

TEST(SpecialTokens, RstripEatsFollowingWhiteSpaceForPhi3) {
  gguf::Metadata md = testing::bpe_metadata({.pre = "gpt-2", .extra = {{"<|end|>", 3}}});
  md.set("general.name", gguf::Value("Phi-3 mini"));
  const Tokenizer tok = Tokenizer::from_gguf(md);
  EXPECT_EQ(tok.encode("<|end|>  \nx", false, true), (std::vector{256, int32_t{'x'}}));
}

}  // namespace special_tokens_test
}  // namespace cohort::tokenizer
