"""`cohort serve` over real HTTP: bad requests get OpenAI-style 4xx errors
and leave the server healthy, random bad bodies never cause a 5xx or a
hang, and the official `openai` client works against it (chat and
completions, streamed and not, stop strings, max_tokens, logprobs, usage).
/tokenize and /detokenize agree with llama-cpp-python's tokenizer."""
import copy
import json
import random
import time

import pytest
import requests
from openai import OpenAI

from conftest import SERVE_ARGS, run_cohort, serving

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
TIMEOUT = (5, 300)
HI = [{"role": "user", "content": "Hi"}]


def c(**fields):
    return {"prompt": "Hello", "max_tokens": 2, **fields}


def h(**fields):
    return {"messages": HI, "max_tokens": 2, **fields}


# (endpoint, body: dict or raw text, status, param or None)
BAD_REQUESTS = [
    (COMPLETIONS, "{", 400, None),
    (COMPLETIONS, "", 400, None),
    (COMPLETIONS, "[1, 2]", 400, None),
    (COMPLETIONS, '"text"', 400, None),
    (COMPLETIONS, '{"prompt": "hi",}', 400, None),
    (COMPLETIONS, '{"prompt": "hi", "x": ' + "[" * 200 + "]" * 200 + "}", 400, None),
    (COMPLETIONS, b'{"prompt": "\xff\xfe"}', 400, None),
    (COMPLETIONS, {}, 400, "prompt"),
    (COMPLETIONS, {"prompt": 5}, 400, "prompt"),
    (COMPLETIONS, {"prompt": []}, 400, "prompt"),
    (COMPLETIONS, {"prompt": [1, "a"]}, 400, "prompt"),
    (COMPLETIONS, {"prompt": [1, 10**6]}, 400, "prompt"),
    (COMPLETIONS, {"prompt": [-1]}, 400, "prompt"),
    (COMPLETIONS, {"prompt": [1.5]}, 400, "prompt"),
    (COMPLETIONS, {"prompt": ["a", "b"]}, 400, "prompt"),
    (COMPLETIONS, {"prompt": {"text": "hi"}}, 400, "prompt"),
    (COMPLETIONS, {"prompt": [1] * 1100}, 400, "prompt"),
    (COMPLETIONS, c(max_tokens=0), 400, "max_tokens"),
    (COMPLETIONS, c(max_tokens=-5), 400, "max_tokens"),
    (COMPLETIONS, c(max_tokens="10"), 400, "max_tokens"),
    (COMPLETIONS, c(max_tokens=1.5), 400, "max_tokens"),
    (COMPLETIONS, c(max_tokens=2**40), 400, "max_tokens"),
    (COMPLETIONS, c(max_completion_tokens=0), 400, "max_completion_tokens"),
    (COMPLETIONS, c(n_predict=0), 400, "n_predict"),
    (COMPLETIONS, c(n_predict=-2), 400, "n_predict"),
    (COMPLETIONS, c(temperature=2.5), 400, "temperature"),
    (COMPLETIONS, c(temperature=-0.1), 400, "temperature"),
    (COMPLETIONS, c(temperature="hot"), 400, "temperature"),
    (COMPLETIONS, c(top_p=0), 400, "top_p"),
    (COMPLETIONS, c(top_p=1.5), 400, "top_p"),
    (COMPLETIONS, c(top_p=True), 400, "top_p"),
    (COMPLETIONS, c(top_k=-2), 400, "top_k"),
    (COMPLETIONS, c(top_k=1.5), 400, "top_k"),
    (COMPLETIONS, c(min_p=1.5), 400, "min_p"),
    (COMPLETIONS, c(min_p=[0.1]), 400, "min_p"),
    (COMPLETIONS, c(presence_penalty=3), 400, "presence_penalty"),
    (COMPLETIONS, c(frequency_penalty=-2.5), 400, "frequency_penalty"),
    (COMPLETIONS, c(repeat_penalty=0), 400, "repeat_penalty"),
    (COMPLETIONS, c(repeat_last_n=-2), 400, "repeat_last_n"),
    (COMPLETIONS, c(seed="x"), 400, "seed"),
    (COMPLETIONS, c(seed=-2), 400, "seed"),
    (COMPLETIONS, c(seed=2**40), 400, "seed"),
    (COMPLETIONS, c(stop=5), 400, "stop"),
    (COMPLETIONS, c(stop=[1]), 400, "stop[0]"),
    (COMPLETIONS, c(stop=["a", "b", "c", "d", "e"]), 400, "stop"),
    (COMPLETIONS, c(stop=""), 400, "stop"),
    (COMPLETIONS, c(stop=["a", ""]), 400, "stop[1]"),
    (COMPLETIONS, c(stop="s" * 600), 400, "stop"),
    (COMPLETIONS, c(n=3), 400, "n"),  # over the slots (-np 2)
    (COMPLETIONS, c(n="1"), 400, "n"),
    (COMPLETIONS, c(logprobs=6), 400, "logprobs"),
    (COMPLETIONS, c(logprobs=-1), 400, "logprobs"),
    (COMPLETIONS, c(logprobs=True), 400, "logprobs"),
    (COMPLETIONS, c(stream="yes"), 400, "stream"),
    (COMPLETIONS, c(stream_options={"include_usage": True}), 400, "stream_options"),
    (COMPLETIONS, c(stream=True, stream_options=5), 400, "stream_options"),
    (COMPLETIONS, c(stream=True, stream_options={"include_usage": "yes"}), 400,
     "stream_options.include_usage"),
    (COMPLETIONS, c(cache_prompt="no"), 400, "cache_prompt"),
    (COMPLETIONS, c(ignore_eos=1), 400, "ignore_eos"),
    (COMPLETIONS, c(model=5), 400, "model"),
    (COMPLETIONS, c(user=["u"]), 400, "user"),
    (COMPLETIONS, c(echo=True), 400, "echo"),
    (CHAT, {}, 400, "messages"),
    (CHAT, {"messages": "hi"}, 400, "messages"),
    (CHAT, {"messages": []}, 400, "messages"),
    (CHAT, {"messages": [5]}, 400, "messages[0]"),
    (CHAT, {"messages": [{"content": "x"}]}, 400, "messages[0].role"),
    (CHAT, {"messages": [{"role": "wizard", "content": "x"}]}, 400, "messages[0].role"),
    (CHAT, {"messages": [{"role": 5, "content": "x"}]}, 400, "messages[0].role"),
    (CHAT, {"messages": [{"role": "user"}]}, 400, "messages[0].content"),
    (CHAT, {"messages": [{"role": "user", "content": 5}]}, 400, "messages[0].content"),
    (CHAT, {"messages": [{"role": "user", "content": ["hi"]}]}, 400, "messages[0].content[0]"),
    (CHAT, {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
     400, "messages[0].content[0].type"),
    (CHAT, {"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}, 400,
     "messages[0].content[0].text"),
    (CHAT, {"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": None}]},
     400, "messages[1].content"),
    (CHAT, {"messages": [{"role": "user", "content": "hello " * 1100}]}, 400, "messages"),
    (CHAT, h(logprobs=1), 400, "logprobs"),
    (CHAT, h(logprobs=True, top_logprobs=21), 400, "top_logprobs"),
    (CHAT, h(top_logprobs=2), 400, "top_logprobs"),
    (CHAT, h(chat_template_kwargs=5), 400, "chat_template_kwargs"),
    (CHAT, h(n=3), 400, "n"),
    (CHAT, h(max_tokens=0), 400, "max_tokens"),
    (CHAT, h(temperature=3), 400, "temperature"),
    (CHAT, h(stop=["a", "b", "c", "d", "e"]), 400, "stop"),
]


