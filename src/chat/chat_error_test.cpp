// Failures: every error is a ChatTemplateError of the right kind whose
// message names line, column and the construct at fault; rendering is
// bounded (output, loop iterations, nesting, work) whatever the template.
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "chat/chat_test_util.h"

namespace cohort::chat {
namespace chat_error_test {

struct ErrorCase {
  const char* name;
  const char* source;
  ErrorKind kind;
  int line;
  int column;
  const char* what;  // a part of the message
};

const ErrorCase kErrors[] = {
    {"UnclosedIf", "{% if true %}x", ErrorKind::Syntax, 1, 15, "expected 'elif' or 'else' or 'endif'"},
    {"MissingOperand", "{{ 1 + }}", ErrorKind::Syntax, 1, 8, "unexpected end of print statement"},
    {"UnknownTag", "line one\n{% frobnicate %}", ErrorKind::Syntax, 2, 4, "unknown tag 'frobnicate'"},
    {"UnterminatedString", "{{ 'abc }}", ErrorKind::Syntax, 1, 4, "unterminated string"},
    {"UnbalancedBracket", "{{ (1 }}", ErrorKind::Syntax, 1, 7, "unexpected '}', expected ')'"},
    {"UnexpectedCharacter", "{{ 1 ! 2 }}", ErrorKind::Syntax, 1, 6, "unexpected character '!'"},
    {"UnclosedComment", "a\n{# never closed", ErrorKind::Syntax, 2, 1, "missing end of comment tag"},
    {"BreakOutsideLoop", "{% break %}", ErrorKind::Syntax, 1, 4, "'break' outside of a loop"},
    {"Include", "{% include 'other.jinja' %}", ErrorKind::Unsupported, 1, 4, "unsupported tag 'include'"},
    {"RecursiveLoop", "{% for x in l recursive %}{% endfor %}", ErrorKind::Unsupported, 1, 15, "recursive loops"},
    {"UnimplementedFilter", "{{ l|batch(2) }}", ErrorKind::Unsupported, 1, 6, "unsupported filter 'batch'"},
    {"UnknownFilter", "\n  {{ l|frobnicate }}", ErrorKind::Unsupported, 2, 8, "no filter named 'frobnicate'"},
    {"UnknownTest", "{{ l is frobnicated }}", ErrorKind::Unsupported, 1, 9, "no test named 'frobnicated'"},
    {"UnimplementedMethod", "{{ s.zfill(3) }}", ErrorKind::Unsupported, 1, 5, "str.zfill() is not supported"},
    {"StrPlusInt", "{% if true %}\n  {{ 'a' + n }}\n{% endif %}", ErrorKind::Runtime, 2, 10,
     "can only concatenate str (not \"int\") to str"},
    {"AttributeOfUndefined", "{{ nothing.attr }}", ErrorKind::Runtime, 1, 11, "'nothing' is undefined"},
    {"UndefinedInArithmetic", "{{ messages[0].missing + 'x' }}", ErrorKind::Runtime, 1, 24,
     "'dict object' has no attribute 'missing'"},
    {"DivisionByZero", "{{ n // 0 }}", ErrorKind::Runtime, 1, 6, "division or modulo by zero"},
    {"Unorderable", "{{ z < 1 }}", ErrorKind::Runtime, 1, 4, "'<' not supported between instances of 'NoneType' and 'int'"},
    {"NotCallable", "{{ n() }}", ErrorKind::Runtime, 1, 4, "'int' object is not callable"},
    {"NotIterable", "{% for x in n %}{% endfor %}", ErrorKind::Runtime, 1, 4, "'int' object is not iterable"},
    {"AssignToNonNamespace", "{% set x = 1 %}{% set x.y = 2 %}", ErrorKind::Runtime, 1, 19, "non-namespace"},
    {"UnpackMismatch", "{% set a, b = l %}", ErrorKind::Runtime, 1, 4, "too many values to unpack (expected 2)"},
    {"MutatingMethod", "{{ l.append(4) }}", ErrorKind::Runtime, 1, 5, "access to attribute 'append' of 'list' object is unsafe"},
    {"RaiseException", "{% for m in messages %}\n  {{ raise_exception('Roles must alternate') }}\n{% endfor %}",
     ErrorKind::Raised, 2, 6, "Roles must alternate"},
};

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.source; }

class ErrorTest : public testing::TestWithParam<ErrorCase> {};

TEST_P(ErrorTest, NamesKindPositionAndCause) {
  const ErrorCase& c = GetParam();
  try {
    render_with_test_context(c.source);
    FAIL() << "no error for " << c.source;
  } catch (const ChatTemplateError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.kind(), c.kind) << msg;
    EXPECT_NE(msg.find(fmt::format("line {}, column {}", c.line, c.column)), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
  }
}

std::string error_case_name(const testing::TestParamInfo<ErrorCase>& param) { return param.param.name; }

INSTANTIATE_TEST_SUITE_P(Chat, ErrorTest, testing::ValuesIn(kErrors), error_case_name);

// The kind of error `source` gives with `limits`, or nullopt when it renders.
std::optional<ErrorKind> error_kind(const std::string& source, const RenderLimits& limits = {},
                                    const nlohmann::ordered_json& messages = test_messages()) {
  try {
    ChatTemplate::parse(source).render(messages, true, test_variables(), limits);
    return std::nullopt;
  } catch (const ChatTemplateError& e) {
    return e.kind();
  }
}

TEST(ChatLimits, OutputSizeIsBounded) {
  RenderLimits limits;
  limits.max_output_bytes = 1000;
  EXPECT_EQ(error_kind("{% for i in range(200) %}0123456789{% endfor %}", limits), ErrorKind::Limit);
  EXPECT_EQ(error_kind("{% for i in range(50) %}0123456789{% endfor %}", limits), std::nullopt);
}

TEST(ChatLimits, LoopIterationsAreBounded) {
  RenderLimits limits;
  limits.max_loop_iterations = 10000;
  // 10^9 iterations unbounded; the limit stops them after 10^4 (a run that
  // never stops shows as ctest's timeout, not as a timed assertion here).
  EXPECT_EQ(error_kind("{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}"
                       "{% endfor %}{% endfor %}{% endfor %}",
                       limits),
            ErrorKind::Limit);
}

TEST(ChatLimits, InfiniteMacroRecursionStops) {
  EXPECT_EQ(error_kind("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), ErrorKind::Limit);
}

TEST(ChatLimits, DeepNestingIsRefusedAtParse) {
  EXPECT_EQ(error_kind("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}"), ErrorKind::Limit);
  EXPECT_EQ(error_kind("{{ " + std::string(100000, '[') + std::string(100000, ']') + " }}"), ErrorKind::Limit);
  std::string blocks;
  for (int i = 0; i < 20000; ++i) blocks += "{% if true %}";
  EXPECT_EQ(error_kind(blocks), ErrorKind::Limit);
  std::string chain = "{{ 1";
  for (int i = 0; i < 200000; ++i) chain += " + 1";
  EXPECT_EQ(error_kind(chain + " }}"), ErrorKind::Limit);
  std::string nots = "{{ ";
  for (int i = 0; i < 50000; ++i) nots += "not ";
  EXPECT_EQ(error_kind(nots + "1 }}"), ErrorKind::Limit);
}

TEST(ChatLimits, HugeValuesAreRefused) {
  EXPECT_EQ(error_kind("{{ 'x' * 10000000000 }}"), ErrorKind::Limit);
  EXPECT_EQ(error_kind("{{ [1, 2] * 100000000 }}"), ErrorKind::Limit);
  EXPECT_EQ(error_kind("{{ range(1000000) }}"), ErrorKind::Runtime);  // jinja2's sandbox limit
}

TEST(ChatLimits, QuadraticStringBuildingStops) {
  // Unbounded, the loop copies 200 GB of strings; the work limit (64 MiB
  // here, 1 GiB by default) stops it. Time is left to ctest's timeout.
  RenderLimits limits;
  limits.max_work_bytes = uint64_t{64} << 20;
  EXPECT_EQ(error_kind("{% set ns = namespace(s='') %}{% for i in range(100000) %}"
                       "{% set ns.s = ns.s ~ '0123456789012345678901234567890123456789' %}{% endfor %}",
                       limits),
            ErrorKind::Limit);
}

TEST(ChatLimits, DeepInputIsRefused) {
  nlohmann::ordered_json deep = nlohmann::ordered_json::array();
  for (int i = 0; i < 2000; ++i) deep = nlohmann::ordered_json::array({deep});
  EXPECT_EQ(error_kind("{{ messages }}", {}, deep), ErrorKind::Limit);
}

TEST(ChatLimits, SelfReferenceDoesNotLoopOrLeak) {
  EXPECT_EQ(render_with_test_context("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me.me is defined }}"),
            "True");
  EXPECT_EQ(error_kind("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"), ErrorKind::Runtime);
}

TEST(ChatLimits, OversizedTemplateIsRefused) {
  EXPECT_EQ(error_kind(std::string(kMaxTemplateBytes + 1, 'x')), ErrorKind::Limit);
}

TEST(ChatTemplate, RendersConcurrently) {
  const ChatTemplate t = ChatTemplate::parse(
      "{% for m in messages %}{{ loop.index }}{{ m.content|upper }}{% endfor %}{{ bos_token }}");
  const std::string expected = t.render(test_messages(), true, test_variables());
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k) ok[i] += t.render(test_messages(), true, test_variables()) == expected;
    });
  }
  for (auto& th : threads) th.join();
  for (int n : ok) EXPECT_EQ(n, 200);
}

