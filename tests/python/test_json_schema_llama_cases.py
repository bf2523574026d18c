"""llama.cpp's own JSON-schema cases (tests/test-json-schema-to-grammar.cpp of
the llama.cpp that llama-cpp-python vendors, read from its pinned source
distribution: scripts/llama_cpp_source.sh): for every schema llama.cpp's
converter turns into a grammar, cohort's language for the schema and that
grammar's language hold the same texts, up to the whitespace between JSON
tokens (cohort writes one line with ", " and ": "; llama.cpp's grammars
allow free whitespace there). Sampled both ways at temperature 1 with the
default model, several seeds:
  - texts llama.cpp generates under its grammar (llama-cpp-python), laid out
    as cohort lays out JSON, are in cohort's language (`cohort grammar-check`,
    the server's grammar path);
  - texts cohort's server generates under the schema are in llama.cpp's
    language, judged by llama.cpp's grammar engine on its grammar (its
    grammar sampler, token by token, then end of generation).
Where the languages differ on purpose (DIFFERENCES), a witness text is in
llama.cpp's language and not in cohort's, so that the difference is pinned
and cannot grow unnoticed. Schemas llama.cpp refuses, cohort refuses too.

The cases are parsed from llama.cpp's C++ source; their number is asserted
so that a parse that finds fewer fails rather than tests less."""
import concurrent.futures
import ctypes
import json
import pathlib
import re
import subprocess

import pytest
import requests

import llama_cpp
from llama_cpp import Llama, LlamaGrammar

from conftest import ROOT

SEEDS = [1, 2]
MAX_TOKENS = 128
PROMPT = "JSON:"

# Case name -> (why cohort differs, a text llama.cpp's grammar holds and cohort's does not).
DIFFERENCES = {
    "unanchored regexp": (
        "llama.cpp's converter takes a pattern without ^ and $ as any string; cohort holds the string "
        "to the pattern as a whole (a subset of what the schema allows)", '"no digits"'),
    "regexp with unsupported shorthand": (
        "llama.cpp's converter does not read \\w and takes any string; cohort's engine reads it",
        '"abcd"'),
    "unsupported regexp in a property": (
        "llama.cpp's converter does not read the lookahead (?=a) and takes any string; cohort's engine "
        "reads it", '{"a": "b"}'),
    "optional props with empty name": (
        "llama.cpp names the rule of the property \"\" `root`, which replaces the object: its grammar "
        "is an integer", "12"),
}

# Texts both languages must hold, for cases whose samples seldom end within
# MAX_TOKENS (free property names and numbers run on).
EXAMPLES = {
    "required + optional + additional props": ['{"and": 1}', '{"and": 1.5, "also": -2e3}', '{"and": 0, "x": 7}'],
}


def _llama_cases_source():
    folder = subprocess.run([str(ROOT / "scripts" / "llama_cpp_source.sh")], check=True, text=True,
                            capture_output=True).stdout.strip()
    return (pathlib.Path(folder) / "tests" / "test-json-schema-to-grammar.cpp").read_text()


def _read_cases(text):
    """name -> (SUCCESS or FAILURE, schema, llama.cpp's grammar) of each test({...}) in `text`."""
    literal = r'\s*(?:R"""\((.*?)\)"""|"((?:[^"\\]|\\.)*)")\s*'
    pattern = re.compile(r"test\(\{\s*(SUCCESS|FAILURE)," + literal + "," + literal + "," + literal + r"\}\);",
                         re.S)

    def value(raw, quoted):
        return raw if raw is not None else quoted.encode().decode("unicode_escape")

    cases = {}
    for m in pattern.finditer(text):
        g = m.groups()
        cases[value(g[1], g[2])] = (g[0], value(g[3], g[4]), value(g[5], g[6]))
    return cases


SOURCE = _llama_cases_source()
CASES = _read_cases(SOURCE)
SUCCESS = sorted(name for name, c in CASES.items() if c[0] == "SUCCESS")
FAILURE = sorted(name for name, c in CASES.items() if c[0] == "FAILURE")


def test_every_case_is_read():
    assert len(re.findall(r"test\(\{", SOURCE)) == len(CASES) == 81
    assert set(DIFFERENCES) <= set(SUCCESS) and set(EXAMPLES) <= set(SUCCESS)


