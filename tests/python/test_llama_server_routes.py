"""`cohort serve` as a drop-in for llama-server: its command-line flags start
cohort (those that name what cohort always does are accepted and change
nothing), --no-slots turns /slots off as llama-server does, and
--chat-template / --chat-template-file replace the model's template;
/apply-template renders as the chat route does, and the native /completion
route answers in llama-server's form, whole and streamed."""
import json
import re

import pytest
import requests

from conftest import SERVE_ARGS, run_cohort, serving

TIMEOUT = (5, 300)
HI = [{"role": "user", "content": "Hi"}]
CHATML_HI = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def _n_tokens(url, text):
    r = requests.post(url + "/tokenize", json={"content": text, "add_special": True}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    return len(r.json()["tokens"])


def _chat_prompt_tokens(url):
    r = requests.post(url + "/v1/chat/completions", json={"messages": HI, "max_tokens": 1}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    return r.json()["usage"]["prompt_tokens"]


def test_llama_server_flags_start_the_server(cohort_bin, default_model, tmp_path):
    flags = ["--offline", "--slots", "--metrics", "--jinja", "-fa", "on", "--kv-unified",
             "--no-context-shift", "--verbose", "--chat-template", "chatml", "--backend-sampling",
             "--backend_sampling", "-bs"]
    with serving(cohort_bin, default_model, [*SERVE_ARGS, *flags], tmp_path) as url:
        assert requests.get(url + "/slots", timeout=TIMEOUT).status_code == 200
        assert requests.get(url + "/metrics", timeout=TIMEOUT).status_code == 200
        assert _chat_prompt_tokens(url) == _n_tokens(url, CHATML_HI)


def test_reasoning_sets_enable_thinking(cohort_bin, default_model, tmp_path):
    template = tmp_path / "thinking.jinja"
    template.write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}"
                        "{% if enable_thinking is defined and not enable_thinking %}[no think]{% endif %}"
                        "{% if enable_thinking is defined and enable_thinking %}[think]{% endif %}")
    conversation = [{"role": "user", "content": "Hi"}]
    for reasoning, want in (("off", "Hi[no think]"), ("on", "Hi[think]"), ("auto", "Hi[think]")):
        flags = ["--chat-template-file", template, "--reasoning", reasoning]
        with serving(cohort_bin, default_model, [*SERVE_ARGS, *flags], tmp_path) as url:
            r = _apply_template(url, conversation)
            assert r.status_code == 200 and r.json()["prompt"] == want, (reasoning, r.text)
            if reasoning == "off":  # a request's chat_template_kwargs still decide
                r = requests.post(url + "/apply-template", timeout=TIMEOUT,
                                  json={"messages": conversation, "chat_template_kwargs": {"enable_thinking": True}})
                assert r.json()["prompt"] == "Hi[think]"
                assert _chat_prompt_tokens(url) == _n_tokens(url, "Hi[no think]")
    r = run_cohort(cohort_bin, "serve", "-m", default_model, "--reasoning", "maybe", check=False)
    assert r.returncode != 0 and "--reasoning" in r.stderr


def test_aliases_and_tags_are_listed_and_the_first_alias_is_the_id(cohort_bin, default_model, tmp_path):
    flags = ["--alias", "tinyllama-2,fim,code", "--tags", "chat,fim,small"]
    with serving(cohort_bin, default_model, [*SERVE_ARGS, *flags], tmp_path) as url:
        for path in ("/models", "/v1/models"):
            models = requests.get(url + path, timeout=TIMEOUT).json()["data"]
            assert len(models) == 1
            assert models[0]["aliases"] == ["code", "fim", "tinyllama-2"]
            assert models[0]["tags"] == ["chat", "fim", "small"]
            assert models[0]["id"] == "code"


def test_no_slots_and_a_template_file(cohort_bin, default_model, tmp_path):
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }} and more words{% endfor %}")
    flags = ["--no-slots", "--no-jinja", "--context-shift", "-fa", "--kv-unified", "-v",
             "--chat-template-file", template]
    with serving(cohort_bin, default_model, [*SERVE_ARGS, *flags], tmp_path) as url:
        r = requests.get(url + "/slots", timeout=TIMEOUT)
        assert r.status_code == 501
        assert r.json()["error"]["type"] == "not_supported_error"
        assert "--slots" in r.json()["error"]["message"]
        assert _chat_prompt_tokens(url) == _n_tokens(url, "[user] Hi and more words")


