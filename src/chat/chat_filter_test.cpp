// Filters and tests.
//
// Every expected output is what Python's jinja2 3.1 renders for the same
// template and variables with transformers' settings (sandboxed environment,
// trim_blocks, lstrip_blocks; see chat_test_util.h for the variables).
#include <gtest/gtest.h>

#include "chat/chat_test_util.h"

namespace cohort::chat {
namespace chat_filter_test {

const RenderCase kFilters[] = {
    {"Trim",
     "[{{ s|trim }}][{{ 'xxaxx'|trim('x') }}][{{ z|trim }}]",
     "[Hello, World][a][None]"},
    {"Case",
     "{{ t|upper }} {{ 'ÉCOLE'|lower }} {{ 'hello wORLD'|capitalize }} {{ 'hello-world (x) y'|title }} {{ 'straße'|upper }}",
     "HÉLLO WÖRLD école Hello world Hello-World (X) Y STRASSE"},
    {"Length",
     "{{ t|length }} {{ l|length }} {{ d|count }} {{ messages|length }} {{ undefined_name|length }}",
     "11 3 2 3 0"},
    {"ToJson",
     "{{ d|tojson }} {{ t|tojson }} {{ [1.0, none, true, 'q\"\\n']|tojson }}",
     "{\"b\": 1, \"a\": [1, 2]} \"héllo wörld\" [1.0, null, true, \"q\\\"\\n\"]"},
    {"ToJsonIndent",
     "{{ {'a': [1, {'b': []}], 'c': {}}|tojson(indent=2) }}",
     "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n  \"c\": {}\n}"},
    {"ToJsonOptions",
     "{{ d|tojson(separators=(',', ':')) }} {{ d|tojson(sort_keys=true) }} {{ t|tojson(ensure_ascii=true) }}",
     "{\"b\":1,\"a\":[1,2]} {\"a\": [1, 2], \"b\": 1} \"h\\u00e9llo w\\u00f6rld\""},
    {"String",
     "{{ 5|string }} {{ 5.0|string }} {{ none|string }} {{ l|string }} {{ (1|string) + 'x' }}",
     "5 5.0 None [3, 1, 2] 1x"},
    {"Default",
     "[{{ missing|default('D') }}] [{{ z|default('D') }}] [{{ e|default('D', true) }}] [{{ missing|d }}]",
     "[D] [None] [D] []"},
    {"Join",
     "{{ l|join(', ') }} {{ [1, 'a', none]|join }} {{ messages|join('/', attribute='role') }}",
     "3, 1, 2 1aNone system/user/assistant"},
    {"FirstLast",
     "{{ l|first }} {{ l|last }} {{ t|first }} {{ t|last }} [{{ []|first }}]",
     "3 2 h d []"},
    {"Replace",
     "{{ t|replace('l', 'L') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 12321|replace(2, 9) }}",
     "héLLo wörLd bba 19391"},
    {"SelectAttr",
     "{{ messages|selectattr('role', 'equalto', 'user')|list|length }} {{ messages|rejectattr('role', 'eq', 'system')|map(attribute='role')|list }}",
     "1 ['user', 'assistant']"},
    {"SelectAttrTruthiness",
     "{{ [{'a': 1}, {'a': 0}, {}]|selectattr('a')|list }} {{ [{'a': 1}, {}]|selectattr('a', 'defined')|list }}",
     "[{'a': 1}] [{'a': 1}]"},
    {"SelectReject",
     "{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('even')|list }} {{ [0, 1, none, '']|select|list }}",
     "[1, 3] [1, 3] [1]"},
    {"Map",
     "{{ messages|map(attribute='role')|join(',') }} {{ ['a', 'b']|map('upper')|list }} {{ [{}]|map(attribute='x', default='dflt')|list }}",
     "system,user,assistant ['A', 'B'] ['dflt']"},
    {"List",
     "{{ 'ab'|list }} {{ d|list }} {{ range(2)|list }}",
     "['a', 'b'] ['b', 'a'] [0, 1]"},
    {"Indent",
     "[{{ 'a\\nb\\n\\nc'|indent }}] [{{ 'a\\nb'|indent(2, true) }}] [{{ 'a\\n\\nb'|indent(1, blank=true) }}] [{{ 'a\\nb'|indent('> ') }}]",
     "[a\n    b\n\n    c] [  a\n  b] [a\n \n b] [a\n> b]"},
    {"Items",
     "{{ d|items|list }} {% for k, v in {'x': 1}|items %}{{ k }}{{ v }}{% endfor %}",
     "[('b', 1), ('a', [1, 2])] x1"},
    {"SortUniqueReverse",
     "{{ l|sort }} {{ l|sort(reverse=true) }} {{ ['b', 'A', 'a']|sort }} {{ [1, 1, 2, 1]|unique|list }} {{ l|reverse|list }} {{ 'abc'|reverse }}",
     "[1, 2, 3] [3, 2, 1] ['A', 'a', 'b'] [1, 2] [2, 1, 3] cba"},
    {"SortByAttribute",
     "{{ messages|sort(attribute='role')|map(attribute='role')|list }}",
     "['assistant', 'system', 'user']"},
    {"Numbers",
     "{{ '42'|int + 1 }} {{ '3.7'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ '2.5'|float }} {{ -3|abs }} {{ 2.5|round }} {{ 2.567|round(2) }} {{ 2.1|round(method='ceil') }}",
     "43 3 0 5 2.5 3 2.0 2.57 3.0"},
    {"Aggregates",
     "{{ l|sum }} {{ l|min }} {{ l|max }} {{ ['b', 'A']|min }} {{ [{'v': 2}, {'v': 5}]|sum(attribute='v') }}",
     "6 1 3 A 7"},
    {"DictSort",
     "{{ {'b': 1, 'A': 2, 'a': 3}|dictsort }} {{ {'b': 1, 'a': 3}|dictsort(by='value', reverse=true) }}",
     "[('A', 2), ('a', 3), ('b', 1)] [('a', 3), ('b', 1)]"},
    {"Misc",
     "{{ 'a b  c'|wordcount }} {{ '<a href=\"x\">&'|e }} {{ 'x'|safe }}",
     "3 &lt;a href=&#34;x&#34;&gt;&amp; x"},
    {"Tests",
     "{{ n is defined }} {{ q is undefined }} {{ z is none }} {{ t is string }} {{ d is mapping }} {{ l is iterable }} {{ t is sequence }} {{ n is number }} {{ f is integer }} {{ f is float }} {{ true is boolean }}",
     "True True True True True True True True False True True"},
    {"TestsWithArguments",
     "{{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }} {{ 'user' is equalto 'user' }} {{ 2 is in l }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ n is gt 3 }} {{ n is not lt(3) }}",
     "True False True True True True True True True"},
    {"NegatedTests",
     "{{ z is not none }} {{ not z is none }} {{ messages[0].tool_calls is not defined }}",
     "False False True"},
};

class FilterTest : public testing::TestWithParam<RenderCase> {};

TEST_P(FilterTest, RendersAsJinja) {
  const RenderCase& c = GetParam();
  EXPECT_EQ(render_with_test_context(c.source), c.expected) << c.source;
}

INSTANTIATE_TEST_SUITE_P(Chat, FilterTest, testing::ValuesIn(kFilters), render_case_name);

}  // namespace chat_filter_test
}  // namespace cohort::chat