def relayout(text):
    """`text` (JSON) with the whitespace between tokens as cohort writes it:
    none, but one space after each comma and colon; strings kept verbatim."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            if c not in " \t\n\r":
                out.append(c + " " if c in ",:" else c)
            i += 1
    return "".join(out)


def test_relayout():
    assert relayout('{ "a" :[1 ,\n  2],"b\\" ,": "x : y"}') == '{"a": [1, 2], "b\\" ,": "x : y"}'


@pytest.fixture(scope="module")
def llama(default_model):
    return Llama(model_path=str(default_model), n_ctx=1024, verbose=False)


def llama_accepts(llm, grammar, text):
    """Whether llama.cpp's grammar engine lets the model generate `text` and
    then end, under `grammar` (GBNF)."""
    vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
    assert sampler, "llama.cpp refused its own grammar"
    try:
        eos = llm.token_eos()
        for token in llm.tokenize(text.encode(), add_bos=False, special=False) + [eos]:
            data = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 0.0, 0.0))
            candidates = llama_cpp.llama_token_data_array(data, 1, -1, False)
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(candidates))
            if data[0].logit == float("-inf"):
                return False
            if token != eos:
                llama_cpp.llama_sampler_accept(sampler, token)
        return True
    finally:
        llama_cpp.llama_sampler_free(sampler)


def cohort_verdicts(cohort_bin, model, schema, texts, tmp_path):
    """For each text, whether it is in cohort's language for `schema`."""
    path = tmp_path / "schema.json"
    path.write_text(schema)
    p = subprocess.run([str(cohort_bin), "grammar-check", "-m", str(model), "--json-schema-file", str(path),
                        "--jsonl"], input="".join(json.dumps(t) + "\n" for t in texts), text=True,
                       capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return [json.loads(line)["accepted"] for line in p.stdout.splitlines()]


def llama_samples(llm, grammar):
    out = []
    for seed in SEEDS:
        llm.set_seed(seed)
        r = llm.create_completion(PROMPT, grammar=LlamaGrammar.from_string(grammar, verbose=False),
                                  temperature=1.0, max_tokens=MAX_TOKENS, seed=seed)
        if r["choices"][0]["finish_reason"] == "stop":  # ended by the grammar, not cut
            out.append(r["choices"][0]["text"])
    return out


def cohort_samples(url, schema):
    def one(seed):
        r = requests.post(url + "/completion", json={
            "prompt": PROMPT, "json_schema": json.loads(schema), "n_predict": MAX_TOKENS,
            "temperature": 1.0, "seed": seed}, timeout=300)
        assert r.status_code == 200, r.text
        body = r.json()
        return body["content"] if body.get("stop_type") == "eos" else None
    with concurrent.futures.ThreadPoolExecutor(len(SEEDS)) as pool:
        return [t for t in pool.map(one, SEEDS) if t is not None]


@pytest.mark.parametrize("name", [n for n in SUCCESS if n not in DIFFERENCES])
def test_languages_agree_up_to_whitespace(name, llama, cohort_bin, default_model, cohort_server, tmp_path):
    _, schema, grammar = CASES[name]
    examples = EXAMPLES.get(name, [])
    ours = cohort_samples(cohort_server, schema) + examples
    theirs = [relayout(t) for t in llama_samples(llama, grammar)] + examples
    assert ours or theirs, "no text of either side ended within max_tokens"
    refused_by_us = [t for t, ok in zip(theirs, cohort_verdicts(cohort_bin, default_model, schema, theirs,
                                                                tmp_path)) if not ok]
    refused_by_llama = [t for t in ours if not llama_accepts(llama, grammar, t)]
    assert not refused_by_us and not refused_by_llama, (
        f"llama.cpp's texts cohort refuses: {refused_by_us}; cohort's texts llama.cpp refuses: "
        f"{refused_by_llama}")


@pytest.mark.parametrize("name", sorted(DIFFERENCES))
def test_known_differences_hold(name, llama, cohort_bin, default_model, tmp_path):
    _, schema, grammar = CASES[name]
    witness = DIFFERENCES[name][1]
    assert llama_accepts(llama, grammar, witness)
    assert cohort_verdicts(cohort_bin, default_model, schema, [witness], tmp_path) == [False]


@pytest.mark.parametrize("name", FAILURE)
def test_schemas_llama_cpp_refuses_are_refused(name, cohort_server):
    schema = CASES[name][1]
    try:
        parsed = json.loads(schema)
    except json.JSONDecodeError:
        parsed = None
    if parsed is None:  # not JSON: the request itself is malformed
        r = requests.post(cohort_server + "/completion", data='{"prompt": "x", "json_schema": ' + schema + "}",
                          headers={"Content-Type": "application/json"}, timeout=60)
    else:
        r = requests.post(cohort_server + "/completion", json={"prompt": "x", "json_schema": parsed}, timeout=60)
    assert r.status_code == 400, r.text