def test_bad_chat_template_flags_are_clear_errors(cohort_bin, default_model, tmp_path):
    missing = tmp_path / "missing.jinja"
    for args, words in [(["--chat-template-file", missing], [str(missing), "cannot read"]),
                        (["--chat-template", "no-such-template"], ["--chat-template", "chatml"]),
                        (["-fa", "sometimes"], ["flash-attn"])]:
        res = run_cohort(cohort_bin, "serve", "-m", default_model, "--port", "0", *args, check=False, timeout=60)
        assert res.returncode != 0
        for w in words:
            assert w in res.stderr, res.stderr


CONVERSATION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": [{"type": "text", "text": "Two"}, {"type": "text", "text": "parts"}]}]


def _apply_template(url, messages):
    return requests.post(url + "/apply-template", json={"messages": messages}, timeout=TIMEOUT)


def test_apply_template_matches_llama_cpp_jinja(cohort_server, default_model):
    llama_cpp = pytest.importorskip("llama_cpp")
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    vocab = llama_cpp.Llama(model_path=str(default_model), vocab_only=True, verbose=False)
    template = vocab.metadata.get("tokenizer.chat_template")
    if not template:
        pytest.skip("the default model has no chat template")
    bos = vocab.detokenize([vocab.token_bos()], special=True).decode()
    eos = vocab.detokenize([vocab.token_eos()], special=True).decode()
    formatter = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos, add_generation_prompt=True)
    flat = [{**m, "content": "\n".join(p["text"] for p in m["content"])} if isinstance(m["content"], list)
            else m for m in CONVERSATION]
    expected = formatter(messages=flat).prompt
    # llama-server drops a rendered BOS the tokenizer adds itself (no double BOS).
    if vocab.metadata.get("tokenizer.ggml.add_bos_token", "true") == "true" and expected.startswith(bos):
        expected = expected[len(bos):]
    r = _apply_template(cohort_server, CONVERSATION)
    assert r.status_code == 200, r.text
    assert r.json() == {"prompt": expected}
    # The same text is what the chat route tokenizes.
    chat = requests.post(cohort_server + "/v1/chat/completions", json={"messages": CONVERSATION, "max_tokens": 1},
                         timeout=TIMEOUT).json()
    assert chat["usage"]["prompt_tokens"] == _n_tokens(cohort_server, expected)


@pytest.mark.parametrize("name, expected", [
    ("chatml", "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
               "<|im_start|>assistant\nHello!<|im_end|>\n"
               "<|im_start|>user\nTwo\nparts<|im_end|>\n<|im_start|>assistant\n"),
    # llama.cpp's built-in copies (llama_chat_apply_template), as llama-server --no-jinja renders them
    ("command-r", "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Be brief.<|END_OF_TURN_TOKEN|>"
                  "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi<|END_OF_TURN_TOKEN|>"
                  "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hello!<|END_OF_TURN_TOKEN|>"
                  "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Two\nparts<|END_OF_TURN_TOKEN|>"
                  "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"),
    ("llama3", "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nTwo\nparts<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\n"),
])
def test_apply_template_with_a_named_template(cohort_bin, default_model, tmp_path, name, expected):
    with serving(cohort_bin, default_model, [*SERVE_ARGS, "--no-jinja", "--chat-template", name], tmp_path) as url:
        r = _apply_template(url, CONVERSATION)
        assert r.status_code == 200, r.text
        assert r.json()["prompt"] == expected


@pytest.mark.parametrize("body, param", [({}, "messages"), ({"messages": []}, "messages"),
                                         ({"messages": "hi"}, "messages"),
                                         ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
                                         ({"messages": [{"role": "user"}]}, "messages[0].content"),
                                         ({"messages": HI, "chat_template_kwargs": 5}, "chat_template_kwargs")])