def _send(url, endpoint, body):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    if isinstance(data, str):
        data = data.encode()
    return requests.post(url + endpoint, data=data, timeout=TIMEOUT,
                         headers={"Content-Type": "application/json"})


def _assert_openai_error(r, status):
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert isinstance(err["message"], str) and err["message"]
    assert err["type"] == ("invalid_request_error" if status < 500 else "server_error")
    assert "param" in err and "code" in err
    return err


def test_bad_request_table_is_large_enough():
    assert len(BAD_REQUESTS) >= 50


@pytest.mark.parametrize("endpoint,body,status,param", BAD_REQUESTS,
                         ids=[f"{i}-{e.rsplit('/', 1)[1]}-{p}" for i, (e, _, _, p) in enumerate(BAD_REQUESTS)])
def test_bad_request_gets_openai_error(cohort_server, endpoint, body, status, param):
    err = _assert_openai_error(_send(cohort_server, endpoint, body), status)
    assert err["param"] == param
    if param is not None:
        assert param in err["message"]


def test_context_overflow_has_openai_code(cohort_server):
    err = _assert_openai_error(_send(cohort_server, COMPLETIONS, {"prompt": [1] * 1100}), 400)
    assert err["code"] == "context_length_exceeded"


def test_protocol_errors(cohort_server):
    _assert_openai_error(requests.get(cohort_server + COMPLETIONS, timeout=TIMEOUT), 405)
    _assert_openai_error(requests.post(cohort_server + "/v1/nothing", json={}, timeout=TIMEOUT), 404)
    big = {"prompt": "x" * (9 << 20)}
    _assert_openai_error(_send(cohort_server, COMPLETIONS, big), 413)
    assert requests.get(cohort_server + "/health", timeout=TIMEOUT).json() == {"status": "ok"}


