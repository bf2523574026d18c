"""Embeddings on `cohort serve --embeddings`: /v1/embeddings (OpenAI's form,
also through the official `openai` client, float and base64), /embedding and
/embeddings (llama-server's native form), the vectors against
llama-cpp-python's with the same pooling (mean by default, none, cls, last),
llama-server's 501 without --embeddings and its 400 for pooling none on
/v1/embeddings, and 400s naming the field of a bad request.

Tolerance: cohort's CPU forward rounds activations to 8 bits as llama.cpp
does, with an F32 KV cache on both sides here; against a llama.cpp built
for AVX-512 its logits are the same bits, against other builds (AVX2 alone)
the dot products sum in other orders. On an AVX2 build the hidden states of
single tokens measured a cosine similarity of 0.99913 at worst, and
mean-pooled vectors 0.99993 to 0.99995 (a mean averages the rounding out). So one token's vector (pooling none, cls, last)
must reach MIN_COSINE_ROW = 0.995, far above the 0.89 of the most similar
neighbouring rows; a mean, MIN_COSINE_MEAN = 0.999. A mean missing one
token of a long input would still reach 0.9995, so the rows of pooling none
are each checked, and usage counts the tokens."""
import base64
import json
import threading

import numpy as np
import pytest
import requests
from openai import OpenAI

from conftest import SERVE_ARGS, serving
from reference import GGML_TYPE, cache_flags

TIMEOUT = (5, 300)
MIN_COSINE_MEAN = 0.999
MIN_COSINE_ROW = 0.995
TEXTS = ["Hello world", "The quick brown fox jumps over the lazy dog. " * 4, "cohort embeds this sentence."]
POOLING_TYPES = {"none": 0, "mean": 1, "cls": 2, "last": 3}  # llama.cpp's enum llama_pooling_type
ARGS = [*SERVE_ARGS, *cache_flags("f32"), "--embeddings"]


def post(url, path, body):
    return requests.post(url + path, data=body if isinstance(body, str) else json.dumps(body), timeout=TIMEOUT)


