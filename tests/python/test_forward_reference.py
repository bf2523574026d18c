"""The CPU forward pass against llama.cpp and against an independent F64
reference: teacher-forced logits over >= 512 positions for the default model
and for random-weight models of each family and block type; batched equals
unbatched.

llama.cpp's CPU dot products round the activations to the weight's partner
type (Q8_0, Q8_K, BF16, F16) first; so does cohort's default (fast) path,
which is compared with llama.cpp directly. cohort's reference path (--exact)
keeps them F32: the F64 forward (tests/python/f64_forward.py) decides which
side is closer to exact, and every top-1 disagreement between that path and
llama.cpp must be a position where llama.cpp itself departs from the F64 top-1."""
import numpy as np
import pytest

from conftest import run_cohort
import f64_forward
from reference import (check_disagreements, cohort_logits, compare, fast_path_reproduces_llama_cpp,
                       llama_cpp_logits)

N_POSITIONS = 520
# A top-1 disagreement with llama.cpp is a near-tie where llama.cpp's own two
# candidates lie closer than a quarter of the median gap between its two best
# logits over the tested positions (random-weight tiny models: about 0.2, so
# 0.05; the default model: about 1.6, so 0.4), or one where the F64 reference
# picks cohort's token. test_disagreement_check_refuses_a_clear_miss shows the
# check can fail.
NEAR_TIE_FRACTION = 0.25


def near_tie(llama):
    top2 = np.sort(llama, axis=-1)[:, -2:]
    return NEAR_TIE_FRACTION * float(np.median(top2[:, 1] - top2[:, 0]))


TEXT = (
    "The quick brown fox jumps over the lazy dog. In 1969, Apollo 11 landed on the Moon; "
    "Neil Armstrong said: \"That's one small step for man.\" def fib(n):\n    return n if n < 2 "
    "else fib(n - 1) + fib(n - 2)\n Prices rose 3.5% to $1,024.99 on 2024-02-29. Ça va? "
    "Привет, мир! 你好，世界。 Γειά σου κόσμε. The mitochondria is the powerhouse of the cell. "
)


def default_model_ids(path, n):
    from llama_cpp import Llama
    vocab = Llama(model_path=str(path), vocab_only=True, verbose=False)
    ids = vocab.tokenize((TEXT * 20).encode(), add_bos=False, special=False)
    assert len(ids) >= n
    return ids[:n]


def random_ids(n_vocab, n, seed=0):
    return np.random.default_rng(seed).integers(3, n_vocab, size=n).tolist()


def check_fast_path(name, llama, fast, exact, full_precision):
    """The fast path rounds activations and sums dot products as llama.cpp's
    CPU kernels for AVX-512 do. Against any llama.cpp build: the KLD bounds,
    and every top-1 disagreement at a near-tie of llama.cpp's logits or where
    the F64 reference sides with cohort. Against a llama.cpp built for
    AVX-512 (reference.fast_path_reproduces_llama_cpp), also KLD 0."""
    m = compare(llama, fast)
    reproduces, why = fast_path_reproduces_llama_cpp()
    eps = near_tie(llama)
    ties = check_disagreements(llama, fast, exact, eps)
    print(f"\n{name}: cohort (fast path) vs llama.cpp {m} {ties} near-tie < {eps:.3g}\n  {why}")
    assert m["kld"] <= (1e-4 if full_precision else 5e-3), m
    if reproduces:
        assert m["kld"] == 0.0, (why, m)


def check_three_way(name, exact, llama, ours, full_precision):
    ours_exact, llama_exact, ours_llama = (compare(exact, ours), compare(exact, llama),
                                           compare(llama, ours))
    print(f"\n{name}: cohort vs F64 {ours_exact}\n{name}: llama.cpp vs F64 {llama_exact}"
          f"\n{name}: cohort vs llama.cpp {ours_llama}")
    # cohort's F32 path is (near) exact
    assert ours_exact["top1"] >= 0.995 and ours_exact["kld"] <= 1e-6, ours_exact
    assert ours_exact["kld"] <= llama_exact["kld"], (ours_exact, llama_exact)
    # and within the bounds of llama.cpp
    assert ours_llama["kld"] <= (1e-4 if full_precision else 5e-3), ours_llama
    assert_disagreements_explained(llama, ours, exact)