KNOWN_FIELDS = ["prompt", "messages", "max_tokens", "max_completion_tokens", "n_predict", "stop",
                "temperature", "top_p", "top_k", "min_p", "seed", "presence_penalty",
                "frequency_penalty", "repeat_penalty", "repeat_last_n", "logprobs", "top_logprobs",
                "stream", "stream_options", "n", "cache_prompt", "ignore_eos", "model", "user",
                "echo", "chat_template_kwargs"]
ODD_VALUES = [None, True, False, 0, -1, 1, 3, 2.5, -1e308, 1e308, 2**31, 2**63, -2**63, "", "x",
              "\u0000", "é🙂", [], [1], [[]], ["a", 1], {}, {"a": {"b": [None]}},
              {"include_usage": True}, [{"role": "user", "content": "x"}]]
LIMITED = {"max_tokens", "max_completion_tokens", "n_predict"}


def _mutate(rng, endpoint, body):
    """One random corruption of a valid body: a field set to an odd value,
    a field removed, a nested message field changed, or the JSON text cut
    or scrambled. Generation stays short: length fields get small values."""
    kind = rng.randrange(5)
    if kind == 0:
        for _ in range(rng.randint(1, 3)):
            field = rng.choice(KNOWN_FIELDS)
            value = rng.choice(ODD_VALUES)
            body[field] = rng.choice([-1, 0, 1, 4]) if field in LIMITED and isinstance(value, int) else value
        return json.dumps(body)
    if kind == 1 and body:
        del body[rng.choice(sorted(body))]
        body.setdefault("max_tokens", 2)
        return json.dumps(body)
    if kind == 2 and endpoint == CHAT:
        body["messages"][0][rng.choice(["role", "content", "name"])] = rng.choice(ODD_VALUES)
        return json.dumps(body)
    text = bytearray(json.dumps(body).encode())
    if kind == 3:
        return bytes(text[:rng.randrange(len(text))])
    for _ in range(rng.randint(1, 4)):
        text[rng.randrange(len(text))] = rng.randrange(256)
    return bytes(text)