def test_apply_template_checks_messages_as_chat_does(cohort_server, body, param):
    r = requests.post(cohort_server + "/apply-template", json=body, timeout=TIMEOUT)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param


TIMING_KEYS = {"prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second", "predicted_n", "predicted_ms",
               "predicted_per_token_ms", "predicted_per_second"}


def _complete(url, path="/completion", **body):
    r = requests.post(url + path, json={"prompt": "Once upon a time", "temperature": 0, **body}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("path", ["/completion", "/completions"])
def test_native_completion_fields(cohort_server, path):
    out = _complete(cohort_server, path, n_predict=5, return_tokens=True, seed=7, top_k=20, top_p=0.9, min_p=0.05)
    assert out["stop"] is True and out["truncated"] is False
    assert out["stop_type"] in ("limit", "eos")
    assert out["tokens_predicted"] == len(out["tokens"]) <= 5
    assert out["tokens_evaluated"] == _n_tokens(cohort_server, "Once upon a time")
    assert isinstance(out["content"], str) and isinstance(out["id_slot"], int)
    assert out["model"] and out["prompt"].endswith("Once upon a time")
    s = out["generation_settings"]
    assert s["n_predict"] == 5 and s["seed"] == 7 and s["top_k"] == 20 and s["temperature"] == 0
    assert s["top_p"] == pytest.approx(0.9) and s["min_p"] == pytest.approx(0.05)
    assert TIMING_KEYS <= out["timings"].keys()
    assert out["timings"]["predicted_n"] == out["tokens_predicted"]
    assert "completion_probabilities" not in out
    # The ids decode to the content.
    text = requests.post(cohort_server + "/detokenize", json={"tokens": out["tokens"]}, timeout=TIMEOUT).json()
    assert text["content"] == out["content"]


def test_native_completion_stop_types(cohort_server):
    limit = _complete(cohort_server, n_predict=8, ignore_eos=True)
    assert limit["stop_type"] == "limit" and limit["tokens_predicted"] == 8
    # A stop string taken from the greedy answer itself ends it there.
    word = limit["content"].strip().split()[-1] if limit["content"].strip() else None
    if word:
        stopped = _complete(cohort_server, n_predict=8, ignore_eos=True, stop=[word, "zzzq"])
        assert stopped["stop_type"] == "word" and stopped["stopping_word"] == word
        assert word not in stopped["content"]
    # The end-of-generation token, forced by logit_bias.
    eos = requests.get(cohort_server + "/props", timeout=TIMEOUT).json()["eos_token"]
    eos_id = requests.post(cohort_server + "/tokenize", json={"content": eos}, timeout=TIMEOUT).json()["tokens"]
    if len(eos_id) == 1:
        out = _complete(cohort_server, n_predict=8, logit_bias=[[eos_id[0], 100]])
        assert out["stop_type"] == "eos" and out["content"] == ""


def test_native_prompt_as_ids_and_mixed(cohort_server):
    ids = requests.post(cohort_server + "/tokenize", json={"content": "Once upon a time", "add_special": True},
                        timeout=TIMEOUT).json()["tokens"]
    by_text = _complete(cohort_server, n_predict=4, ignore_eos=True)
    by_ids = _complete(cohort_server, n_predict=4, ignore_eos=True, prompt=ids)
    assert by_ids["content"] == by_text["content"]
    tail = requests.post(cohort_server + "/tokenize", json={"content": " time"}, timeout=TIMEOUT).json()["tokens"]
    mixed = _complete(cohort_server, n_predict=4, ignore_eos=True, prompt=["Once upon a", *tail])
    assert mixed["tokens_evaluated"] == _n_tokens(cohort_server, "Once upon a") + len(tail)
    # an array holding no number is a list of prompts, answered as a list in order
    several = _complete(cohort_server, n_predict=4, ignore_eos=True,
                        prompt=[ids, "Once upon a time", {"prompt_string": "Once upon a time"}, ["Hi"]])
    assert [a["index"] for a in several] == [0, 1, 2, 3]
    assert [a["content"] for a in several[:3]] == [by_text["content"]] * 3
    assert several[3]["tokens_evaluated"] == _n_tokens(cohort_server, "Hi")


def test_native_n_probs(cohort_server):
    out = _complete(cohort_server, n_predict=3, n_probs=4, ignore_eos=True, return_tokens=True)
    probs = out["completion_probabilities"]
    assert len(probs) == 3
    for p, tok in zip(probs, out["tokens"]):
        assert p["id"] == tok and p["logprob"] <= 0 and isinstance(p["bytes"], list)
        assert len(p["top_logprobs"]) == 4
        assert {"id", "token", "bytes", "logprob"} <= p["top_logprobs"][0].keys()
        assert p["top_logprobs"][0]["id"] == tok  # greedy: the chosen token is the likeliest


def _sse(r):
    chunks = []
    for line in r.iter_lines(decode_unicode=True):
        if line:
            assert line.startswith("data: ") and line != "data: [DONE]"
            chunks.append(json.loads(line[len("data: "):]))
    return chunks


def test_native_completion_streamed(cohort_server):
    whole = _complete(cohort_server, n_predict=6, ignore_eos=True)
    with requests.post(cohort_server + "/completion", json={"prompt": "Once upon a time", "temperature": 0,
                                                            "n_predict": 6, "ignore_eos": True, "stream": True,
                                                            "n_probs": 2, "return_tokens": True},
                       stream=True, timeout=TIMEOUT) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        chunks = _sse(r)
    *parts, last = chunks
    assert parts and all(c["stop"] is False for c in parts)
    assert "".join(c["content"] for c in parts) == whole["content"]
    assert sum(len(c["tokens"]) for c in parts) == 6
    assert all(len(c["completion_probabilities"]) == len(c["tokens"]) for c in parts)
    assert last["stop"] is True and last["stop_type"] == "limit" and last["tokens_predicted"] == 6
    assert TIMING_KEYS <= last["timings"].keys() and "generation_settings" in last
    assert last["content"] == ""
    # a chunk carries its token ids with or without return_tokens, as llama-server's; the end holds none
    with requests.post(cohort_server + "/completion", json={"prompt": "Once upon a time", "temperature": 0,
                                                            "n_predict": 6, "ignore_eos": True, "stream": True},
                       stream=True, timeout=TIMEOUT) as r:
        *plain, end = _sse(r)
    assert [t for c in plain for t in c["tokens"]] == [t for c in parts for t in c["tokens"]]
    assert end["tokens"] == []


def test_v1_completions_stays_openai(cohort_server):
    r = requests.post(cohort_server + "/v1/completions", json={"prompt": "Hi", "max_tokens": 2}, timeout=TIMEOUT)
    assert r.status_code == 200 and r.json()["object"] == "text_completion"


@pytest.mark.parametrize("body, param", [({}, "prompt"), ({"prompt": [1, {}]}, "prompt"),
                                         ({"prompt": "x", "n_probs": 99}, "n_probs"),
                                         ({"prompt": "x", "n_predict": 0}, "n_predict")])
def test_native_completion_bad_fields(cohort_server, body, param):
    r = requests.post(cohort_server + "/completion", json=body, timeout=TIMEOUT)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param


def test_native_prompt_over_the_context(cohort_server):
    n_ctx = requests.get(cohort_server + "/props", timeout=TIMEOUT).json()["default_generation_settings"]["n_ctx"]
    r = requests.post(cohort_server + "/completion", json={"prompt": [1] * (n_ctx + 5)}, timeout=TIMEOUT)
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["type"] == "exceed_context_size_error"
    assert err["n_prompt_tokens"] == n_ctx + 5 and err["n_ctx"] == n_ctx


def test_chat_without_v1_answers_the_context_error_as_llama_server(cohort_server):
    n_ctx = requests.get(cohort_server + "/props", timeout=TIMEOUT).json()["default_generation_settings"]["n_ctx"]
    messages = [{"role": "user", "content": "What is the best book " * 40}] * max(1, n_ctx // 100)
    for stream in (False, True):
        r = requests.post(cohort_server + "/chat/completions", json={"messages": messages, "stream": stream},
                          timeout=TIMEOUT)
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert err["type"] == "exceed_context_size_error"
        assert err["n_prompt_tokens"] > n_ctx and err["n_ctx"] == n_ctx
    # /v1 keeps OpenAI's form.
    r = requests.post(cohort_server + "/v1/chat/completions", json={"messages": messages}, timeout=TIMEOUT)
    assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded"


def test_chat_input_tokens_counts_the_prompt_the_chat_route_would_send(cohort_server):
    body = {"messages": [{"role": "system", "content": "Book"}, {"role": "user", "content": "What is the best book"}],
            "max_tokens": 1}
    r = requests.post(cohort_server + "/v1/chat/completions", json=body, timeout=TIMEOUT)
    want = r.json()["usage"]["prompt_tokens"]
    for path in ("/chat/completions/input_tokens", "/v1/chat/completions/input_tokens"):
        r = requests.post(cohort_server + path, json=body, timeout=TIMEOUT)
        assert r.status_code == 200 and r.json() == {"input_tokens": want}
    r = requests.post(cohort_server + "/chat/completions/input_tokens", json={"messages": 3}, timeout=TIMEOUT)
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages"


def test_verbose_answers_carry_the_prompt_as_llama_server_does(cohort_server):
    body = {"messages": [{"role": "system", "content": "Book"}, {"role": "user", "content": "What is the best book"}],
            "max_tokens": 2}
    for path in ("/chat/completions", "/v1/chat/completions"):
        plain = requests.post(cohort_server + path, json=body, timeout=TIMEOUT).json()
        assert "__verbose" not in plain
        out = requests.post(cohort_server + path, json={**body, "verbose": True}, timeout=TIMEOUT).json()
        v = out["__verbose"]
        assert "Book" in v["prompt"] and "What is the best book" in v["prompt"]
        assert v["content"] == out["choices"][0]["message"]["content"]
        assert v["tokens_evaluated"] == out["usage"]["prompt_tokens"]
        assert v["tokens_predicted"] == out["usage"]["completion_tokens"] == 2 and v["stop_type"] == "limit"


def test_verbose_flag_makes_every_answer_verbose_and_prefills_continue(cohort_bin, default_model, tmp_path):
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
                        "{% if add_generation_prompt %}<assistant>{% endif %}")
    prefill = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Whill"}]
    with serving(cohort_bin, default_model, [*SERVE_ARGS, "--verbose", "--chat-template-file", template],
                 tmp_path) as url:
        out = requests.post(url + "/chat/completions", json={"messages": prefill, "max_tokens": 2},
                            timeout=TIMEOUT).json()
        assert out["__verbose"]["prompt"] == "<user>Hi<assistant>Whill"
        quiet = requests.post(url + "/chat/completions", json={"messages": prefill, "max_tokens": 2, "verbose": False},
                              timeout=TIMEOUT).json()
        assert "__verbose" not in quiet
        both = requests.post(url + "/chat/completions", timeout=TIMEOUT,
                             json={"messages": prefill, "add_generation_prompt": True, "continue_final_message": True})
        assert both.status_code == 400 and "continue_final_message" in both.json()["error"]["message"]
        r = _apply_template(url, HI)
        assert r.json()["prompt"] == "<user>Hi<assistant>"
        r = requests.post(url + "/apply-template", json={"messages": HI, "add_generation_prompt": False},
                          timeout=TIMEOUT)
        assert r.json()["prompt"] == "<user>Hi"


def test_build_is_named_as_llama_server_names_it(cohort_server):
    build = requests.get(cohort_server + "/props", timeout=TIMEOUT).json()["build_info"]
    assert re.fullmatch(r"b[0-9]+-([0-9a-f]{7}|unknown)", build), build
    r = requests.post(cohort_server + "/v1/chat/completions",
                      json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}, timeout=TIMEOUT)
    assert r.json()["system_fingerprint"] == build