def cosine(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def llama(default_model):
    """llama-cpp-python embedding contexts by pooling name, made once each."""
    from llama_cpp import Llama
    made = {}

    def get(pooling):
        if pooling not in made:
            made[pooling] = Llama(model_path=str(default_model), embedding=True, pooling_type=POOLING_TYPES[pooling],
                                  n_ctx=512, n_batch=512, n_ubatch=512, n_threads=2, verbose=False,
                                  type_k=GGML_TYPE["f32"], type_v=GGML_TYPE["f32"])
        return made[pooling]
    yield get
    for llm in made.values():
        llm.close()


@pytest.fixture(scope="module")
def embedding_server(cohort_bin, default_model, tmp_path_factory):
    with serving(cohort_bin, default_model, ARGS, tmp_path_factory.mktemp("embd")) as url:
        yield url


def test_openai_vectors_match_llama_cpp_mean_pooling(embedding_server, llama):
    r = post(embedding_server, "/v1/embeddings", {"input": TEXTS, "model": "m"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"] == "list"
    assert [d["index"] for d in body["data"]] == [0, 1, 2]
    assert all(d["object"] == "embedding" for d in body["data"])
    llm = llama("mean")
    n_tokens = sum(len(llm.tokenize(t.encode())) for t in TEXTS)
    assert body["usage"] == {"prompt_tokens": n_tokens, "total_tokens": n_tokens}
    for text, d in zip(TEXTS, body["data"]):
        ours = np.array(d["embedding"])
        assert ours.shape == (llm.n_embd(),)
        assert np.linalg.norm(ours) == pytest.approx(1.0, abs=1e-5), "L2-normalised by default"
        assert cosine(ours, llm.embed(text)) >= MIN_COSINE_MEAN


def test_native_routes_and_embd_normalize(embedding_server, llama):
    raw = post(embedding_server, "/embedding", {"content": TEXTS[1], "embd_normalize": -1})
    assert raw.status_code == 200, raw.text
    assert [e["index"] for e in raw.json()] == [0]
    (vector,) = raw.json()[0]["embedding"]  # pooled: one vector in the list
    ref = np.array(llama("mean").embed(TEXTS[1]))
    assert cosine(vector, ref) >= MIN_COSINE_MEAN
    assert np.linalg.norm(vector) == pytest.approx(np.linalg.norm(ref), rel=1e-2), "-1: not normalised"
    both = post(embedding_server, "/embeddings", {"input": TEXTS[:2]})
    assert both.status_code == 200, both.text
    assert [e["index"] for e in both.json()] == [0, 1]
    normalised = np.array(both.json()[1]["embedding"][0])
    assert np.allclose(normalised, np.array(vector) / np.linalg.norm(vector), atol=1e-6)
    # "content" on /v1/embeddings answers in the native form, as llama-server.
    assert isinstance(post(embedding_server, "/v1/embeddings", {"content": "Hi"}).json(), list)


def test_token_ids_are_the_text_they_encode(embedding_server, llama):
    ids = llama("mean").tokenize(TEXTS[2].encode())
    by_ids = post(embedding_server, "/v1/embeddings", {"input": [ids, TEXTS[2]]}).json()["data"]
    assert np.allclose(by_ids[0]["embedding"], by_ids[1]["embedding"], atol=1e-6)
    one = post(embedding_server, "/v1/embeddings", {"input": ids}).json()["data"]
    assert len(one) == 1 and np.allclose(one[0]["embedding"], by_ids[0]["embedding"], atol=1e-6)


def test_llama_servers_input_forms_embed_the_same_text(embedding_server):
    parts = {"content": [{"type": "text", "text": "hello "}, {"type": "text", "text": "world"}]}
    ids = post(embedding_server, "/tokenize", {"content": "hello world", "add_special": True}).json()["tokens"]
    forms = ["hello world", parts, {"prompt_string": "hello world"}, ids, ["hello", *ids[-1:]]]
    data = post(embedding_server, "/v1/embeddings", {"input": forms}).json()["data"]
    assert len(data) == len(forms)
    for d in data[1:4]:
        assert np.allclose(d["embedding"], data[0]["embedding"], atol=1e-6)
    mixed = post(embedding_server, "/v1/embeddings", {"input": ["hello", *ids[-1:]]}).json()["data"]
    assert len(mixed) == 1  # a number at the top: one input of text and ids
    assert np.allclose(mixed[0]["embedding"], data[4]["embedding"], atol=1e-6)


def test_openai_client_float_and_base64(embedding_server):
    client = OpenAI(base_url=embedding_server + "/v1", api_key="none", timeout=300, max_retries=0)
    floats = client.embeddings.create(model="m", input=TEXTS[:2], encoding_format="float")
    assert [d.index for d in floats.data] == [0, 1]
    assert floats.usage.prompt_tokens > 0 and floats.usage.total_tokens == floats.usage.prompt_tokens
    default = client.embeddings.create(model="m", input=TEXTS[:2])  # the client asks for base64 itself
    for a, b in zip(floats.data, default.data):
        assert np.allclose(a.embedding, b.embedding, atol=1e-7)
    raw = post(embedding_server, "/v1/embeddings", {"input": TEXTS[0], "encoding_format": "base64"}).json()
    decoded = np.frombuffer(base64.b64decode(raw["data"][0]["embedding"]), dtype="<f4")
    assert np.allclose(decoded, floats.data[0].embedding, atol=1e-7)


@pytest.mark.parametrize("pooling", ["cls", "last"])
def test_cls_and_last_pooling_match_llama_cpp(cohort_bin, default_model, tmp_path, llama, pooling):
    with serving(cohort_bin, default_model, [*ARGS, "--pooling", pooling], tmp_path) as url:
        data = post(url, "/v1/embeddings", {"input": TEXTS}).json()["data"]
    for text, d in zip(TEXTS, data):
        assert cosine(d["embedding"], llama(pooling).embed(text)) >= MIN_COSINE_ROW


def test_pooling_none_gives_a_vector_per_token(cohort_bin, default_model, tmp_path, llama):
    with serving(cohort_bin, default_model, [*ARGS, "--pooling", "none"], tmp_path) as url:
        native = post(url, "/embedding", {"content": TEXTS[1]})
        oai = post(url, "/v1/embeddings", {"input": TEXTS[1]})
    assert native.status_code == 200, native.text
    rows = native.json()[0]["embedding"]
    ref = llama("none").embed(TEXTS[1])  # one unnormalised vector per token
    assert len(rows) == len(ref) == len(llama("none").tokenize(TEXTS[1].encode()))
    for ours, theirs in zip(rows, ref):
        assert cosine(ours, theirs) >= MIN_COSINE_ROW
        assert np.linalg.norm(ours) == pytest.approx(np.linalg.norm(theirs), rel=1e-2)
    assert oai.status_code == 400
    assert "Pooling type 'none' is not OAI compatible" in oai.json()["error"]["message"]


def test_without_the_flag_every_route_is_llama_servers_501(cohort_server):
    for path in ("/v1/embeddings", "/embedding", "/embeddings"):
        r = post(cohort_server, path, {"input": "Hi"})
        assert r.status_code == 501, path
        err = r.json()["error"]
        assert err["type"] == "not_supported_error"
        assert err["message"] == "This server does not support embeddings. Start it with `--embeddings`"


BAD = [
    ("{", None),
    ({}, "input"),
    ({"input": ""}, "input"),
    ({"input": []}, "input"),
    ({"input": 5}, "input"),
    ({"input": ["Hi", 2.5]}, "input"),  # a number: one input of ids and text
    ({"input": ["Hi", {"content": [{"type": "image_url"}]}]}, "input[1].content[0]"),
    ({"input": ["Hi", ""]}, "input[1]"),
    ({"input": [1, -3]}, "input"),
    ({"input": [7] * 1025}, "input"),  # a slot holds 1024 positions (-c 2048 -np 2)
    ({"input": "Hi", "encoding_format": "int8"}, "encoding_format"),
    ({"input": "Hi", "embd_normalize": "2"}, "embd_normalize"),
    ({"content": 3}, "content"),
]


@pytest.mark.parametrize("body,param", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_requests_are_400s_naming_the_field(embedding_server, body, param):
    r = post(embedding_server, "/v1/embeddings", body)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error"
    if param is not None:
        assert err["param"] == param
        assert param.split("[")[0] in err["message"]


def test_a_full_slot_context_is_one_input(embedding_server):
    r = post(embedding_server, "/v1/embeddings", {"input": [7] * 1024})
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["prompt_tokens"] == 1024


def test_embeddings_run_beside_generation(embedding_server):
    """An embedding prefills with whatever cohort is forming and ends with its
    prompt; a generation at the same time is unaffected."""
    results = {}

    def complete():
        body = {"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0, "ignore_eos": True}
        results["completion"] = post(embedding_server, "/v1/completions", body)

    def embed():
        results["embedding"] = post(embedding_server, "/v1/embeddings", {"input": TEXTS})

    threads = [threading.Thread(target=f) for f in (complete, embed, embed)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["completion"].status_code == 200
    assert results["completion"].json()["usage"]["completion_tokens"] == 8
    assert results["embedding"].status_code == 200
    alone = post(embedding_server, "/v1/embeddings", {"input": TEXTS}).json()["data"]
    for a, b in zip(alone, results["embedding"].json()["data"]):
        assert cosine(a["embedding"], b["embedding"]) >= 0.99999