def test_random_bad_bodies_never_5xx_or_hang(cohort_server):
    rng = random.Random(20240611)
    bases = [(COMPLETIONS, c()), (CHAT, h())]
    for i in range(200):
        endpoint, base = rng.choice(bases)
        data = _mutate(rng, endpoint, copy.deepcopy(base))
        r = _send(cohort_server, endpoint, data)
        assert r.status_code < 500, f"case {i}: {data!r} -> {r.status_code} {r.text}"
        if r.status_code >= 400:
            assert isinstance(r.json()["error"]["message"], str), f"case {i}: {data!r}"
    assert requests.get(cohort_server + "/health", timeout=TIMEOUT).status_code == 200


@pytest.fixture(scope="module")
def client(cohort_server):
    return OpenAI(base_url=cohort_server + "/v1", api_key="unused", max_retries=0, timeout=300)


def _model_id(client):
    return client.models.list().data[0].id


def test_models_lists_the_served_model(client, cohort_server):
    models = client.models.list().data
    assert len(models) == 1
    assert models[0].object == "model" and models[0].owned_by == "cohort"
    raw = requests.get(cohort_server + "/v1/models", timeout=TIMEOUT).json()
    assert raw["object"] == "list"


def test_chat_not_streamed(client):
    r = client.chat.completions.create(model="any", messages=HI, max_tokens=8, temperature=0)
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    choice = r.choices[0]
    assert choice.message.role == "assistant" and isinstance(choice.message.content, str)
    assert choice.finish_reason in ("stop", "length")
    assert r.usage.prompt_tokens > 0 and 0 < r.usage.completion_tokens <= 8
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert r.model == _model_id(client)


def test_completion_max_tokens_and_usage(client, cohort_server):
    prompt = "Once upon a time, there was a little"
    r = client.completions.create(model="any", prompt=prompt, max_tokens=5, temperature=0)
    assert r.object == "text_completion"
    assert r.choices[0].finish_reason == "length" and r.usage.completion_tokens == 5
    ids = requests.post(cohort_server + "/tokenize", json={"content": prompt, "add_special": True},
                        timeout=TIMEOUT).json()["tokens"]
    assert r.usage.prompt_tokens == len(ids)


@pytest.mark.parametrize("kind", ["chat", "completions"])
def test_streamed_text_concatenates_to_the_whole_answer(client, kind):
    common = dict(model="any", max_tokens=24, temperature=1.0, seed=1234)
    if kind == "chat":
        whole = client.chat.completions.create(messages=HI, **common).choices[0].message.content
        chunks = list(client.chat.completions.create(messages=HI, stream=True, **common))
        assert chunks[0].choices[0].delta.role == "assistant"
        streamed = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    else:
        whole = client.completions.create(prompt="The weather today", **common).choices[0].text
        chunks = list(client.completions.create(prompt="The weather today", stream=True, **common))
        streamed = "".join(ch.choices[0].text for ch in chunks if ch.choices)
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")
    assert streamed == whole


