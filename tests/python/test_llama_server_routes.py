"""`cohort serve` as a drop-in for llama-server: its command-line flags start
cohort (those that name what cohort always does are accepted and change
nothing), --no-slots turns /slots off as llama-server does, and
--chat-template / --chat-template-file replace the model's template."""
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
             "--no-context-shift", "--verbose", "--chat-template", "chatml"]
    with serving(cohort_bin, default_model, [*SERVE_ARGS, *flags], tmp_path) as url:
        assert requests.get(url + "/slots", timeout=TIMEOUT).status_code == 200
        assert requests.get(url + "/metrics", timeout=TIMEOUT).status_code == 200
        assert _chat_prompt_tokens(url) == _n_tokens(url, CHATML_HI)


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


def test_apply_template_with_chatml(cohort_bin, default_model, tmp_path):
    with serving(cohort_bin, default_model, [*SERVE_ARGS, "--chat-template", "chatml"], tmp_path) as url:
        r = _apply_template(url, CONVERSATION)
        assert r.status_code == 200, r.text
        assert r.json()["prompt"] == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                                      "<|im_start|>assistant\nHello!<|im_end|>\n"
                                      "<|im_start|>user\nTwo\nparts<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.parametrize("body, param", [({}, "messages"), ({"messages": []}, "messages"),
                                         ({"messages": "hi"}, "messages"),
                                         ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
                                         ({"messages": [{"role": "user"}]}, "messages[0].content"),
                                         ({"messages": HI, "chat_template_kwargs": 5}, "chat_template_kwargs")])
def test_apply_template_checks_messages_as_chat_does(cohort_server, body, param):
    r = requests.post(cohort_server + "/apply-template", json=body, timeout=TIMEOUT)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param