TEST(RenderChat, FallsBackToChatMLWithoutTemplate) {
  std::vector<std::string> warnings;
  const std::string out = render_chat("", test_messages(), true, "<s>", "</s>",
                                      [&](const std::string& w) { warnings.push_back(w); });
  EXPECT_EQ(out,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>assistant\n");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("no chat template"), std::string::npos);
}

TEST(RenderChat, FallsBackOnUnsupportedOrInvalidTemplates) {
  for (const char* source : {"{% include 'x' %}", "{{ messages|batch(2) }}", "{% if %}"}) {
    std::vector<std::string> warnings;
    const std::string out = render_chat(source, test_messages(), false, "", "",
                                        [&](const std::string& w) { warnings.push_back(w); });
    EXPECT_EQ(out, render_chatml(test_messages(), false)) << source;
    ASSERT_EQ(warnings.size(), 1u) << source;
    EXPECT_NE(warnings[0].find("ChatML"), std::string::npos);
  }
}

TEST(RenderChat, RendersTemplateWithSpecialTokens) {
  const std::string out = render_chat("{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}",
                                      test_messages(), true, "<s>", "</s>", nullptr);
  EXPECT_EQ(out, "<s>Be brief.</s>Hi</s>Hello!</s>");
}

TEST(RenderChat, TemplateRejectionIsAnError) {
  try {
    render_chat("{{ raise_exception('System role not supported') }}", test_messages(), true, "", "", nullptr);
    FAIL();
  } catch (const ChatTemplateError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Raised);
    EXPECT_NE(std::string(e.what()).find("System role not supported"), std::string::npos);
  }
}

TEST(RenderChat, ChatMLFlattensContentParts) {
  const auto messages = nlohmann::ordered_json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]},
    {"role": "assistant", "content": null}])");
  EXPECT_EQ(render_chatml(messages, false), "<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n");
}

}  // namespace chat_error_test
}  // namespace cohort::chat
