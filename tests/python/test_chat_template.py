"""Chat templates: `cohort chat-template` against Python's jinja2.

The reference renders each template string the way transformers'
apply_chat_template does: jinja2.sandbox.ImmutableSandboxedEnvironment with
trim_blocks=True, lstrip_blocks=True and the loop-controls extension, a
`raise_exception` that raises, `strftime_now`, and `tojson` as json.dumps with
ensure_ascii=False. Outputs must be byte-identical; where the template
rejects a conversation (raise_exception), cohort must fail with the
template's message.

Templates are in data/chat_templates/*.jinja as published with the models
(SmolLM2's comes from the default model's GGUF); conversations are in
data/chat_conversations.json.
"""
import copy
import datetime
import json
import pathlib
import subprocess

import jinja2
import jinja2.ext
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

DATA = pathlib.Path(__file__).resolve().parent / "data"
TEMPLATES = DATA / "chat_templates"
CONVERSATIONS = json.loads((DATA / "chat_conversations.json").read_text(encoding="utf-8"))

# Special tokens of each family, as their tokenizers define them.
FAMILIES = {
    "chatml": ("<s>", "<|im_end|>"),
    "qwen2": ("", "<|im_end|>"),
    "qwen2_5": ("", "<|im_end|>"),
    "qwen3": ("", "<|im_end|>"),
    "llama2": ("<s>", "</s>"),
    "llama3": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3_2": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3_3": ("<|begin_of_text|>", "<|eot_id|>"),
    "mistral_v0_1": ("<s>", "</s>"),
    "mistral_v0_2": ("<s>", "</s>"),
    "mistral_nemo": ("<s>", "</s>"),
    "gemma2": ("<bos>", "<eos>"),
    "gemma3": ("<bos>", "<eos>"),
    "phi3": ("<s>", "<|endoftext|>"),
    "phi3_small": ("<|endoftext|>", "<|endoftext|>"),
}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city — «now».",
        "parameters": {"type": "object", "required": ["city"], "properties": {
            "city": {"type": "string", "description": "City name"},
            "days": {"type": "integer", "minimum": 1, "default": 1.5}}},
        "return": {"type": "string"}}},
    {"type": "function", "function": {"name": "noop", "description": "", "parameters": {}}},
]
TOOL_CONVERSATION = [
    {"role": "system", "content": "You can call tools."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call12345", "type": "function", "function": {
        "name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
    {"role": "tool", "content": "{\"temp\": 18}", "tool_call_id": "call12345"},
    {"role": "assistant", "content": "It is 18°C."},
    {"role": "user", "content": "Thanks"},
]
# Extra variables for the tool-capable templates.
TOOL_CASES = {
    "tools": {"tools": TOOLS},
    "tools_in_system": {"tools": TOOLS, "tools_in_user_message": False},
    "no_thinking": {"enable_thinking": False},
    "tools_no_thinking": {"tools": TOOLS, "enable_thinking": False},
}
TOOL_FAMILIES = ["qwen2_5", "qwen3", "llama3_2", "llama3_3", "mistral_nemo", "chatml"]


class TemplateRaised(Exception):
    """What the reference raise_exception raises."""


def _raise_exception(message):
    raise TemplateRaised(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt):
    return datetime.datetime.now().strftime(fmt)


def reference_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


ENV = reference_env()


def reference(source, messages, add_generation_prompt, variables):
    """(output, None) or (None, raised message)."""
    context = copy.deepcopy(variables)
    context["messages"] = copy.deepcopy(messages)
    context["add_generation_prompt"] = add_generation_prompt
    try:
        return ENV.from_string(source).render(**context), None
    except TemplateRaised as e:
        return None, str(e)


def cohort_render(cohort_bin, tmp_path, messages, add_generation_prompt, variables, *source_args, check=False):
    """Runs `cohort chat-template` with the messages and variables in one request file; returns the
    CompletedProcess with stdout and stderr as bytes (the prompt is compared byte for byte)."""
    request = dict(variables)
    request["messages"] = messages
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request, ensure_ascii=False), encoding="utf-8")
    args = [*source_args, "--messages", path]
    if add_generation_prompt:
        args.append("--add-generation-prompt")
    res = subprocess.run([str(cohort_bin), "chat-template", *map(str, args)], capture_output=True, timeout=60)
    if check:
        assert res.returncode == 0, res.stderr.decode("utf-8", "replace")
    return res


def assert_same_as_jinja(cohort_bin, tmp_path, family, messages, add_generation_prompt, variables):
    source = (TEMPLATES / f"{family}.jinja").read_text(encoding="utf-8")
    bos, eos = FAMILIES[family]
    variables = {"bos_token": bos, "eos_token": eos, "date_string": "26 Jul 2024", **variables}
    expected, raised = reference(source, messages, add_generation_prompt, variables)
    res = cohort_render(cohort_bin, tmp_path, messages, add_generation_prompt, variables,
                        "--template", TEMPLATES / f"{family}.jinja", "--strict")
    stderr = res.stderr.decode("utf-8", "replace")
    if raised is not None:
        assert res.returncode != 0, f"jinja2 raised {raised!r} but cohort rendered"
        assert raised in stderr
        return
    assert res.returncode == 0, stderr
    got = res.stdout.decode("utf-8")
    assert got == expected, f"\n--- jinja2:\n{expected!r}\n--- cohort:\n{got!r}"