def assert_disagreements_explained(llama, ours, exact):
    """Every top-1 disagreement with llama.cpp is one where llama.cpp departs
    from exact, or a near-tie of llama.cpp's logits."""
    top_l = llama.argmax(-1)
    llama_departs = exact.argmax(-1) != top_l
    ours_vs_llama = ours.argmax(-1) != top_l
    gap = llama.max(-1) - llama[np.arange(len(llama)), ours.argmax(-1)]
    bad = ours_vs_llama & ~llama_departs & (gap >= near_tie(llama))
    assert not bad.any(), [(int(i), float(gap[i])) for i in np.nonzero(bad)[0]]


def test_default_model_logits_match_llama_cpp(tmp_path, cohort_bin, default_model):
    ids = default_model_ids(default_model, N_POSITIONS)
    llama = llama_cpp_logits(default_model, ids)
    fast = cohort_logits(cohort_bin, default_model, [ids], tmp_path, llama.shape[1])
    exact = f64_forward.forward(default_model, ids)
    check_fast_path("default model Q4_1", llama, fast, exact, full_precision=False)
    ours = cohort_logits(cohort_bin, default_model, [ids], tmp_path, llama.shape[1], ["--exact"])
    check_three_way("default model Q4_1", exact, llama, ours, full_precision=False)


FULL_PRECISION = {"f16", "bf16", "f32"}


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
@pytest.mark.parametrize("qtype", ["f16", "bf16", "q8_0", "q4_k", "q6_k", "q4_0", "q4_1", "q5_k"])
def test_mkmodel_logits_match_llama_cpp(tmp_path, cohort_bin, arch, qtype):
    path = tmp_path / f"{arch}-{qtype}.gguf"
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--arch", arch, "--type", qtype,
               "-o", path)
    ids = random_ids(512, N_POSITIONS, seed=len(arch) * 31 + len(qtype))
    llama = llama_cpp_logits(path, ids)
    fast = cohort_logits(cohort_bin, path, [ids], tmp_path, llama.shape[1])
    exact = f64_forward.forward(path, ids)
    check_fast_path(f"{arch} {qtype}", llama, fast, exact, qtype in FULL_PRECISION)
    ours = cohort_logits(cohort_bin, path, [ids], tmp_path, llama.shape[1], ["--exact"])
    check_three_way(f"{arch} {qtype}", exact, llama, ours, qtype in FULL_PRECISION)


# llama.cpp stores a quantized V only under flash attention.
LLAMA_CPP_CACHE = {"f16": {}, "q8_0": {"flash_attn": True}}


@pytest.mark.parametrize("cache", ["f16", "q8_0"])
@pytest.mark.parametrize("model", ["default", "qwen3-bf16", "llama-q4_k"])
def test_kv_cache_types_against_llama_cpp(tmp_path, cohort_bin, default_model, model, cache):
    """-ctk/-ctv f16 (the default) against llama.cpp's default F16 cache, q8_0
    against its q8_0 cache: the KLD bounds of the F32-cache tests (a q8_0
    cache counts as a quantized type), and every top-1 disagreement a
    near-tie of llama.cpp's logits or one where llama.cpp departs from F64
    with K and V rounded as the cache stores them (llama.cpp also rounds the
    queries and the attention weights to the cache's type; cohort computes
    on the stored values in F32). The random Q4_K model runs cohort's
    reference path (--exact): its fast path differs from F64 by the 8-bit
    activations, as llama.cpp's does, and on a random model that moves
    top-1 picks by more than the near-tie bound, which only the bit-for-bit
    F32-cache tests can settle."""
    if model == "default":
        path, ids = default_model, default_model_ids(default_model, N_POSITIONS)
    else:
        arch, qtype = model.split("-")
        path = tmp_path / f"{model}.gguf"
        run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--arch", arch, "--type", qtype, "-o", path)
        ids = random_ids(512, N_POSITIONS, seed=7)
    llama = llama_cpp_logits(path, ids, cache=cache, **LLAMA_CPP_CACHE[cache])
    extra = ["--exact"] if model == "llama-q4_k" else []
    ours = cohort_logits(cohort_bin, path, [ids], tmp_path, llama.shape[1], extra, cache=cache)
    m = compare(llama, ours)
    eps = near_tie(llama)
    exact = f64_forward.forward(path, ids, cache=cache)
    print(f"\n{model} -ctk/-ctv {cache}: cohort vs llama.cpp {m}, near-tie < {eps:.3g}"
          f"\n  cohort vs F64 with the cache's rounding {compare(exact, ours)}"
          f"\n  llama.cpp vs F64 with the cache's rounding {compare(exact, llama)}")
    assert_disagreements_explained(llama, ours, exact)
    assert m["kld"] <= (1e-4 if model == "qwen3-bf16" and cache == "f16" else 5e-3), m
    if extra:  # the reference path stores what F64 rounds, and computes on it in F32
        ours_exact = compare(exact, ours)
        assert ours_exact["kld"] <= 1e-6 and ours_exact["top1"] >= 0.995, ours_exact