def test_stream_include_usage(client):
    chunks = list(client.chat.completions.create(
        model="any", messages=HI, max_tokens=4, temperature=0, stream=True,
        stream_options={"include_usage": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens <= 4
    assert all(ch.usage is None for ch in chunks[:-1])


def test_stop_string_ends_the_text_before_it(client):
    prompt = "List the days of the week: Monday, Tuesday,"
    free = client.completions.create(model="any", prompt=prompt, max_tokens=24, temperature=0)
    text = free.choices[0].text
    words = [w for w in text.split() if len(w) >= 3]
    assert words, f"nothing to stop on in {text!r}"
    stop = words[min(1, len(words) - 1)]
    stopped = client.completions.create(model="any", prompt=prompt, max_tokens=24, temperature=0, stop=[stop])
    assert stopped.choices[0].text == text[:text.index(stop)]
    assert stopped.choices[0].finish_reason == "stop"


def test_completion_logprobs(client):
    r = client.completions.create(model="any", prompt="The sky is", max_tokens=4, temperature=0, logprobs=2)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == 4
    assert all(v <= 0 for v in lp.token_logprobs)
    assert all(len(top) <= 2 for top in lp.top_logprobs)
    assert lp.text_offset == sorted(lp.text_offset) and lp.text_offset[0] == 0
    # Greedy: the chosen token is the most likely one.
    for chosen, value, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert max(top.values()) == pytest.approx(value, abs=1e-4)


def _token_id(cohort_server, text):
    ids = requests.post(cohort_server + "/tokenize", json={"content": text}, timeout=TIMEOUT).json()["tokens"]
    assert len(ids) == 1, (text, ids)
    return ids[0]


def test_logit_bias_bans_and_forces_tokens(client, cohort_server):
    prompt = "The sky is"
    greedy = client.completions.create(model="any", prompt=prompt, max_tokens=4, temperature=0, logprobs=2)
    lp = greedy.choices[0].logprobs
    first = lp.tokens[0]
    runner_up = max((t for t in lp.top_logprobs[0] if t != first), key=lp.top_logprobs[0].get)
    banned = client.completions.create(model="any", prompt=prompt, max_tokens=1, temperature=0,
                                       logit_bias={str(_token_id(cohort_server, first)): -100})
    assert banned.choices[0].text == runner_up  # greedy falls to the runner-up
    forced_id = _token_id(cohort_server, " purple")
    forced = client.completions.create(model="any", prompt=prompt, max_tokens=3, temperature=0.8, seed=5,
                                       logit_bias={str(forced_id): 100})
    assert forced.choices[0].text == " purple" * 3
    # llama-server's form: [token text, bias] raises every token of the text, in chat too
    r = requests.post(cohort_server + "/v1/chat/completions", timeout=TIMEOUT, json={
        "messages": [{"role": "user", "content": "Say hello"}], "max_tokens": 8, "temperature": 0,
        "logit_bias": [[" purple", 100]]})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"].startswith(" purple")
    bad = requests.post(cohort_server + "/v1/completions", timeout=TIMEOUT,
                        json={"prompt": prompt, "logit_bias": {"99999999": 1}})
    assert bad.status_code == 400 and "outside the vocabulary" in bad.json()["error"]["message"]


def test_chat_logprobs(client):
    r = client.chat.completions.create(model="any", messages=HI, max_tokens=6, temperature=0,
                                       logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens or r.choices[0].finish_reason == "stop"
    for entry in content:
        assert entry.logprob <= 0 and len(entry.top_logprobs) == 3
        assert bytes(entry.bytes).decode("utf-8", "replace") == entry.token
        assert entry.top_logprobs[0].logprob == pytest.approx(entry.logprob, abs=1e-4)
    text = r.choices[0].message.content
    if text.isascii():
        assert "".join(e.token for e in content).startswith(text)


TEXTS = ["Hello, world!", "  leading spaces and ünïcödé 日本語 🙂", "<|im_start|>user\nhi<|im_end|>",
         "line1\nline2\ttab", "1234567890 + 3.14 = x", ""]


@pytest.fixture(scope="module")
def reference_vocab(default_model):
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.Llama(model_path=str(default_model), vocab_only=True, verbose=False)


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("add_special", [False, True])
def test_tokenize_matches_llama_cpp_and_detokenize_round_trips(cohort_server, reference_vocab, text,
                                                               add_special):
    ours = requests.post(cohort_server + "/tokenize", json={"content": text, "add_special": add_special},
                         timeout=TIMEOUT).json()["tokens"]
    assert ours == reference_vocab.tokenize(text.encode(), add_bos=add_special, special=True)
    back = requests.post(cohort_server + "/detokenize", json={"tokens": ours}, timeout=TIMEOUT).json()
    expected = reference_vocab.detokenize(ours, special=True).decode("utf-8", "replace")
    assert back["content"] == expected
    if not add_special:
        assert back["content"] == text


def test_llama_routes(cohort_server):
    props = requests.get(cohort_server + "/props", timeout=TIMEOUT).json()
    assert props["total_slots"] == 2 and props["default_generation_settings"]["n_ctx"] > 0
    assert props["chat_template"] and props["model_path"].endswith(".gguf")
    slots = requests.get(cohort_server + "/slots", timeout=TIMEOUT).json()
    assert len(slots) == 2
    metrics = requests.get(cohort_server + "/metrics", timeout=TIMEOUT)
    assert metrics.headers["Content-Type"].startswith("text/plain")
    assert "cohort:requests_total" in metrics.text and "cohort:phase{" in metrics.text


def test_kv_cache_types_in_props_and_answers(cohort_server, cohort_bin, default_model, tmp_path):
    """/props reports the cache's types, tokens and bytes: the default f16 is half of
    f32, and q8_0 34/128 of it (SmolLM2's heads are two 32-blocks); the server answers
    with a q8_0 cache too."""
    default = requests.get(cohort_server + "/props", timeout=TIMEOUT).json()["memory"]
    assert (default["cache_type_k"], default["cache_type_v"], default["kv_tokens"]) == ("f16", "f16", 2048)
    for kind, ratio in (("f32", 2.0), ("q8_0", 34 / 64)):
        with serving(cohort_bin, default_model, [*SERVE_ARGS, "-ctk", kind, "-ctv", kind], tmp_path) as url:
            mem = requests.get(url + "/props", timeout=TIMEOUT).json()["memory"]
            assert (mem["cache_type_k"], mem["cache_type_v"]) == (kind, kind), mem
            assert mem["kv_bytes"] == ratio * default["kv_bytes"], (mem, default)
            r = requests.post(url + "/v1/completions", json={"prompt": "The sea is", "max_tokens": 4},
                              timeout=TIMEOUT).json()
            assert r["usage"]["completion_tokens"] == 4, r


def test_api_key_with_the_openai_client(cohort_bin, default_model, tmp_path):
    """--api-key and --api-key-file: the openai client gets an AuthenticationError
    without a key or with a wrong one and answers with either key; /health and
    /v1/models stay open, as llama-server's; no CORS header once keys are set."""
    import openai
    key_file = tmp_path / "keys.txt"
    key_file.write_text("\n  sk-from-file  \n")
    with serving(cohort_bin, default_model, [*SERVE_ARGS, "--api-key", "sk-flag", "--api-key-file", key_file],
                 tmp_path) as url:
        for key in ("unused", "sk-fla", "sk-flag-"):
            c = OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=300)
            with pytest.raises(openai.AuthenticationError) as e:
                c.completions.create(model="m", prompt="Hi", max_tokens=2)
            assert e.value.status_code == 401
            assert e.value.body["type"] == "authentication_error", e.value.body
            assert len(c.models.list().data) == 1  # public
        for key in ("sk-flag", "sk-from-file"):
            c = OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=300)
            r = c.completions.create(model=c.models.list().data[0].id, prompt="Hi", max_tokens=2)
            assert r.usage.completion_tokens == 2
        assert requests.get(url + "/health", timeout=TIMEOUT).status_code == 200
        for path in ("/props", "/slots", "/metrics"):
            r = requests.get(url + path, timeout=TIMEOUT)
            assert r.status_code == 401 and "access-control-allow-origin" not in r.headers, (path, r.headers)


def test_impossible_api_key_flags_are_clear_errors(cohort_bin, default_model, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")
    for args, message in ((["--api-key-file", tmp_path / "missing.txt"], "cannot read it"),
                          (["--api-key-file", empty], "no key in it"),
                          (["--api-key", ""], "must not be empty")):
        res = run_cohort(cohort_bin, "serve", "-m", default_model, "--port", "0", *args, check=False)
        assert res.returncode == 1 and message in res.stderr, (args, res.stderr)


LONG = {"prompt": "Count to one thousand: 1, 2, 3,", "max_tokens": 900, "ignore_eos": True}


def _metric(url, name):
    text = requests.get(url + "/metrics", timeout=TIMEOUT).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_a_repeated_prompt_computes_only_its_last_token(cohort_server):
    """As llama-server's slots do: the second time, every prompt token but the
    last is cached, the partly filled last KV block included (copied into the
    new request's own block), and the answer is the same."""
    answers = []
    for words in (9, 9, 23, 23):  # prompts whose lengths are not whole blocks
        prompt = " ".join(f"item{i}" for i in range(words)) + " and then"
        r = requests.post(cohort_server + COMPLETIONS, timeout=TIMEOUT,
                          json={"prompt": prompt, "max_tokens": 6, "temperature": 0, "ignore_eos": True})
        assert r.status_code == 200, r.text
        answers.append(r.json())
    for first, second in ((answers[0], answers[1]), (answers[2], answers[3])):
        usage = second["usage"]
        assert usage["prompt_tokens"] % 16 != 0, usage
        assert usage["prompt_tokens_details"]["cached_tokens"] == usage["prompt_tokens"] - 1, usage
        assert second["choices"][0]["text"] == first["choices"][0]["text"]


def test_llama_server_metrics_count_what_requests_did(cohort_server):
    m = lambda name: _metric(cohort_server, "llamacpp:" + name)  # noqa: E731
    before = {k: m(k) for k in ("n_decode_total", "prompt_tokens_cached_total", "tokens_predicted_total",
                                "prompt_seconds_total", "tokens_predicted_seconds_total")}
    prompt = "The history of the river and the city, " * 6  # several whole KV blocks
    usages = []
    for _ in range(2):
        r = requests.post(cohort_server + COMPLETIONS, timeout=TIMEOUT,
                          json={"prompt": prompt, "max_tokens": 5, "temperature": 0, "ignore_eos": True})
        assert r.status_code == 200
        usages.append(r.json()["usage"])
    usage = usages[-1]
    cached = [u["prompt_tokens_details"]["cached_tokens"] for u in usages]
    # the second request reused the first one's blocks (the first may reuse
    # an earlier request's leading rows: the BOS token at least)
    assert cached[1] == usage["prompt_tokens"] - 1
    assert m("prompt_tokens_cached_total") - before["prompt_tokens_cached_total"] == sum(cached)
    assert m("tokens_predicted_total") - before["tokens_predicted_total"] == 10
    assert m("tokens_predicted_total") == _metric(cohort_server, "cohort:tokens_predicted_total")
    # two prefills and 2 x 4 decode steps at least (a prompt may take several steps)
    assert m("n_decode_total") - before["n_decode_total"] >= 10
    assert m("prompt_seconds_total") > before["prompt_seconds_total"]
    assert m("tokens_predicted_seconds_total") > before["tokens_predicted_seconds_total"]
    assert m("n_tokens_max") >= usage["prompt_tokens"] + 5
    assert 1 <= m("n_busy_slots_per_decode") <= 2
    assert m("predicted_tokens_seconds") > 0


def _assert_request_left_its_slot(cohort_server, before):
    """The LONG request left its slot before generating all its tokens."""
    deadline = time.monotonic() + 10
    while _metric(cohort_server, "cohort:requests_processing") > 0:
        assert time.monotonic() < deadline, "still processing after the client left"
        time.sleep(0.05)
    assert _metric(cohort_server, "cohort:tokens_predicted_total") - before < LONG["max_tokens"]
    assert requests.post(cohort_server + COMPLETIONS, json=c(), timeout=TIMEOUT).status_code == 200


def test_disconnected_stream_is_cancelled(cohort_server):
    before = _metric(cohort_server, "cohort:tokens_predicted_total")
    with requests.post(cohort_server + COMPLETIONS, json={**LONG, "stream": True}, stream=True,
                       timeout=TIMEOUT) as r:
        next(r.iter_lines())  # generation has started
    _assert_request_left_its_slot(cohort_server, before)


def test_client_that_gives_up_waiting_cancels_its_request(cohort_server):
    before = _metric(cohort_server, "cohort:tokens_predicted_total")
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.post(cohort_server + COMPLETIONS, json=LONG, timeout=(5, 0.3))
    _assert_request_left_its_slot(cohort_server, before)
