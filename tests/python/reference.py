"""llama.cpp (through llama-cpp-python) as the reference for logits, and the
comparison metrics used by the forward-pass tests."""
import json

import numpy as np

from conftest import run_cohort
from run_cache import binary_key, cached, file_key


# ggml type ids of the KV cache types both sides store (llama.cpp's type_k/type_v)
GGML_TYPE = {"f32": 0, "f16": 1, "q8_0": 8, "bf16": 30}


def cache_flags(kind):
    """cohort's flags for a KV cache of type `kind` for K and V."""
    return ("-ctk", kind, "-ctv", kind)


def llama_cpp_logits(model_path, ids, n_ctx=None, n_threads=2, cache="f32", **kwargs):
    """llama.cpp's logits with a KV cache of type `cache` (F32 by default, the
    cache of cohort's bit-for-bit comparisons); kwargs go to Llama()."""
    from llama_cpp import Llama
    llm = Llama(model_path=str(model_path), n_ctx=n_ctx or max(64, len(ids)), n_batch=512,
                n_ubatch=512, logits_all=True, verbose=False, n_threads=n_threads,
                n_threads_batch=n_threads, type_k=GGML_TYPE[cache], type_v=GGML_TYPE[cache], **kwargs)
    llm.eval(list(ids))
    out = np.array(llm.scores[:len(ids)], dtype=np.float32)
    llm.close()
    return out


def cohort_logits(cohort_bin, model_path, seqs, tmp_path, n_vocab, extra=(), cache="f32"):
    """cohort's teacher-forced logits, with a KV cache of type `cache` (F32 by
    default, as llama_cpp_logits); computed once per test run (run_cache.py)."""
    seqs = [list(map(int, s)) for s in seqs]
    key = (binary_key(cohort_bin), file_key(model_path), seqs, n_vocab, list(map(str, extra)), cache)
    return cached("logits", key, lambda: _cohort_logits(cohort_bin, model_path, seqs, tmp_path, n_vocab, extra,
                                                        cache))


def _cohort_logits(cohort_bin, model_path, seqs, tmp_path, n_vocab, extra, cache):
    ids_file = tmp_path / "ids.json"
    out_file = tmp_path / "logits.f32"
    ids_file.write_text(json.dumps([list(map(int, s)) for s in seqs]))
    total = sum(len(s) for s in seqs)
    run_cohort(cohort_bin, "logits", "-m", model_path, "--ids", ids_file, "-o", out_file,
               "-c", max(256, total + 16), *cache_flags(cache), *extra)
    return np.fromfile(out_file, dtype=np.float32).reshape(total, n_vocab)


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def compare(ref, ours):
    """Mean KL(ref || ours), top-1 agreement, and near-tie count of disagreements."""
    assert np.isfinite(ours).all()
    lp, lq = log_softmax(ref), log_softmax(ours)
    kld = (np.exp(lp) * (lp - lq)).sum(axis=-1)
    top_ref, top_ours = ref.argmax(-1), ours.argmax(-1)
    same = top_ref == top_ours
    return {"kld": float(kld.mean()), "kld_max": float(kld.max()), "top1": float(same.mean()),
            "n": len(ref)}


# cohort's fast path follows the summation orders of llama.cpp's x86 CPU
# kernels as they are built for an AVX-512 CPU with VNNI and BF16 (F32 dot
# products in 64 lanes, BF16 pairs as vdpbf16ps, softmax sums in 16-lane
# groups, the repacked Q4_0/Q4_K kernels and the tiled K-quant matmul). With
# such a llama.cpp its logits are the same bits. A llama.cpp built for AVX2
# alone sums in 32 lanes, pairs BF16 otherwise and picks other kernels; its
# orders are not reproduced (that would be a second set of fast kernels, one
# per weight type, chosen by the llama.cpp build rather than by the CPU
# cohort runs on), so against it the tests assert the fidelity bounds only.
FAST_PATH_FEATURES = ("AVX512", "AVX512_VNNI", "AVX512_BF16")


def llama_cpp_features():
    """The CPU features llama.cpp's CPU backend was built with (those = 1 in
    llama_print_system_info(), e.g. {'AVX2', 'AVX512', ...})."""
    import llama_cpp
    info = llama_cpp.llama_print_system_info().decode()
    feats = set()
    for part in info.split("|"):
        name, eq, value = part.rpartition("=")
        if eq and value.strip() == "1":
            feats.add(name.split(":")[-1].strip())
    return feats


def fast_path_reproduces_llama_cpp():
    """(True, why) when the installed llama.cpp's kernels are those the fast
    path reproduces bit for bit, else (False, which orders differ)."""
    feats = llama_cpp_features()
    missing = [f for f in FAST_PATH_FEATURES if f not in feats]
    if not missing:
        return True, "llama.cpp built with " + ", ".join(FAST_PATH_FEATURES) + ": bit for bit expected"
    return False, ("llama.cpp built without " + ", ".join(missing) + " (has "
                   + ", ".join(sorted(feats)) + "): its 32-lane F32 sums, BF16 pairing and "
                   "K-quant/Q4_0 kernels are not the AVX-512 orders the fast path follows")


def check_disagreements(llama, ours, exact, near_tie):
    """Every position where ours and llama.cpp pick different top-1 tokens
    must be a near-tie of llama.cpp's logits (its top-1 logit less than
    `near_tie` above its logit for our token) or one where the F64
    reference `exact` picks our token. Returns counts for the report."""
    top_l, top_o, top_x = llama.argmax(-1), ours.argmax(-1), exact.argmax(-1)
    idx = np.nonzero(top_l != top_o)[0]
    gap = llama[idx, top_l[idx]] - llama[idx, top_o[idx]]
    tie = gap < near_tie
    f64_ours = top_x[idx] == top_o[idx]
    bad = idx[~tie & ~f64_ours]
    report = {"disagree": len(idx), "near_tie": int(tie.sum()), "f64_sides_with_ours":
              int((~tie & f64_ours).sum()), "max_gap": float(gap.max()) if len(idx) else 0.0}
    assert len(bad) == 0, ("top-1 disagreements neither near-tie nor sided by F64",
                           [(int(i), float(llama[i, top_l[i]] - llama[i, top_o[i]])) for i in bad],
                           report)
    return report