def test_native_response_fields_and_post_sampling_probs(cohort_server):
    out = _complete(cohort_server, n_predict=3, response_fields=["content", "generation_settings/n_predict", "nope"])
    assert set(out) == {"content", "generation_settings/n_predict"}
    assert out["generation_settings/n_predict"] == 3
    probs = _complete(cohort_server, n_predict=2, n_probs=3, post_sampling_probs=True)["completion_probabilities"]
    for p in probs:
        assert 0 <= p["prob"] <= 1 and "logprob" not in p
        assert len(p["top_probs"]) == 3 and all(0 <= t["prob"] <= 1 for t in p["top_probs"])


def _progress(chunks):
    return [c["prompt_progress"] for c in chunks if "prompt_progress" in c]


def test_return_progress_reports_each_prompt_step(cohort_bin, default_model, tmp_path):
    prompt = "the quick brown fox jumps over the lazy dog " * 3
    with serving(cohort_bin, default_model, ["-c", "1024", "-np", "1", "-b", "16"], tmp_path) as url:
        total = _n_tokens(url, prompt)
        body = {"prompt": prompt, "n_predict": 2, "stream": True, "return_progress": True}
        with requests.post(url + "/completion", json=body, stream=True, timeout=TIMEOUT) as r:
            chunks = _sse(r)
        progress = _progress(chunks)
        # one report at admission, then one a step of 16 prompt tokens
        assert [p["processed"] for p in progress] == [0, *range(16, total, 16), total]
        assert all(p["total"] == total and p["cache"] == 0 for p in progress)
        first = next(c for c in chunks if "prompt_progress" in c)
        assert first["timings"]["prompt_n"] == 0 and first["timings"]["prompt_ms"] == 0
        n_reports = len(progress)
        assert all("prompt_progress" in c for c in chunks[:n_reports])  # before any text
        assert chunks[-1]["stop"] and "prompt_progress" not in chunks[-1]
        # the same prompt again: the cached part is reported from the start
        with requests.post(url + "/completion", json=body, stream=True, timeout=TIMEOUT) as r:
            again = _progress(_sse(r))
        assert again[0]["cache"] == again[0]["processed"] > 0 and again[-1]["processed"] == total
        # chat streams carry them on role chunks; without stream or the field, none
        chat = {"messages": HI, "max_tokens": 2, "stream": True, "return_progress": True}
        with requests.post(url + "/v1/chat/completions", json=chat, stream=True, timeout=TIMEOUT) as r:
            events = [json.loads(line[6:]) for line in r.iter_lines(decode_unicode=True)
                      if line and line != "data: [DONE]"]
        reports = [e for e in events if "prompt_progress" in e]
        assert reports and reports[-1]["prompt_progress"]["processed"] == reports[-1]["prompt_progress"]["total"]
        assert all(e["choices"][0]["delta"] == {"role": "assistant", "content": None} for e in reports)
        whole = requests.post(url + "/completion", json={**body, "stream": False}, timeout=TIMEOUT).json()
        assert "prompt_progress" not in whole
        with requests.post(url + "/completion", json={**body, "return_progress": False}, stream=True,
                           timeout=TIMEOUT) as r:
            assert _progress(_sse(r)) == []


def test_kv_unified_gives_each_slot_the_whole_context(cohort_bin, default_model, tmp_path):
    from concurrent.futures import ThreadPoolExecutor
    body = {"prompt": "A", "n_predict": 80, "ignore_eos": True}
    with serving(cohort_bin, default_model, ["-c", "256", "-np", "4", "--kv-unified"], tmp_path) as url:
        assert requests.get(url + "/props", timeout=TIMEOUT).json()["default_generation_settings"]["n_ctx"] == 256
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: requests.post(url + "/completion", json=body, timeout=TIMEOUT),
                                    range(4)))
    # 4 x 81 positions do not fit 256: who finds the cache full ends as llama-server's requests do
    for r in answers:
        if r.status_code == 200:
            assert r.json()["tokens_predicted"] == 80, r.text
        else:
            assert r.status_code == 500 and "context size has been exceeded" in r.json()["error"]["message"], r.text
    assert any(r.status_code == 200 for r in answers)
    with serving(cohort_bin, default_model, ["-c", "256", "-np", "4"], tmp_path) as url:
        r = requests.post(url + "/completion", json=body, timeout=TIMEOUT).json()
        assert r["tokens_predicted"] < 80 and r["stop_type"] == "limit"  # a slot's 64 positions
