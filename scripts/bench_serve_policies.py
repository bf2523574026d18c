#!/usr/bin/env python3
"""Runs bench-serve scenarios against `cohort serve` under each --phase-policy
and prints the comparison as markdown tables (the ones in docs/PERFORMANCE.md).

Every (scenario, policy) pair gets a fresh server, so that no prompt is reused
from the cache of an earlier run. The JSON reports are kept in --out, ready for
scripts/plot_itl.py.

    scripts/bench_serve_policies.py -m "$(scripts/default_model.py)" --out /tmp/bs -b 512 -t 1 \\
        bench/scenarios/unequal-pair.json bench/scenarios/long-prompt-mid-decode.json

A Poisson mix (vllm's random dataset) is the pseudo-scenario
`poisson:N:RATE:IN:OUT` (N requests at RATE per second, prompt and output
lengths uniform within +-50% of IN and OUT tokens, seed 1).

Per request (scenarios of at most 4 requests), the table gives the time to the
first token and the largest gap between two chunks against the request's median
gap. A server sends nothing for a token that ends inside a UTF-8 character, and
the next chunk carries both tokens: without log-probabilities a two-token
character is a gap of two steps. With --logprobs every request asks for its
tokens' log-probabilities, and cohort then sends every token in a chunk of its
own (its text empty until the character is whole), so each token's arrival is
timed; where a server still puts several tokens in one chunk, the largest gap is
also given per token of the chunk that ends it ("per token").

With --llama-server PATH, llama-server runs the same scenarios on the same
model with the same -np, -c and -b, with continuous batching and with
--no-cont-batching (rows "llama-server" and "llama-server no-cont"; its own
flags, such as -ngl 99 -fa on -ub 1024 --cache-ram 0, through --llama-arg).
"""
import argparse
import json
import pathlib
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
POLICIES = ["mixed", "no-cont", "cohort", "serial"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LLAMA_MODES = {"llama-server": [], "llama-server no-cont": ["--no-cont-batching"]}


def wait_ready(url, proc, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"error: the server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit("error: the server is not ready")


def server_command(args, policy, port):
    common = ["-m", args.model, "--port", str(port), "-np", str(args.parallel), "-c", str(args.ctx_size),
              "-b", str(args.batch_size)]
    if policy in LLAMA_MODES:
        return [args.llama_server, *common, *LLAMA_MODES[policy], *args.llama_arg]
    return [args.cohort, "serve", *common, "--phase-policy", policy, "-t", str(args.threads), *args.serve_arg]


def run_one(args, scenario, policy, out_path):
    port = free_port()
    serve = server_command(args, policy, port)
    with open(out_path.with_suffix(".serve.log"), "w") as log:
        proc = subprocess.Popen(serve, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(f"http://127.0.0.1:{port}", proc)
        cmd = [args.cohort, "bench-serve", "--port", str(port), *workload_flags(scenario),
               *(["--logprobs"] if args.logprobs else []),
               "--label", policy + args.label_suffix,
               "--save-result", str(out_path), "-o", "md"]
        print("$ " + " ".join(cmd), file=sys.stderr)
        # a run whose requests all failed still writes its report (and exits 1)
        subprocess.run(cmd, stdout=subprocess.DEVNULL)
        if not out_path.exists():
            raise RuntimeError(f"bench-serve wrote no report (server log: {out_path.with_suffix('.serve.log')})")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return json.loads(out_path.read_text())


def workload_flags(scenario):
    if not str(scenario).startswith("poisson:"):
        return ["--scenario", str(scenario)]
    n, rate, n_in, n_out = str(scenario).split(":")[1:]
    return ["--num-prompts", n, "--request-rate", rate, "--arrival", "poisson", "--seed", "1",
            "--random-input-len", n_in, "--random-output-len", n_out, "--random-range-ratio", "0.5"]


def scenario_name(scenario):
    text = str(scenario)
    return text.replace(":", "-") if text.startswith("poisson:") else scenario.stem


def gaps(request):
    """(gap in ms, tokens of the chunk that ends it) for each pair of chunks."""
    c, k = request["chunk_s"], request.get("chunk_tokens") or []
    return [((b - a) * 1e3, k[i + 1] if i + 1 < len(k) else 1) for i, (a, b) in enumerate(zip(c, c[1:]))]


def per_request(report):
    if len(report["requests"]) > 4:
        return "-"
    parts = []
    for r in report["requests"]:
        c = r["chunk_s"]
        ttft = (c[0] - r["send_s"]) * 1e3 if c else float("nan")
        g = gaps(r)
        med = statistics.median([ms / n for ms, n in g]) if g else 0.0
        worst = max((ms for ms, _ in g), default=0.0)
        text = f"{r['name']}: TTFT {ttft:.0f}, max gap {worst:.1f} ({worst / med if med else 0:.2f}x median)"
        if any(n > 1 for _, n in g):
            per_token = max((ms / n for ms, n in g), default=0.0)
            text += f", per token {per_token:.1f} ({per_token / med if med else 0:.2f}x)"
        parts.append(text)
    return "; ".join(parts)


def table(scenario, reports):
    print(f"\n{scenario_name(scenario)}\n")
    print("| policy | TTFT p50 / p99 (ms) | ITL p50 / p99 / max (ms) | makespan (s) | PP tok/s | TG tok/s "
          "| per request (ms) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for policy, rep in reports:
        s = rep["summary"]
        t, i = s["ttft_ms"], s["itl_ms"]
        fail = f" ({s['failed']} failed)" if s["failed"] else ""
        print(f"| {policy}{fail} | {t['p50']:.0f} / {t['p99']:.0f} | {i['p50']:.1f} / {i['p99']:.1f} / {i['max']:.0f} "
              f"| {s['makespan_s']:.2f} | {s['pp_tok_s']:.0f} | {s['tg_tok_s']:.1f} | {per_request(rep)} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="+", type=pathlib.Path)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--cohort", default=str(ROOT / "build" / "bin" / "cohort"))
    ap.add_argument("--out", type=pathlib.Path, required=True, help="folder for the JSON reports")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("-b", "--batch-size", type=int, default=512, help="cohort serve -b")
    ap.add_argument("-np", "--parallel", type=int, default=2, help="cohort serve -np")
    ap.add_argument("-c", "--ctx-size", type=int, default=8192, help="cohort serve -c")
    ap.add_argument("-t", "--threads", type=int, default=1,
                    help="cohort serve -t (1: on a busy machine two spinning workers slow each other down)")
    ap.add_argument("--serve-arg", action="append", default=[], help="extra argument for cohort serve")
    ap.add_argument("--label-suffix", default="", help="added to each report's label (the policy)")
    ap.add_argument("--llama-server", help="llama-server binary: also measure it, with and without "
                    "continuous batching")
    ap.add_argument("--logprobs", action="store_true",
                    help="requests ask for log-probabilities, so that each chunk's tokens are counted")
    ap.add_argument("--llama-arg", action="append", default=[], help="extra argument for llama-server")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    policies = [p for p in args.policies.split(",") if p]
    if args.llama_server:
        policies += list(LLAMA_MODES)
    for scenario in args.scenarios:
        reports = []
        for policy in policies:
            out = args.out / f"{scenario_name(scenario)}-{policy.replace(' ', '-')}.json"
            try:
                reports.append((policy, run_one(args, scenario, policy, out)))
            except Exception as e:  # one broken run must not lose the others' figures
                print(f"{scenario_name(scenario)}, {policy}: {e}", file=sys.stderr)
        table(scenario, reports)


if __name__ == "__main__":
    main()