def test_batched_equals_unbatched(tmp_path, cohort_bin):
    path = tmp_path / "tiny.gguf"
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--arch", "qwen3", "--type", "q4_k",
               "-o", path)
    seqs = [random_ids(512, n, seed=n) for n in (37, 80, 5, 64)]
    for path_flag in ([], ["--exact"]):
        alone = cohort_logits(cohort_bin, path, seqs, tmp_path, 512, path_flag)
        for extra in (["--together"], ["--together", "-ub", "7"], ["-ub", "16", "-b", "16"],
                      ["--together", "-b", "33", "-ub", "5", "-t", "1"]):
            other = cohort_logits(cohort_bin, path, seqs, tmp_path, 512, path_flag + extra)
            np.testing.assert_allclose(other, alone, rtol=1e-5, atol=1e-5,
                                       err_msg=str(path_flag + extra))


def test_context_overflow_and_unsupported_arch_are_clear_errors(tmp_path, cohort_bin):
    path = tmp_path / "tiny.gguf"
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--type", "f16", "-o", path)
    ids = tmp_path / "ids.json"
    ids.write_text("[" + ",".join(["[" + ",".join(["5"] * 100) + "]"]) + "]")
    res = run_cohort(cohort_bin, "logits", "-m", path, "--ids", ids, "-o", tmp_path / "o",
                     "-c", "64", check=False)
    assert res.returncode == 1 and res.stderr.splitlines()[-1].startswith("error: "), res.stderr
    assert "context" in res.stderr or "KV" in res.stderr, res.stderr
    ids.write_text("[[1, 2, 99999]]")
    res = run_cohort(cohort_bin, "logits", "-m", path, "--ids", ids, "-o", tmp_path / "o",
                     check=False)
    assert res.returncode == 1 and "99999" in res.stderr, res.stderr
    # an architecture outside the supported families
    from gguf import GGUFWriter
    other = tmp_path / "gpt2.gguf"
    w = GGUFWriter(str(other), "gpt2")
    w.add_tensor("token_embd.weight", np.zeros((8, 32), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    res = run_cohort(cohort_bin, "logits", "-m", other, "--ids", ids, "-o", tmp_path / "o",
                     check=False)
    assert res.returncode == 1 and "unsupported architecture 'gpt2'" in res.stderr, res.stderr


def test_disagreement_check_refuses_a_clear_miss():
    rng = np.random.default_rng(3)
    llama = rng.normal(size=(6, 10)).astype(np.float32)
    llama[:, 0] += 5  # llama.cpp's top-1 is token 0, far ahead
    ours = llama.copy()
    exact = llama.copy()
    ours[2, 1] += 10  # ours picks token 1 at position 2; F64 agrees with llama.cpp
    eps = near_tie(llama)
    assert 0 < eps < 2
    with pytest.raises(AssertionError, match="neither near-tie"):
        check_disagreements(llama, ours, exact, eps)
    exact[2, 1] += 10  # now F64 sides with ours
    assert check_disagreements(llama, ours, exact, eps)["f64_sides_with_ours"] == 1
    exact[2, 1] -= 10
    llama[2, 1] = llama[2, 0] - eps / 2  # a near-tie of llama.cpp's logits
    assert check_disagreements(llama, ours, exact, eps)["near_tie"] == 1
