"""Structured output against `cohort serve`: under a JSON schema
(json_schema, response_format json_schema or json_object) or a GBNF grammar,
every answer, sampled at temperature 1 with several seeds, parses and
validates (the `jsonschema` package judges schemas; Python's re and eval
judge grammars), streamed and not, on /completion, /v1/completions and
/v1/chat/completions; bad grammars and schemas are a 400 naming the
problem."""
import datetime
import json
import re
import subprocess

import jsonschema
import pytest
import requests
from openai import OpenAI

TIMEOUT = (5, 300)
SEEDS = [1, 2, 3]
MAX_TOKENS = 160
PROMPT = "Answer with JSON."
MESSAGES = [{"role": "user", "content": PROMPT}]

# Schemas of the shapes programs ask for; strings and numbers bounded so an
# answer ends within MAX_TOKENS at temperature 1.
NAME = {"type": "string", "maxLength": 10}
SCHEMAS = {
    "nested_object": {
        "type": "object",
        "properties": {
            "name": NAME,
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "address": {"type": "object",
                        "properties": {"city": NAME, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                        "required": ["city", "zip"]},
        },
        "required": ["name", "age", "address"],
    },
    "array_of_enums": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1,
                       "maxItems": 4},
    "optional_fields": {
        "type": "object",
        "properties": {"a": {"type": "boolean"}, "b": {"type": "integer", "minimum": -5, "maximum": 5},
                       "c": {"type": "null"}, "d": NAME},
        "required": ["a"],
    },
    "refs": {
        "$defs": {"point": {"type": "object",
                            "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 9},
                                           "y": {"type": "integer", "minimum": 0, "maximum": 9}},
                            "required": ["x", "y"]}},
        "type": "object",
        "properties": {"from": {"$ref": "#/$defs/point"}, "to": {"$ref": "#/$defs/point"}},
        "required": ["from", "to"],
    },
    "any_of_and_const": {
        "type": "object",
        "properties": {"kind": {"const": "circle"}, "size": {"enum": [1, 2, 3]},
                       "label": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 99}, NAME]}},
        "required": ["kind", "size", "label"],
    },
    "array_of_objects": {
        "type": "array",
        "items": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9},
                                                   "tag": {"enum": ["a", "b"]}},
                  "required": ["n", "tag"]},
        "minItems": 1, "maxItems": 3,
    },
    # llama.cpp's tuple form: items as an array is exactly those items
    "tuple": {"type": "array", "items": [{"type": "integer", "minimum": 0, "maximum": 99}, {"enum": ["x", "y"]}]},
    "formats": {
        "type": "object",
        "properties": {"id": {"type": "string", "format": "uuid"}, "day": {"type": "string", "format": "date"},
                       "at": {"type": "string", "format": "time"},
                       "when": {"type": ["string", "null"], "format": "date-time"}},
        "required": ["id", "day", "at", "when"],
    },
}

ARITHMETIC = r'''
root ::= term (("+" | "-") term){0,3}
term ::= num (("*" | "/") num){0,2}
num ::= [1-9] [0-9]{0,2} | "(" [1-9] [0-9]{0,1} ("+" | "-") [1-9] [0-9]{0,1} ")"
'''
IDENTIFIERS = r'''
root ::= ident ("," " "? ident){0,4}
ident ::= [a-zA-Z_] [a-zA-Z0-9_]{0,11}
'''
NUM = r"(?:[1-9][0-9]{0,2}|\([1-9][0-9]?[+-][1-9][0-9]?\))"
TERM = NUM + r"(?:[*/]" + NUM + r"){0,2}"
IDENT = r"[a-zA-Z_][a-zA-Z0-9_]{0,11}"
GRAMMARS = {
    "arithmetic": (ARITHMETIC, re.compile(TERM + r"(?:[+-]" + TERM + r"){0,3}")),
    "identifiers": (IDENTIFIERS, re.compile(IDENT + r"(?:, ?" + IDENT + r"){0,4}")),
    "repetition": ('root ::= "a"{5,5}', re.compile(r"aaaaa")),
    # llama.cpp's optional whitespace: an empty alternative
    "empty_alternative": ('root ::= "[" ws "1" ws "]"\nws ::= | " "', re.compile(r"\[ ?1 ?\]")),
}


