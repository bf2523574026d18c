// Whitespace control: trim_blocks, lstrip_blocks, -, +, comments, raw, line endings.
//
// Every expected output is what Python's jinja2 3.1 renders for the same
// template and variables with transformers' settings (sandboxed environment,
// trim_blocks, lstrip_blocks; see chat_test_util.h for the variables).
#include <gtest/gtest.h>

#include "chat/chat_test_util.h"

namespace cohort::chat {
namespace chat_whitespace_test {

const RenderCase kWhitespace[] = {
    {"TrimBlocksRemovesNewlineAfterTag",
     "{% if true %}\nx\n{% endif %}\ny\n",
     "x\ny"},
    {"LstripBlocksRemovesIndent",
     "  {% if true %}\n  x\n  {% endif %}\n",
     "  x\n"},
    {"LstripBlocksKeepsTextBeforeTag",
     "a  {% if true %}b{% endif %}  \n  c",
     "a  b  \n  c"},
    {"MinusStripsAllWhitespace",
     "a  \n {%- if true -%} \n b \n {%- endif -%}\n  c",
     "abc"},
    {"MinusOnExpressions",
     "a \n\t{{- 'b' -}}\n c {{ 'd' -}}   e",
     "abc de"},
    {"PlusDisablesTrimAndLstrip",
     "  {%+ if true +%}\nx{% endif %}\ny",
     "  \nxy"},
    {"CommentsFollowBlockRules",
     "a\n  {# c #}\nb {#- c -#}  c\n\t{#+ c +#}\nd",
     "a\nbc\n\t\nd"},
    {"ExpressionsAreNotLstripped",
     "  {{ 'x' }}\n  {{ 'y' }}\n",
     "  x\n  y"},
    {"OneTrailingNewlineDropped",
     "x\n\n",
     "x\n"},
    {"LineEndingsNormalized",
     "a\r\n{% if true %}\r\nb\r{% endif %}\rc",
     "a\nb\nc"},
    {"RawKeepsNewlineAfterBegin",
     "{% raw %}\n  {{ x }}\n{% endraw %}\n  {%- raw -%}  y  {%- endraw %}",
     "\n  {{ x }}\ny"},
    {"TagsInsideIndentedBlocks",
     "{%- for m in messages %}\n    {%- if m.role == 'user' %}\n        {{- '[' + m.content + ']' }}\n    {%- endif %}\n{%- endfor %}\n",
     "[Hi]"},
    {"LineStartAfterTrimmedTag",
     "{% if true %}\n    {% if true %}\n    x\n    {% endif %}\n{% endif %}",
     "    x\n"},
};

class WhitespaceTest : public testing::TestWithParam<RenderCase> {};

TEST_P(WhitespaceTest, RendersAsJinja) {
  const RenderCase& c = GetParam();
  EXPECT_EQ(render_with_test_context(c.source), c.expected) << c.source;
}

INSTANTIATE_TEST_SUITE_P(Chat, WhitespaceTest, testing::ValuesIn(kWhitespace), render_case_name);

}  // namespace chat_whitespace_test
}  // namespace cohort::chat
