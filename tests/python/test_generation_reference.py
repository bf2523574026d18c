"""Greedy continuations of the default model against llama.cpp: identical,
or diverging only at a near-tie of the logits."""
import json

import llama_cpp
import numpy as np

from conftest import run_cohort_once
from reference import cohort_logits

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def quicksort(arr):",
    "The three primary colors are",
    "Water boils at a temperature of",
    "In machine learning, overfitting means",
    "The quick brown fox",
    "Photosynthesis is the process by which",
    "1, 2, 3, 4, 5,",
    "To make a cup of tea, first",
]
N_GEN = 64
NEAR_TIE = 0.5  # logits


def llama_cpp_greedy(llm, prompt_ids):
    """llama.cpp's greedy path; the last element is the end-of-generation
    token if it stopped before N_GEN."""
    llm.reset()
    llm.eval(list(prompt_ids))
    out = []
    for _ in range(N_GEN):
        tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        out.append(tok)
        if llama_cpp.llama_vocab_is_eog(llm._model.vocab, tok):
            break
        llm.eval([tok])
    return out


def first_divergence(logits, path):
    """First step where cohort's argmax leaves llama.cpp's path, or None."""
    for k, tok in enumerate(path):
        if int(np.argmax(logits[k])) != tok:
            return k
    return None


def test_greedy_continuations_match_llama_cpp(tmp_path, cohort_bin, default_model):
    llm = llama_cpp.Llama(model_path=str(default_model), n_ctx=256, verbose=False,
                          n_threads=2, logits_all=True, type_k=0, type_v=0)
    identical, report = 0, []
    for prompt in PROMPTS:
        prompt_ids = llm.tokenize(prompt.encode(), add_bos=True, special=True)
        path = llama_cpp_greedy(llm, prompt_ids)
        ended = llama_cpp.llama_vocab_is_eog(llm._model.vocab, path[-1])
        ref_text = llm.detokenize(path[:-1] if ended else path).decode("utf-8", errors="replace")
        ours = run_cohort_once(cohort_bin, "run", "-m", default_model, "-p", prompt, "-n", N_GEN,
                               "--temp", 0, "-c", 256, "-ctk", "f32", "-ctv", "f32").stdout
        if ours == ref_text:
            identical += 1
            continue
        # Teacher-force llama.cpp's path through cohort: the first step where
        # our argmax differs must be a near-tie in our logits.
        seq = list(prompt_ids) + path[:-1]
        logits = cohort_logits(cohort_bin, default_model, [seq], tmp_path, llm.n_vocab())
        steps = logits[len(prompt_ids) - 1:]
        k = first_divergence(steps, path)
        assert k is not None, ("texts differ although every greedy step agrees", prompt, ours,
                               ref_text)
        gap = float(steps[k].max() - steps[k][path[k]])
        report.append({"prompt": prompt, "step": k, "gap": round(gap, 4)})
        assert gap < NEAR_TIE, report[-1]
    print(f"\ngreedy continuations identical to llama.cpp: {identical}/{len(PROMPTS)}")
    for r in report:
        print("  diverged at a near-tie:", json.dumps(r))
    llm.close()
