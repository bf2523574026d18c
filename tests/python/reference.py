"""llama.cpp (through llama-cpp-python) as the reference for logits, and the
comparison metrics used by the forward-pass tests."""
import json

import numpy as np

from conftest import run_cohort


def llama_cpp_logits(model_path, ids, n_ctx=None, n_threads=2):
    from llama_cpp import Llama
    llm = Llama(model_path=str(model_path), n_ctx=n_ctx or max(64, len(ids)), n_batch=512,
                n_ubatch=512, logits_all=True, verbose=False, n_threads=n_threads,
                n_threads_batch=n_threads, type_k=0, type_v=0)  # F32 KV cache, as ours
    llm.eval(list(ids))
    out = np.array(llm.scores[:len(ids)], dtype=np.float32)
    llm.close()
    return out


def cohort_logits(cohort_bin, model_path, seqs, tmp_path, n_vocab, extra=()):
    ids_file = tmp_path / "ids.json"
    out_file = tmp_path / "logits.f32"
    ids_file.write_text(json.dumps([list(map(int, s)) for s in seqs]))
    total = sum(len(s) for s in seqs)
    run_cohort(cohort_bin, "logits", "-m", model_path, "--ids", ids_file, "-o", out_file,
               "-c", max(256, total + 16), *extra)
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