def test_every_family_has_a_template_file():
    assert sorted(p.stem for p in TEMPLATES.glob("*.jinja")) == sorted(FAMILIES)


@pytest.mark.parametrize("add_generation_prompt", [False, True], ids=["no_gen", "gen"])
@pytest.mark.parametrize("conversation", sorted(CONVERSATIONS))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_renders_like_jinja(cohort_bin, tmp_path, family, conversation, add_generation_prompt):
    assert_same_as_jinja(cohort_bin, tmp_path, family, CONVERSATIONS[conversation], add_generation_prompt, {})


@pytest.mark.parametrize("add_generation_prompt", [False, True], ids=["no_gen", "gen"])
@pytest.mark.parametrize("case", sorted(TOOL_CASES))
@pytest.mark.parametrize("family", TOOL_FAMILIES)
def test_tool_conversations_render_like_jinja(cohort_bin, tmp_path, family, case, add_generation_prompt):
    assert_same_as_jinja(cohort_bin, tmp_path, family, TOOL_CONVERSATION, add_generation_prompt,
                         TOOL_CASES[case])


def test_content_parts_render_like_jinja(cohort_bin, tmp_path):
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "Be terse."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "  What is this?  "}]},
    ]
    assert_same_as_jinja(cohort_bin, tmp_path, "gemma3", messages, True, {})


def _gguf_string(reader, key):
    field = reader.fields[key]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def _gguf_token(reader, id_key):
    field = reader.fields.get(id_key)
    if field is None:
        return ""
    token_id = int(field.parts[field.data[0]][0])
    tokens = reader.fields["tokenizer.ggml.tokens"]
    return bytes(tokens.parts[tokens.data[token_id]]).decode("utf-8")


@pytest.mark.parametrize("conversation", ["system_user", "user_only", "multi_turn", "unicode", "jinja_lookalike"])
@pytest.mark.parametrize("add_generation_prompt", [False, True], ids=["no_gen", "gen"])
def test_default_model_template_renders_like_jinja(cohort_bin, default_model, tmp_path, conversation,
                                                   add_generation_prompt):
    from gguf import GGUFReader
    reader = GGUFReader(str(default_model))
    source = _gguf_string(reader, "tokenizer.chat_template")
    variables = {"bos_token": _gguf_token(reader, "tokenizer.ggml.bos_token_id"),
                 "eos_token": _gguf_token(reader, "tokenizer.ggml.eos_token_id")}
    messages = CONVERSATIONS[conversation]
    expected, raised = reference(source, messages, add_generation_prompt, variables)
    assert raised is None
    res = cohort_render(cohort_bin, tmp_path, messages, add_generation_prompt, {}, "-m", default_model,
                        "--strict", check=True)
    assert res.stdout.decode("utf-8") == expected


UNSUPPORTED = "{% for message in messages %}{% include 'turn.jinja' %}{% endfor %}"
CHATML_USER_ONLY = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"


def test_unsupported_syntax_is_a_clear_error(cohort_bin, tmp_path):
    path = tmp_path / "unsupported.jinja"
    path.write_text(UNSUPPORTED)
    res = cohort_render(cohort_bin, tmp_path, CONVERSATIONS["user_only"], True, {}, "--template", path, "--strict")
    stderr = res.stderr.decode()
    assert res.returncode != 0
    assert "unsupported tag 'include'" in stderr
    assert "line 1, column 33" in stderr


def test_unsupported_template_falls_back_to_chatml_with_a_warning(cohort_bin, tmp_path):
    path = tmp_path / "unsupported.jinja"
    path.write_text(UNSUPPORTED)
    res = cohort_render(cohort_bin, tmp_path, CONVERSATIONS["user_only"], True, {}, "--template", path, check=True)
    assert res.stdout.decode() == CHATML_USER_ONLY
    stderr = res.stderr.decode()
    assert "warning:" in stderr and "ChatML" in stderr and "include" in stderr


def _write_gguf(path, chat_template=None):
    import gguf
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(["<s>", "</s>", "a"])
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(1)
    if chat_template is not None:
        writer.add_chat_template(chat_template)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_model_without_template_falls_back_to_chatml(cohort_bin, tmp_path):
    model = tmp_path / "no_template.gguf"
    _write_gguf(model)
    res = cohort_render(cohort_bin, tmp_path, CONVERSATIONS["user_only"], True, {}, "-m", model, check=True)
    assert res.stdout.decode() == CHATML_USER_ONLY
    assert "no chat template" in res.stderr.decode()


def test_model_special_tokens_reach_the_template(cohort_bin, tmp_path):
    model = tmp_path / "with_template.gguf"
    _write_gguf(model, "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}")
    res = cohort_render(cohort_bin, tmp_path, CONVERSATIONS["user_only"], False, {}, "-m", model, check=True)
    assert res.stdout.decode() == "<s>What is the capital of France?</s>"


def test_template_rejection_is_reported(cohort_bin, tmp_path):
    res = cohort_render(cohort_bin, tmp_path, CONVERSATIONS["system_user"], True, {},
                        "--template", TEMPLATES / "gemma2.jinja")
    assert res.returncode != 0
    assert "System role not supported" in res.stderr.decode()