@pytest.fixture(scope="module")
def client(cohort_server):
    return OpenAI(base_url=cohort_server + "/v1", api_key="unused", max_retries=0, timeout=300)


def _sse_text(response):
    """The text of a native /completion stream."""
    text = ""
    for line in response.iter_lines():
        if line.startswith(b"data: "):
            text += json.loads(line[6:]).get("content", "")
    return text


def generate(server, client, route, constraint, seed, stream):
    """The generated text of one request under `constraint` (request fields)."""
    sampling = {"temperature": 1.0, "seed": seed, "max_tokens": MAX_TOKENS}
    if route == "native":
        body = {"prompt": PROMPT, "n_predict": MAX_TOKENS, "temperature": 1.0, "seed": seed,
                "stream": stream, **constraint}
        r = requests.post(server + "/completion", json=body, timeout=TIMEOUT, stream=stream)
        assert r.status_code == 200, r.text
        if stream:
            return _sse_text(r)
        assert r.json()["stop_type"] == "eos", r.json()
        return r.json()["content"]
    if route == "completions":
        if stream:
            chunks = client.completions.create(model="any", prompt=PROMPT, stream=True, extra_body=constraint,
                                               **sampling)
            return "".join(c.choices[0].text for c in chunks if c.choices)
        r = client.completions.create(model="any", prompt=PROMPT, extra_body=constraint, **sampling)
        assert r.choices[0].finish_reason == "stop", r
        return r.choices[0].text
    if stream:
        chunks = client.chat.completions.create(model="any", messages=MESSAGES, stream=True,
                                                extra_body=constraint, **sampling)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    r = client.chat.completions.create(model="any", messages=MESSAGES, extra_body=constraint, **sampling)
    assert r.choices[0].finish_reason == "stop", r
    return r.choices[0].message.content


# The ways a request gives a schema: llama-server's json_schema, OpenAI's
# response_format json_schema, llama-server's response_format json_object with a schema.
SCHEMA_FIELDS = {
    "json_schema": lambda s: {"json_schema": s},
    "response_format_json_schema": lambda s: {"response_format": {"type": "json_schema",
                                                                  "json_schema": {"name": "answer", "schema": s}}},
    "response_format_json_object": lambda s: {"response_format": {"type": "json_object", "schema": s}},
}
ROUTES = ["native", "completions", "chat"]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@pytest.mark.parametrize("route,field", [("native", "json_schema"), ("completions", "response_format_json_object"),
                                         ("chat", "response_format_json_schema")])
