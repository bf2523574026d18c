"""cohort perplexity against llama.cpp on the same text, context and formula
(llama-perplexity's: the second half of each chunk is scored), and the KL
divergence tooling."""
import re

import numpy as np

from conftest import run_cohort, run_cohort_once
from reference import log_softmax

N_CTX = 256
N_CHUNKS = 16  # 4096 tokens


def documentation_text():
    # Python's own documentation: real English prose with code, fixed per Python version.
    from pydoc_data.topics import topics
    return "\n\n".join(topics[k] for k in sorted(topics))[:60000]


def llama_cpp_perplexity(model_path, text):
    from llama_cpp import Llama
    llm = Llama(model_path=str(model_path), n_ctx=N_CTX, n_batch=N_CTX, logits_all=True,
                verbose=False, n_threads=2)  # llama.cpp's default F16 KV cache, as cohort's
    tokens = llm.tokenize(text.encode(), add_bos=True, special=False)
    nll = []
    for c in range(N_CHUNKS):
        chunk = tokens[c * N_CTX:(c + 1) * N_CTX]
        llm.reset()
        llm.eval(chunk)
        lp = log_softmax(np.asarray(llm.scores[:N_CTX]))
        for j in range(N_CTX // 2, N_CTX - 1):
            nll.append(-lp[j, chunk[j + 1]])
    llm.close()
    nll = np.asarray(nll)
    return float(np.exp(nll.mean()))


def cohort_perplexity(cohort_bin, model, text_file, *extra):
    res = run_cohort_once(cohort_bin, "perplexity", "-m", model, "-f", text_file, "-c", N_CTX,
                          "--chunks", N_CHUNKS, *extra, timeout=1800)
    m = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", res.stdout)
    assert m, res.stdout
    return float(m.group(1)), float(m.group(2)), res.stdout


def test_perplexity_matches_llama_cpp(tmp_path, cohort_bin, default_model):
    text = documentation_text()
    text_file = tmp_path / "doc.txt"
    text_file.write_text(text)
    ours, err, _ = cohort_perplexity(cohort_bin, default_model, text_file)
    ref = llama_cpp_perplexity(default_model, text)
    print(f"\nperplexity over {N_CHUNKS * N_CTX} tokens: cohort {ours:.4f} ± {err:.4f}, "
          f"llama.cpp {ref:.4f} ({100 * (ours / ref - 1):+.3f}%)")
    assert abs(ours / ref - 1) < 0.01


def test_kl_divergence_of_a_run_against_itself_is_zero(tmp_path, cohort_bin):
    model = tmp_path / "tiny.gguf"
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--type", "q8_0", "-o", model)
    text_file = tmp_path / "t.txt"
    text_file.write_text(documentation_text()[:8000])
    saved = tmp_path / "base.logprobs"
    run_cohort(cohort_bin, "perplexity", "-m", model, "-f", text_file, "-c", 64, "--chunks", 2,
               "--save-logits", saved)
    res = run_cohort(cohort_bin, "perplexity", "-m", model, "-f", text_file, "-c", 64,
                     "--chunks", 2, "--kl-divergence-base", saved, "--kl-divergence")
    kld = float(re.search(r"Mean\s+KLD:\s+(-?[0-9.e-]+)", res.stdout).group(1))
    same = float(re.search(r"Same top p:\s+([0-9.]+)", res.stdout).group(1))
    assert abs(kld) < 1e-6 and same == 100.0, res.stdout
    # a different file type of the same shape gives a small, positive divergence
    other = tmp_path / "tiny-q4k.gguf"
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--type", "q4_k", "-o", other)
    res = run_cohort(cohort_bin, "perplexity", "-m", other, "-f", text_file, "-c", 64,
                     "--chunks", 2, "--kl-divergence-base", saved, "--kl-divergence")
    kld = float(re.search(r"Mean\s+KLD:\s+(-?[0-9.e-]+)", res.stdout).group(1))
    assert 0 < kld < 0.05, res.stdout
    # a base saved for another context is refused with a clear error
    res = run_cohort(cohort_bin, "perplexity", "-m", model, "-f", text_file, "-c", 32,
                     "--chunks", 2, "--kl-divergence-base", saved, "--kl-divergence", check=False)
    assert res.returncode == 1 and "saved for another run" in res.stderr, res.stderr
