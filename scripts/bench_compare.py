#!/usr/bin/env python3
"""cohort bench and llama.cpp (the llama-cpp-python build) on the same model,
tests and threads, in one run; prints a markdown table with the ratio.

  scripts/bench_compare.py -m MODEL [-p 128] [-n 64] [-t 2] [-r 5]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def llama_cpp_bench(model, n_prompt, n_gen, threads, reps):
    import numpy as np
    from llama_cpp import Llama
    llm = Llama(model_path=str(model), n_ctx=max(n_prompt, n_gen) + 16, n_batch=2048,
                n_ubatch=512, n_threads=threads, n_threads_batch=threads, verbose=False)
    rng = np.random.default_rng(0)
    vocab = llm.n_vocab()

    def one(kind):
        llm.reset()
        toks = rng.integers(0, vocab, size=n_prompt if kind == "pp" else n_gen).tolist()
        t0 = time.perf_counter()
        if kind == "pp":
            llm.eval(toks)
        else:
            for t in toks:
                llm.eval([t])
        return time.perf_counter() - t0

    out = {}
    for kind, n in (("pp", n_prompt), ("tg", n_gen)):
        if n <= 0:
            continue
        one(kind)  # warm-up
        samples = [n / one(kind) for _ in range(reps)]
        out[kind] = (float(np.mean(samples)), float(np.std(samples)))
    llm.close()
    return out


def cohort_bench(binary, model, n_prompt, n_gen, threads, reps):
    res = subprocess.run([str(binary), "bench", "-m", str(model), "-p", str(n_prompt), "-n",
                          str(n_gen), "-t", str(threads), "-r", str(reps), "-o", "json"],
                         check=True, capture_output=True, text=True)
    out = {}
    for r in json.loads(res.stdout):
        kind = "pp" if r["n_gen"] == 0 else "tg"
        out[kind] = (r["avg_ts"], r["stddev_ts"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("-p", type=int, default=128)
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("-r", type=int, default=5)
    ap.add_argument("--cohort", default=str(ROOT / "build" / "bin" / "cohort"))
    a = ap.parse_args()
    ours = cohort_bench(a.cohort, a.model, a.p, a.n, a.t, a.r)
    ref = llama_cpp_bench(a.model, a.p, a.n, a.t, a.r)
    print(f"| model | test | threads | cohort t/s | llama.cpp t/s | ratio |")
    print(f"| --- | --- | ---: | ---: | ---: | ---: |")
    name = pathlib.Path(a.model).name
    for kind, n in (("pp", a.p), ("tg", a.n)):
        if kind in ours and kind in ref:
            (o, os_), (r, rs) = ours[kind], ref[kind]
            print(f"| {name} | {kind}{n} | {a.t} | {o:.2f} ± {os_:.2f} | {r:.2f} ± {rs:.2f} | "
                  f"{o / r:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