def test_answers_validate_against_the_schema(cohort_server, client, name, route, field):
    schema = SCHEMAS[name]
    for seed in SEEDS:
        text = generate(cohort_server, client, route, SCHEMA_FIELDS[field](schema), seed, stream=False)
        value = json.loads(text)
        validator = jsonschema.Draft7Validator if name == "tuple" else jsonschema.Draft202012Validator
        # the draft's own formats: FormatChecker() reads "time" as draft 3 did (no offset)
        validator(schema, format_checker=validator.FORMAT_CHECKER).validate(value)
        if name == "tuple":  # as llama.cpp reads it (Draft 7 lets a tuple be shorter or longer)
            assert len(value) == 2, text


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", ["nested_object", "refs"])
def test_streamed_answers_validate_against_the_schema(cohort_server, client, route, name):
    schema = SCHEMAS[name]
    for seed in SEEDS[:2]:
        text = generate(cohort_server, client, route, {"json_schema": schema}, seed, stream=True)
        jsonschema.validate(json.loads(text), schema, format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize("route", ROUTES)
def test_json_object_is_an_object(cohort_server, client, route):
    for seed in SEEDS:
        sampling_room = {"response_format": {"type": "json_object"}}
        try:
            text = generate(cohort_server, client, route, sampling_room, seed, stream=False)
        except AssertionError:
            continue  # a long value cut at max_tokens: not judged
        assert isinstance(json.loads(text), dict), text


@pytest.mark.parametrize("name", sorted(GRAMMARS))
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("stream", [False, True])
def test_answers_match_the_grammar(cohort_server, client, name, route, stream):
    gbnf, pattern = GRAMMARS[name]
    for seed in SEEDS:
        text = generate(cohort_server, client, route, {"grammar": gbnf}, seed, stream)
        assert pattern.fullmatch(text), f"{name}: {text!r}"
        if name == "arithmetic":
            eval(text, {"__builtins__": {}})  # parses as the arithmetic it is


def _error(server, path, body):
    r = requests.post(server + path, json=body, timeout=TIMEOUT)
    assert r.status_code == 400, r.text
    return r.json()["error"]


BAD = [
    ({"grammar": "root ::= item+"}, "grammar", "item"),
    ({"grammar": 'root ::= "a'}, "grammar", "line 1"),
    ({"grammar": 'start ::= "a"'}, "grammar", "root"),
    ({"grammar": 5}, "grammar", "string"),
    ({"json_schema": {"type": 123}}, "json_schema", "type"),
    ({"json_schema": "object"}, "json_schema", "object"),
    ({"json_schema": {"type": "object", "properties": {"a": {"$ref": "#/$defs/none"}}}}, "json_schema", "none"),
    ({"response_format": {"type": "sound"}}, "response_format.type", "sound"),
    ({"response_format": {"type": "json_object", "schema": 123}}, "response_format.schema", "object"),
    ({"response_format": {"type": "json_schema"}}, "response_format.json_schema", "schema"),
    ({"response_format": {"type": 7}}, "response_format.type", "string"),
    ({"grammar": 'root ::= "a"', "json_schema": {}}, "json_schema", "grammar"),
]


@pytest.mark.parametrize("body,param,words", BAD)
@pytest.mark.parametrize("path,base", [("/completion", {"prompt": "Hi"}),
                                       ("/v1/completions", {"prompt": "Hi"}),
                                       ("/v1/chat/completions", {"messages": MESSAGES})])
def test_bad_grammars_and_schemas_are_400_naming_the_problem(cohort_server, path, base, body, param, words):
    err = _error(cohort_server, path, {**base, "max_tokens": 4, **body})
    assert err["param"] == param, err
    assert words.lower() in err["message"].lower(), err
    assert requests.get(cohort_server + "/health", timeout=TIMEOUT).status_code == 200


# Keywords the grammar engine would read past: a 400 naming the keyword and
# where it is (a JSON pointer into the schema), never an answer held to less
# than the schema.
UNENFORCEABLE = [
    ({"type": "object", "properties": {"a": {"allOf": [{"type": "integer"}, {"minimum": 1}]}}},
     "'allOf' of 2 schemas at /properties/a/allOf"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "allOf": [{"required": ["a"]}]},
     "'allOf' beside 'type' at /allOf"),
    ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "'uniqueItems' at /uniqueItems"),
    ({"type": "array", "contains": {"const": 1}}, "'contains' at /contains"),
    ({"$defs": {"n": {"not": {"type": "null"}}}, "$ref": "#/$defs/n"}, "'not' at /$defs/n/not"),
    ({"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}}, "'if' at /if"),
    ({"type": "object", "else": {"required": ["b"]}}, "'else' at /else"),
    ({"type": "array", "items": [{"type": "object", "dependentRequired": {"a": ["b"]}}]},
     "'dependentRequired' at /items/0/dependentRequired"),
    ({"type": "object", "properties": {"a/b~": {"type": "object", "dependentSchemas": {"x": {}}}}},
     "'dependentSchemas' at /properties/a~1b~0/dependentSchemas"),
    ({"type": "object", "dependencies": {"a": ["b"]}}, "'dependencies' at /dependencies"),
]


@pytest.mark.parametrize("schema,words", UNENFORCEABLE)
@pytest.mark.parametrize("path,base,field", [
    ("/completion", {"prompt": "Hi"}, "json_schema"),
    ("/v1/chat/completions", {"messages": MESSAGES}, "response_format_json_schema"),
])
def test_schema_keywords_the_engine_ignores_are_400_naming_them(cohort_server, path, base, field, schema, words):
    err = _error(cohort_server, path, {**base, "max_tokens": 4, **SCHEMA_FIELDS[field](schema)})
    assert err["param"] == {"json_schema": "json_schema",
                            "response_format_json_schema": "response_format.json_schema.schema"}[field], err
    assert words in err["message"], err


# Enforced, so not refused: a one-schema allOf (how pydantic writes a $ref
# with a description), uniqueItems false, and those keywords' names as
# property names and inside data (const, enum, default, examples).
ENFORCEABLE = {
    "one_schema_all_of": {
        "$defs": {"Color": {"enum": ["red", "green"], "title": "Color", "type": "string"}},
        "type": "object",
        "properties": {"c": {"allOf": [{"$ref": "#/$defs/Color"}], "description": "a colour", "default": "red"}},
        "required": ["c"],
    },
    "keyword_names_as_names_and_data": {
        "type": "object",
        "properties": {"not": {"const": {"allOf": [1, 2]}},
                       "if": {"enum": ["then", {"uniqueItems": True}]},
                       "contains": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2,
                                    "uniqueItems": False, "default": [{"not": 1}], "examples": [{"if": {}}]}},
        "required": ["not", "if", "contains"],
    },
}


