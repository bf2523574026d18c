// Statements: if, for and loop variables, set and scoping, namespace, macro, filter, with, raw.
//
// Every expected output is what Python's jinja2 3.1 renders for the same
// template and variables with transformers' settings (sandboxed environment,
// trim_blocks, lstrip_blocks; see chat_test_util.h for the variables).
#include <gtest/gtest.h>

#include "chat/chat_test_util.h"

namespace cohort::chat {
namespace chat_statement_test {

const RenderCase kStatements[] = {
    {"IfElifElse",
     "{% if n < 5 %}small{% elif n < 10 %}medium{% else %}large{% endif %}",
     "medium"},
    {"ForLoopVariables",
     "{% for m in messages %}{{ loop.index }}/{{ loop.length }} {{ loop.index0 }} {{ loop.revindex }} {{ loop.first }} {{ loop.last }} {{ m.role }};{% endfor %}",
     "1/3 0 3 True False system;2/3 1 2 False False user;3/3 2 1 False True assistant;"},
    {"ForPrevNextAndCycle",
     "{% for x in l %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {{ loop.cycle('odd', 'even') }};{% endfor %}",
     "<3>1 odd;3<1>2 even;1<2> odd;"},
    {"ForOverDictItems",
     "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
     "b=1;a=[1, 2];ba"},
    {"ForOverString",
     "{% for c in 'héj' %}[{{ c }}]{% endfor %}",
     "[h][é][j]"},
    {"ForElse",
     "{% for x in [] %}x{% else %}empty{% endfor %}",
     "empty"},
    {"ForFilterCountsKeptItems",
     "{% for m in messages if m.role != 'system' %}{{ loop.index }}:{{ m.role }}/{{ loop.length }} {% endfor %}",
     "1:user/2 2:assistant/2 "},
    {"BreakAndContinue",
     "{% for i in range(10) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}",
     "023"},
    {"SetInLoopDoesNotLeak",
     "{% set x = 'outer' %}{% for i in l %}{% set x = i %}{{ x }}{% endfor %} {{ x }}",
     "312 outer"},
    {"NamespaceCarriesState",
     "{% set ns = namespace(count=0, found=false) %}{% for m in messages %}{% set ns.count = ns.count + 1 %}{% if m.role == 'user' %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.count }} {{ ns.found }} {{ ns }}",
     "3 True <Namespace {'count': 3, 'found': True}>"},
    {"SetTupleUnpacking",
     "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t2 = 1, 2 %}{{ t2 }}",
     "12(1, 2)"},
    {"SetBlockWithFilter",
     "{% set x | upper %}a{{ 'b' }}c{% endset %}[{{ x }}]",
     "[ABC]"},
    {"Macro",
     "{% macro tag(name, close=false) %}<{{ '/' if close }}{{ name }}>{% endmacro %}{{ tag('b') }}x{{ tag('b', close=true) }}{{ tag('i', true) }}",
     "<b>x</b></i>"},
    {"FilterBlock",
     "{% filter upper %}hello {{ 'world' }}{% endfilter %}",
     "HELLO WORLD"},
    {"With",
     "{% with a = 1, b = 'x' %}{{ a }}{{ b }}{% endwith %}[{{ a }}]",
     "1x[]"},
    {"Raw",
     "{% raw %}{{ not evaluated }} {% if %}{% endraw %}",
     "{{ not evaluated }} {% if %}"},
    {"Comments",
     "a{# a comment with {{ tags }} #}b",
     "ab"},
    {"RangeLoops",
     "{% for i in range(3) %}{{ i }}{% endfor %}|{% for i in range(1, 10, 3) %}{{ i }}{% endfor %}|{{ range(3)|list }}",
     "012|147|[0, 1, 2]"},
    {"LoopVariableShadowsAndRestores",
     "{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ b }}{% endfor %}{{ loop.index }}{{ a }} {% endfor %}",
     "1x2y11 1x2y22 "},
    {"ChatMLLoop",
     "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
     "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>assistant\n"},
};

class StatementTest : public testing::TestWithParam<RenderCase> {};

TEST_P(StatementTest, RendersAsJinja) {
  const RenderCase& c = GetParam();
  EXPECT_EQ(render_with_test_context(c.source), c.expected) << c.source;
}

INSTANTIATE_TEST_SUITE_P(Chat, StatementTest, testing::ValuesIn(kStatements), render_case_name);

// transformers' {% generation %} marks assistant text for training masks;
// in a prompt its body renders as is.
TEST(ChatStatement, GenerationBlockRendersItsBody) {
  EXPECT_EQ(render_with_test_context(
                "{% for m in messages %}{% generation %}{{ m.role }}{% endgeneration %};{% endfor %}"),
            "system;user;assistant;");
}

// Variables given by the caller can be rebound; the caller's values are not changed.
TEST(ChatStatement, ContextVariablesCanBeRebound) {
  EXPECT_EQ(render_with_test_context("{% set messages = messages[1:] %}{{ messages|length }}{{ add_generation_prompt }}"),
            "2True");
}

}  // namespace chat_statement_test
}  // namespace cohort::chat
