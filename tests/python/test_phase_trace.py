"""Phase exclusion seen from outside: a real server with the default model,
--trace-batches, and the workloads of REQUIREMENTS.md §1 (unequal pair,
arrival during TG, cancellation), checked on the batch trace."""
import contextlib
import json
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

B = 32  # -b: prompts below need several batches


@contextlib.contextmanager
def server(cohort_bin, model, tmp_path, policy, extra=(), n_parallel=4, batch=B):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    trace = tmp_path / f"trace-{policy}.jsonl"
    log = open(tmp_path / f"serve-{policy}.log", "w")
    proc = subprocess.Popen([str(cohort_bin), "serve", "-m", str(model), "--port", str(port),
                             "-np", str(n_parallel), "-c", str(1024 * n_parallel), "-b", str(batch),
                             "--phase-policy", policy, "--metrics",
                             "--trace-batches", str(trace), *map(str, extra)],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None, (tmp_path / f"serve-{policy}.log").read_text()
            time.sleep(0.2)
        yield url, trace
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()


def complete(url, prompt, max_tokens, stream=False, timeout=600, **fields):
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "stream": stream, **fields}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read().decode()


def read_trace(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def steps_with_rows(trace):
    return [t for t in trace if t["rows"]]


SHORT = "Describe the sea in one line. " * 8     # ~64 tokens: 2+ batches of 32
LONG = "Write about the history of bread. " * 30  # ~240 tokens: 8+ batches


def run_pair(url, stream):
    out = {}
    ths = [threading.Thread(target=lambda k=k, p=p: out.__setitem__(k, complete(url, p, 8, stream)))
           for k, p in (("short", SHORT), ("long", LONG))]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    return out


@pytest.mark.parametrize("stream", [False, True])
def test_unequal_pair_under_cohort(tmp_path, cohort_bin, default_model, stream):
    with server(cohort_bin, default_model, tmp_path, "cohort") as (url, trace_path):
        run_pair(url, stream)
    trace = read_trace(trace_path)
    rows = steps_with_rows(trace)
    for t in rows:
        kinds = {r["kind"] for r in t["rows"]}
        assert len(kinds) == 1, f"step {t['step']} mixes phases: {t}"
    # no first token while any member still prefills
    last_pp = max(t["step"] for t in rows if t["rows"][0]["kind"] == "pp")
    first = [t["step"] for t in trace if t["first_tokens"]]
    assert first and min(first) >= last_pp, (first, last_pp)
    # both prompts shared PP steps (a cohort, not one after the other)
    shared = [t for t in rows if t["rows"][0]["kind"] == "pp" and len(t["rows"]) == 2]
    assert shared, "the two prompts never prefilled together"


def test_unequal_pair_under_mixed_does_mix(tmp_path, cohort_bin, default_model):
    with server(cohort_bin, default_model, tmp_path, "mixed") as (url, trace_path):
        run_pair(url, False)
    rows = steps_with_rows(read_trace(trace_path))
    assert any(len({r["kind"] for r in t["rows"]}) == 2 for t in rows), \
        "mixed never put decode and prompt rows in one step on this workload"


def test_arrival_during_decode_waits_for_the_phase(tmp_path, cohort_bin, default_model):
    with server(cohort_bin, default_model, tmp_path, "cohort") as (url, trace_path):
        # all its tokens (no early end), enough to outlast the poll on a fast GPU
        first = threading.Thread(target=complete, args=(url, "Count to ten:", 160), kwargs={"ignore_eos": True})
        first.start()
        # wait until the first request decodes, then send a second one
        for _ in range(600):
            trace = read_trace(trace_path) if trace_path.exists() else []
            if any(t["phase"] == "tg" for t in trace):
                break
            time.sleep(0.05)
        complete(url, LONG, 4)
        first.join()
    trace = read_trace(trace_path)
    for t in steps_with_rows(trace):
        assert len({r["kind"] for r in t["rows"]}) == 1, t
    tg_steps = [t["step"] for t in trace if t["phase"] == "tg" and t["rows"]]
    pp_after = [t["step"] for t in trace if t["phase"] == "pp" and t["rows"]
                and t["step"] > min(tg_steps)]
    # the second prompt only prefills after the first request's decode phase drained
    assert pp_after and min(pp_after) > max(s for s in tg_steps if s < min(pp_after))
    assert any(t["blocked"] > 0 for t in trace), "the waiting request was never counted as blocked"


def test_cancelled_request_frees_its_slot(tmp_path, cohort_bin, default_model):
    with server(cohort_bin, default_model, tmp_path, "cohort") as (url, trace_path):
        body = json.dumps({"prompt": LONG, "max_tokens": 200, "stream": True}).encode()
        req = urllib.request.Request(url + "/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        r = urllib.request.urlopen(req, timeout=600)
        r.readline()  # the stream has started
        r.close()     # the client goes away
        time.sleep(2)
        metrics = urllib.request.urlopen(url + "/metrics").read().decode()
        complete(url, "Hello", 4)  # the server still serves
    assert "cohort:requests_processing 0" in metrics, metrics
    ended = [e for t in read_trace(trace_path) for e in t["ended"]]
    assert any(e["reason"] == "cancelled" for e in ended), ended