@pytest.mark.parametrize("name", sorted(ENFORCEABLE))
def test_schemas_the_engine_enforces_are_not_refused(cohort_server, client, name):
    schema = ENFORCEABLE[name]
    for seed in SEEDS[:2]:
        text = generate(cohort_server, client, "native", {"json_schema": schema}, seed, stream=False)
        jsonschema.Draft202012Validator(schema).validate(json.loads(text))


# RFC 3339 as the server holds `format` to it: a day its month has, no leap
# second, at most 3 digits of a second, an offset Z or +hh:mm.
_TIME = re.compile(r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,3})?"
                   r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")


def _is_date(text):
    try:
        return re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text) is not None and bool(datetime.date.fromisoformat(text))
    except ValueError:
        return False


def _in_format(fmt, text):
    if fmt == "date":
        return _is_date(text)
    if fmt == "time":
        return _TIME.fullmatch(text) is not None
    day, _, time = text.partition("T")
    return _is_date(day) and _TIME.fullmatch(time) is not None


# Prompts that lead the model, greedy, to copy a value the format forbids (the
# grammar engine's own formats let each of these through): the format, not
# the prompt, must hold, and the answer must end.
DATE_TIME_PROMPTS = [
    ("date", "The date is 2023-02-31."),
    ("date", "The date is 2023-02-29."),  # not a leap year
    ("time", "The time is 12:30:60Z."),  # a leap second where UTC is not 23:59
    ("time", "The time is 12:30:59.123456789Z."),
    ("date-time", "It is 2023-02-30T12:30:60.123456Z."),
]


@pytest.mark.parametrize("route", ["native", "chat"])
@pytest.mark.parametrize("fmt,hint", DATE_TIME_PROMPTS)
def test_dates_and_times_hold_their_format_against_the_prompt(cohort_server, client, route, fmt, hint):
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}, "required": ["v"]}
    prompt = f"{PROMPT} {hint}"
    if route == "native":
        r = requests.post(cohort_server + "/completion", timeout=TIMEOUT, json={
            "prompt": prompt, "n_predict": MAX_TOKENS, "temperature": 0, "json_schema": schema})
        assert r.status_code == 200 and r.json()["stop_type"] == "eos", r.text
        text = r.json()["content"]
    else:
        r = client.chat.completions.create(model="any", messages=[{"role": "user", "content": prompt}],
                                           temperature=0, max_tokens=MAX_TOKENS, extra_body={"json_schema": schema})
        assert r.choices[0].finish_reason == "stop", r
        text = r.choices[0].message.content
    value = json.loads(text)
    assert _in_format(fmt, value["v"]), text
    validator = jsonschema.Draft202012Validator
    validator(schema, format_checker=validator.FORMAT_CHECKER).validate(value)


