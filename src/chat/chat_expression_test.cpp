// Expressions: operators, literals, subscripts, slices, methods.
//
// Every expected output is what Python's jinja2 3.1 renders for the same
// template and variables with transformers' settings (sandboxed environment,
// trim_blocks, lstrip_blocks; see chat_test_util.h for the variables).
#include <gtest/gtest.h>

#include "chat/chat_test_util.h"

namespace cohort::chat {
namespace chat_expression_test {

const RenderCase kExpressions[] = {
    {"Precedence",
     "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}",
     "7 9 64 4"},
    {"IntegerDivisionFloors",
     "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}",
     "3 -4 1 2 3.0 0.5"},
    {"TrueDivisionGivesFloat",
     "{{ 1 / 2 }} {{ 4 / 2 }} {{ n / 2 }}",
     "0.5 2.0 3.5"},
    {"FloatsPrintLikePython",
     "{{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 1e-5 }} {{ 0.0001 }} {{ 1.0 }} {{ -0.0 }} {{ f * 2 }}",
     "0.30000000000000004 1e+20 1e+16 1000000000000000.0 1e-05 0.0001 1.0 -0.0 5.0"},
    {"ConcatenationStringifies",
     "{{ 'a' ~ 1 ~ none ~ true ~ f ~ l ~ undefined_name }}",
     "a1NoneTrue2.5[3, 1, 2]"},
    {"SequenceArithmetic",
     "{{ 'ab' * 3 }} {{ [1] + [2] }} {{ [0] * 2 }} {{ 3 * '-' }}",
     "ababab [1, 2] [0, 0] ---"},
    {"ChainedComparisons",
     "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }}",
     "True False True True True True"},
    {"Membership",
     "{{ 'ell' in t }} {{ 2 in l }} {{ 'b' in d }} {{ 'x' not in l }} {{ 'role' in messages[0] }}",
     "False True True True True"},
    {"LogicReturnsOperands",
     "[{{ none or 'fallback' }}] [{{ 0 and 1 }}] [{{ 'x' and 'y' }}] [{{ not e }}] [{{ not not l }}]",
     "[fallback] [0] [y] [True] [True]"},
    {"InlineIf",
     "[{{ 'big' if n > 5 else 'small' }}] [{{ 'y' if false }}] [{{ 'a' if z else 'b' if e else 'c' }}]",
     "[big] [] [c]"},
    {"SubscriptsAndAttributes",
     "{{ messages[0].role }} {{ messages[-1]['content'] }} {{ d.b }} {{ d['a'][1] }} {{ messages[9] is defined }}",
     "system Hello! 1 2 False"},
    {"Slices",
     "{{ l[1:] }} {{ l[::-1] }} {{ l[:-1] }} {{ t[1:4] }} {{ t[::-1] }} {{ messages[1:]|length }} {{ l[5:] }}",
     "[1, 2] [2, 1, 3] [3, 1] éll dlröw olléh 2 []"},
    {"Literals",
     "{{ {'a': 1, 'b': [true, none, 1.5]} }} {{ (1,) }} {{ (1, 'x') }} {{ [\"it's\", 'say \"x\"'] }} {{ [] }} {{ {} }}",
     "{'a': 1, 'b': [True, None, 1.5]} (1,) (1, 'x') [\"it's\", 'say \"x\"'] [] {}"},
    {"StringEscapes",
     "{{ 'a\\tb|\\n|\\\\|\\'|\\x41\\u00e9\\101' }} {{ \"two\" 'parts' }}",
     "a\tb|\n|\\|'|AéA twoparts"},
    {"NumberLiterals",
     "{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1.5e3 }} {{ 2E-2 }}",
     "1000 31 15 5 1500.0 0.02"},
    {"StringMethods",
     "[{{ s.strip() }}][{{ s.lstrip() }}][{{ s.rstrip() }}][{{ 'xxhixx'.strip('x') }}][{{ t.upper() }}][{{ 'ABC'.lower() }}]",
     "[Hello, World][Hello, World  ][  Hello, World][hi][HÉLLO WÖRLD][abc]"},
    {"StringSplit",
     "{{ 'a,b,,c'.split(',') }} {{ ' a  b \\n'.split() }} {{ 'a b c'.split(none, 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ t.split('l')[-1] }}",
     "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c'] ['a,b', 'c'] d"},
    {"StringPredicates",
     "{{ s.startswith('  H') }} {{ t.endswith('ld') }} {{ 'abc'.startswith(('x', 'a')) }} {{ '42'.isdigit() }} {{ 'ab'.isalpha() }}",
     "True True True True True"},
    {"StringTransforms",
     "{{ 'hello wORLD'.title() }} {{ \"they're\".title() }} {{ 'aBC'.capitalize() }} {{ 'abcb'.replace('b', 'x') }} {{ 'aaa'.replace('a', 'b', 2) }}",
     "Hello World They'Re Abc axcx bba"},
    {"StringSearch",
     "{{ t.find('l') }} {{ t.rfind('l') }} {{ t.find('q') }} {{ 'banana'.count('an') }} {{ '-'.join(['a', 'b']) }}",
     "2 9 -1 2 a-b"},
    {"DictMethods",
     "{{ d.get('b') }} {{ d.get('q') }} {{ d.get('q', 5) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}",
     "1 None 5 ['b', 'a'] [1, [1, 2]] [('b', 1), ('a', [1, 2])]"},
    {"NamesResolveCase",
     "{{ True }} {{ false }} {{ None }} {{ none is none }}",
     "True False None True"},
};

class ExpressionTest : public testing::TestWithParam<RenderCase> {};

TEST_P(ExpressionTest, RendersAsJinja) {
  const RenderCase& c = GetParam();
  EXPECT_EQ(render_with_test_context(c.source), c.expected) << c.source;
}

INSTANTIATE_TEST_SUITE_P(Chat, ExpressionTest, testing::ValuesIn(kExpressions), render_case_name);

}  // namespace chat_expression_test
}  // namespace cohort::chat
