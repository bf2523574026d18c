#!/usr/bin/env python3
"""The headline figures of scripts/gpu_tp4.sh's logs (the folder given), as
markdown: devices and ceilings, AllReduce latency per rank count, the
correctness checks, and tokens/s per GPU count beside their targets."""
import json
import pathlib
import re
import sys

L = pathlib.Path(sys.argv[1])


def load(name):
    try:
        return json.loads((L / name).read_text())
    except (OSError, ValueError):
        return None


def lines(name):
    try:
        return [json.loads(x) for x in (L / name).read_text().splitlines() if x.startswith("{")]
    except (OSError, ValueError):
        return []


def devices():
    dev = load("devices.json") or {}
    names = ", ".join(d["name"] for d in dev.get("devices", [])) or "none"
    peer = dev.get("peer_access", [])
    full = bool(peer) and all(v for i, row in enumerate(peer) for j, v in enumerate(row) if i != j)
    print(f"devices: {names}; peer access between every pair: {'yes' if full else 'no'}\n")
    print("| GPU | copy GB/s | BF16 GEMM TFLOP/s |\n|---|---:|---:|")
    for g in range(4):
        rows = lines(f"ceilings-cuda{g}.jsonl")
        copy = next((x["gbps"] for x in rows if x.get("op") == "copy"), "?")
        gemm = next((x["tflops"] for x in rows if x.get("op") == "gemm" and x.get("n_tok") == 8192), "?")
        print(f"| cuda{g} | {copy} | {gemm} |")


def allreduce():
    print("\n| GPUs | transport | 8 KiB us (graph) | 512 KiB us (graph) | 256 MiB busbw GB/s | sizes slower than NCCL |")
    print("|---:|---|---:|---:|---:|---|")
    verdict = []
    for n in (2, 3, 4):
        rows = load(f"ar-bench-{n}.json") or []

        def get(t, b, graph=True):
            return next((r for r in rows if r.get("transport") == t and r.get("graph") == graph
                         and r.get("bytes") == b and "median_us" in r), None)
        for t in ("nccl", "host", "p2p"):
            graph = t != "host"  # host cannot run in a graph
            s8, s512, big = get(t, 8192, graph), get(t, 512 << 10, graph), get(t, 256 << 20, graph)
            slower = []
            if t != "nccl":
                for r in rows:
                    if r.get("transport") == t and r.get("graph") == graph and "median_us" in r:
                        ref = get("nccl", r["bytes"], graph)
                        if ref and r["median_us"] > ref["median_us"]:
                            slower.append(str(r["bytes"]))
            f = lambda r, k="median_us": f"{r[k]:.2f}" if r else "-"
            print(f"| {n} | {t} | {f(s8)} | {f(s512)} | {f(big, 'busbw_gbs')} | "
                  f"{', '.join(slower) if slower else ('none' if t != 'nccl' else '')} |")
            if n == 4 and t == "p2p":
                ok = bool(s8 and s512 and s8["median_us"] <= 5 and s512["median_us"] <= 12)
                verdict.append(f"p2p at 4 ranks in a graph: 8 KiB {f(s8)} us (<= 5), 512 KiB {f(s512)} us "
                               f"(<= 12): {'PASS' if ok else 'MISS'}")
    print("\n" + "\n".join(verdict))


def correctness():
    print("\n| check | value | target |\n|---|---|---|")
    text = (L / "unit-tests.txt").read_text() if (L / "unit-tests.txt").exists() else ""
    passed = re.search(r"\[  PASSED  \] (\d+)", text)
    print(f"| unit tests | {passed.group(0) if passed else 'no PASSED line'}"
          f"{'; some skipped' if 'SKIPPED ]' in text else ''} | all run and pass |")
    for f in sorted(L.glob("perplexity-p2p-*.txt")):
        t = f.read_text()
        kld = re.search(r"Mean\s+KLD:\s+([-0-9.e]+)", t)
        top = re.search(r"Same top p:\s+([0-9.]+)", t)
        if not kld:
            continue
        ok = float(kld.group(1)) <= 1e-3 and float(top.group(1)) >= 99.0
        print(f"| {f.stem} vs one GPU | KLD {float(kld.group(1)):.2e}, same top {float(top.group(1)):.2f}% "
              f"| KLD <= 1e-3, top >= 99%: {'PASS' if ok else 'MISS'} |")
    cmp = (L / "host-vs-p2p.txt").read_text().strip() if (L / "host-vs-p2p.txt").exists() else "not run"
    print(f"| host = p2p logits, 4 GPUs | {cmp} | identical |")


def tokens_per_second(path):
    rows = load(path) or []
    pp = next((r["avg_ts"] for r in rows if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0), None)
    tg = next((r["avg_ts"] for r in rows if r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0), None)
    return pp, tg


def benches():
    print("\n| model | GPUs | AllReduce | pp512 t/s | tg128 t/s | tg128 / one GPU | per GPU |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for name in ("llama3-8b", "llama3-70b"):
        pp1, tg1 = tokens_per_second(f"bench-{name}-1.json")
        f = lambda v: f"{v:,.1f}" if v else "-"
        print(f"| {name} | 1 | - | {f(pp1)} | {f(tg1)} | 1.00 | 1.00 |")
        for n in (2, 3, 4):
            for ar in ("nccl", "p2p"):
                pp, tg = tokens_per_second(f"bench-{name}-{n}-{ar}.json")
                x = tg / tg1 if tg and tg1 else None
                print(f"| {name} | {n} | {ar} | {f(pp)} | {f(tg)} | {f'{x:.2f}' if x else '-'} | "
                      f"{f'{x / n:.2f}' if x else '-'} |")
                if name == "llama3-8b" and n == 4 and ar == "p2p":
                    target = f"tg128 of the 8B model at 4 GPUs: {f'{x:.2f}' if x else '-'}x one GPU (>= 2.8): " \
                             f"{'PASS' if x and x >= 2.8 else 'MISS'}"
            pp, tg = tokens_per_second(f"llama-bench-{name}-{n}.json")
            if pp or tg:
                print(f"| {name} (llama.cpp) | {n} | nccl | {f(pp)} | {f(tg)} | | |")
    print("\n" + target)


devices()
allreduce()
correctness()
benches()