@pytest.mark.parametrize("path,base", [("/completion", {"prompt": "Say yes"}),
                                       ("/v1/completions", {"prompt": "Say yes"})])
def test_ignore_eos_under_a_grammar_ends_where_the_grammar_is_complete(cohort_server, path, base):
    """ignore_eos bans end-of-generation tokens, but a complete grammar
    allows nothing else: the answer ends there, as a stop."""
    body = {**base, "grammar": 'root ::= "yes"', "ignore_eos": True, "max_tokens": 20, "n_predict": 20,
            "temperature": 0}
    r = requests.post(cohort_server + path, json=body, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    j = r.json()
    if path == "/completion":
        assert j["content"] == "yes" and j["stop_type"] == "eos", j
    else:
        assert j["choices"][0]["text"] == "yes" and j["choices"][0]["finish_reason"] == "stop", j


def test_grammar_check_tells_accepted_incomplete_and_rejected_texts(cohort_bin, default_model, tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}},
                                  "required": ["a"]}))
    texts = {"in": '{"a": 12}', "prefix": '{"a": 1', "out": '{"a":12}', "small": '{"a": 2}'}
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
    p = subprocess.run([str(cohort_bin), "grammar-check", "-m", str(default_model), "--json-schema-file",
                        str(schema), *(str(tmp_path / n) for n in texts)], capture_output=True, text=True)
    assert p.returncode == 1 and "3 of 4 texts not in the language" in p.stderr, p.stderr
    lines = dict(line.rsplit(": ", 1) for line in p.stdout.splitlines())
    assert lines[str(tmp_path / "in")] == "accepted"
    assert lines[str(tmp_path / "prefix")] == "incomplete"
    assert lines[str(tmp_path / "out")].startswith("rejected at byte ")
    assert lines[str(tmp_path / "small")].startswith("rejected at byte ")
    p = subprocess.run([str(cohort_bin), "grammar-check", "-m", str(default_model), "--json-schema-file",
                        str(schema), "--jsonl"], input='"{\\"a\\": 3}"\n"[]"\n', capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert [json.loads(x)["accepted"] for x in p.stdout.splitlines()] == [True, False]


def test_grammar_check_names_a_bad_grammar_file(cohort_bin, default_model, tmp_path):
    grammar = tmp_path / "bad.gbnf"
    grammar.write_text('root ::= "a" (')
    p = subprocess.run([str(cohort_bin), "grammar-check", "-m", str(default_model), "--grammar-file", str(grammar),
                        "--jsonl"], input="", capture_output=True, text=True)
    assert p.returncode == 1 and str(grammar) in p.stderr and "grammar" in p.stderr, p.stderr


@pytest.mark.parametrize("policy", ["cohort", "mixed", "no-cont", "serial"])
def test_constrained_and_free_requests_together_under_every_phase_policy(cohort_bin, default_model, tmp_path,
                                                                         policy):
    """Two requests under a schema and two without, sent together to a server
    of that policy: every schema answer validates, every request finishes,
    and a free request's tokens are those it gets alone (its row is not
    masked by its neighbours')."""
    import concurrent.futures
    from conftest import serving
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99},
                                               "ok": {"type": "boolean"}}, "required": ["n", "ok"]}
    bodies = [{"prompt": PROMPT, "n_predict": 24, "temperature": 1.0, "seed": 7 + i,
               **({"json_schema": schema} if i % 2 == 0 else {})} for i in range(4)]
    with serving(cohort_bin, default_model, ["-c", "2048", "-np", "4", "--phase-policy", policy],
                 tmp_path) as url:
        def post(body):
            r = requests.post(url + "/completion", json=body, timeout=TIMEOUT)
            assert r.status_code == 200, r.text
            return r.json()["content"]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            together = list(pool.map(post, bodies))
        alone = [post(b) for b in bodies[1::2]]
    for text in together[0::2]:
        jsonschema.validate(json.loads(text), schema)
    assert together[1::2] == alone
