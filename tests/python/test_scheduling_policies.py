"""Scheduling seen from outside, on a real server with the default model:
every policy gives the same tokens; the cohort seals; queued work always
progresses; cancelling a member that waits at the barrier or one that
decodes neither deadlocks nor leaks a slot or KV block; --tg-quantum ends a
decode phase without mixing; a reused prompt still waits at its barrier;
an idle server burns no CPU. The batch trace (--trace-batches) is the witness."""
import json
import os
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

from test_phase_trace import B, complete, read_trace, server, steps_with_rows

POLICIES = [("mixed", ()), ("no-cont", ()), ("cohort", ()), ("serial", ()),
            ("cohort", ("--tg-quantum", "3"))]

# Prompts of 1 to 8+ batches of B tokens; greedy and seeded sampling.
REQUESTS = [
    {"prompt": "The capital of France is", "max_tokens": 12, "temperature": 0},
    {"prompt": "Write about the history of bread. " * 30, "max_tokens": 10, "temperature": 0},
    {"prompt": "A short poem about rain:" * 4, "max_tokens": 12, "temperature": 0.9,
     "seed": 7},
    {"prompt": "List three colours. " * 12, "max_tokens": 8, "temperature": 0.7, "top_p": 0.9,
     "seed": 123},
]


def post(url, body, timeout=600):
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def metric(url, name):
    text = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} missing from /metrics")


def run_staggered(url, requests, gap=0.15):
    """Sends the requests gap seconds apart, concurrently; returns the texts."""
    out = [None] * len(requests)

    def one(i):
        out[i] = post(url, requests[i])["choices"][0]["text"]

    threads = []
    for i in range(len(requests)):
        threads.append(threading.Thread(target=one, args=(i,)))
        threads[-1].start()
        time.sleep(gap)
    for t in threads:
        t.join()
    return out


def assert_never_mixes(trace):
    for t in steps_with_rows(trace):
        assert len({r["kind"] for r in t["rows"]}) == 1, f"step {t['step']} mixes phases: {t}"


def assert_all_ended(trace, n):
    ended = {e["id"] for t in trace for e in t["ended"]}
    admitted = {a["id"] for t in trace for a in t["admitted"]}
    assert len(admitted) == n and admitted == ended, (admitted, ended)


# On a GPU the kernels depend on the batch size (as llama.cpp's do), so the
# same tokens need the same batches: there the requests run one after
# another, each alone under every policy (what differs is the policies' own
# paths: logits kept at the barrier, cohorts of one). On the CPU, whose sums
# do not depend on the batch, they overlap.
GPU = os.environ.get("COHORT_TEST_GPU") == "1"


def test_every_policy_produces_the_same_tokens(tmp_path, cohort_bin, default_model):
    texts = {}
    for policy, extra in POLICIES:
        name = policy + "".join(extra)
        (tmp_path / name).mkdir()
        with server(cohort_bin, default_model, tmp_path / name, policy, extra) as (url, trace):
            if GPU:
                texts[name] = [post(url, r)["choices"][0]["text"] for r in REQUESTS]
            else:
                texts[name] = run_staggered(url, REQUESTS)
        assert_all_ended(read_trace(trace), len(REQUESTS))
    reference = texts["serial"]
    assert all(reference), reference
    for name, got in texts.items():
        assert got == reference, (name, got, reference)


def sealing_step(trace):
    """The step whose plan sealed the first cohort: the first plan after the
    step that ran a member's last prompt chunk (it admits the arrivals of
    that step, then seals); None while there is none."""
    last = next((t["step"] for t in trace if any(r["kind"] == "pp" and r["last"] for r in t["rows"])), None)
    return next((t["step"] for t in trace if last is not None and t["step"] > last), None)


def test_staggered_arrivals_seal_the_cohort(tmp_path, cohort_bin, default_model):
    short = {"prompt": "Describe the sea in one line. " * 8, "max_tokens": 16, "temperature": 0}
    long = {"prompt": "Write about the history of bread. " * 40, "max_tokens": 4,
            "temperature": 0}
    late = {"prompt": "Name a fruit.", "max_tokens": 4, "temperature": 0}
    (tmp_path / "s").mkdir()
    with server(cohort_bin, default_model, tmp_path / "s", "cohort") as (url, trace_path):
        threads = [threading.Thread(target=post, args=(url, short)),
                   threading.Thread(target=post, args=(url, long))]
        threads[0].start()
        time.sleep(0.05)
        threads[1].start()
        # the third request arrives once the short prompt is done and the
        # plan after it has sealed the cohort
        for _ in range(2000):
            trace = read_trace(trace_path) if trace_path.exists() else []
            if sealing_step(trace) is not None:
                break
            time.sleep(0.01)
        threads.append(threading.Thread(target=post, args=(url, late)))
        threads[-1].start()
        for t in threads:
            t.join()
    trace = read_trace(trace_path)
    assert_never_mixes(trace)
    assert_all_ended(trace, 3)
    sealed_at = sealing_step(trace)
    first_cohort = {a["id"] for t in trace if t["step"] <= sealed_at for a in t["admitted"]}
    late_id = max(a["id"] for t in trace for a in t["admitted"])
    assert late_id not in first_cohort
    late_admitted = min(t["step"] for t in trace for a in t["admitted"] if a["id"] == late_id)
    # the late request waits for the first cohort to drain, then runs
    first_ended = max(t["step"] for t in trace for e in t["ended"] if e["id"] in first_cohort)
    assert late_admitted >= first_ended


def open_stream(url, body):
    """A raw streaming request; returns the socket (close it to cancel)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=600)
    data = json.dumps({**body, "stream": True}).encode()
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return sock


def wait_idle(url, timeout=120):
    for _ in range(int(timeout / 0.1)):
        if metric(url, "cohort:requests_processing") == 0 and \
                metric(url, "cohort:requests_deferred") == 0:
            return
        time.sleep(0.1)
    raise AssertionError("the server never went idle")


@pytest.mark.parametrize("victim", ["waiting", "decoding"])
def test_cancelling_a_member_neither_deadlocks_nor_leaks(tmp_path, cohort_bin, default_model,
                                                         victim):
    """waiting: the short member of an unequal pair is READY at the barrier when
    its client leaves; decoding: a member goes away in the middle of TG."""
    short = {"prompt": "Describe the sea in one line. " * 8, "max_tokens": 40, "temperature": 0,
             "ignore_eos": True}  # still decoding when its client leaves
    long = {"prompt": "Write about the history of bread. " * 60, "max_tokens": 24,
            "temperature": 0}
    (tmp_path / victim).mkdir()
    with server(cohort_bin, default_model, tmp_path / victim, "cohort") as (url, trace_path):
        sock = open_stream(url, short)
        survivor = {}
        th = threading.Thread(target=lambda: survivor.update(post(url, long)))
        th.start()
        want = "pp" if victim == "waiting" else "tg"
        # The two requests race to be admitted, so ids say nothing: the short
        # prompt is the one whose prefill ends first.
        short_id = None
        for _ in range(3000):
            trace = read_trace(trace_path) if trace_path.exists() else []
            ends = [r["id"] for t in trace for r in t["rows"] if r["kind"] == "pp" and r["last"]]
            short_id = ends[0] if ends else None
            if ends and (want == "pp" or any(t["phase"] == "tg" for t in trace)):
                break
            time.sleep(0.01)
        assert short_id is not None, "the short prompt never finished its prefill"
        sock.close()
        th.join(timeout=300)
        assert not th.is_alive(), "the surviving member never finished (barrier deadlock?)"
        assert survivor["usage"]["completion_tokens"] == long["max_tokens"]
        wait_idle(url)
        slots = json.loads(urllib.request.urlopen(url + "/slots", timeout=30).read())
        assert not any(s["is_processing"] for s in slots), slots
        post(url, {"prompt": "Hello", "max_tokens": 2})  # still serves
    trace = read_trace(trace_path)
    assert_never_mixes(trace)
    reasons = {e["id"]: e["reason"] for t in trace for e in t["ended"]}
    assert reasons[short_id] == "cancelled", (short_id, reasons)
    if victim == "waiting":
        first = [t["step"] for t in trace if short_id in t["first_tokens"]]
        assert not first, "the cancelled member emitted a token before the barrier"


def test_tg_quantum_ends_a_decode_phase_without_mixing(tmp_path, cohort_bin, default_model):
    (tmp_path / "q").mkdir()
    with server(cohort_bin, default_model, tmp_path / "q", "cohort",
                ("--tg-quantum", "4")) as (url, trace_path):
        # all 60 tokens (no early end), so that it still decodes when the second arrives
        first = threading.Thread(target=post, args=(url, {"prompt": "Count to ten:", "max_tokens": 60,
                                                          "temperature": 0, "ignore_eos": True}))
        first.start()
        for _ in range(3000):
            trace = read_trace(trace_path) if trace_path.exists() else []
            if any(t["phase"] == "tg" for t in trace):
                break
            time.sleep(0.01)
        post(url, {"prompt": "Write about the history of bread. " * 10, "max_tokens": 8,
                   "temperature": 0})
        first.join()
    trace = read_trace(trace_path)
    assert_never_mixes(trace)
    assert_all_ended(trace, 2)
    end_first = min(t["step"] for t in trace for e in t["ended"] if e["id"] == 0)
    pp_second = [t["step"] for t in trace for r in t["rows"] if r["id"] == 1 and r["kind"] == "pp"]
    # the quantum let the newcomer prefill while the first request still had tokens to go
    assert pp_second and min(pp_second) < end_first
    assert any(t["parked"] for t in trace), "no member was parked"
    together = [t for t in trace if {r["id"] for r in t["rows"] if r["kind"] == "tg"} == {0, 1}]
    assert together, "old and new members never decoded together"


def test_reused_prompt_still_waits_at_its_barrier(tmp_path, cohort_bin, default_model):
    prompt = "Tell me a story about the sea and the wind and a boat. " * 8
    (tmp_path / "r").mkdir()
    with server(cohort_bin, default_model, tmp_path / "r", "cohort") as (url, trace_path):
        post(url, {"prompt": prompt, "max_tokens": 2, "temperature": 0})
        other = {"prompt": "Write about the history of bread. " * 30, "max_tokens": 4,
                 "temperature": 0}
        th = threading.Thread(target=post, args=(url, other))
        th.start()
        time.sleep(0.05)
        again = post(url, {"prompt": prompt, "max_tokens": 4, "temperature": 0})
        th.join()
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] > 0
    trace = read_trace(trace_path)
    assert_never_mixes(trace)
    reused = max(a["id"] for t in trace for a in t["admitted"])
    cached = [a["cached"] for t in trace for a in t["admitted"] if a["id"] == reused]
    assert cached and cached[0] > 0
    first = min(t["step"] for t in trace if reused in t["first_tokens"])
    # same cohort as the long prompt: no first token while it still prefills
    other_id = reused - 1
    same_cohort = any(a["id"] == other_id for t in trace for a in t["admitted"]
                      if t["step"] <= first)
    if same_cohort:
        last_pp = max(t["step"] for t in trace for r in t["rows"]
                      if r["id"] == other_id and r["kind"] == "pp")
        assert first >= last_pp


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_idle_server_burns_no_cpu(tmp_path, cohort_bin, default_model):
    (tmp_path / "i").mkdir()
    with server(cohort_bin, default_model, tmp_path / "i", "cohort") as (url, _):
        post(url, {"prompt": "Hello", "max_tokens": 8})
        pid = find_server_pid(url)
        time.sleep(0.5)
        before = cpu_seconds(pid)
        time.sleep(3)
        used = cpu_seconds(pid) - before
    assert used < 0.15, f"the idle server used {used:.2f} s of CPU in 3 s"


def find_server_pid(url):
    port = url.rsplit(":", 1)[1]
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"serve" in cmd and port.encode() in cmd:
            return int(pid)
    raise AssertionError("server process not found")


@pytest.mark.parametrize("flag, policy", [("-cb", "mixed"), ("--cont-batching", "mixed"),
                                          ("-nocb", "no-cont"), ("--no-cont-batching", "no-cont")])
def test_llama_servers_batching_switch_names_a_policy(cohort_bin, default_model, flag, policy):
    proc = subprocess.Popen([str(cohort_bin), "serve", "-m", str(default_model), "--port", "0", flag],
                            stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if "ready:" in line:
                assert line.rstrip().endswith(f"phase policy {policy}"), line
                break
        else:
            pytest.fail(f"serve {flag} exited before it was ready")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_batching_switch_and_phase_policy_together_are_refused(cohort_bin, default_model):
    res = subprocess.run([str(cohort_bin), "serve", "-m", str(default_model), "-nocb", "--phase-policy", "cohort"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "--phase-policy excludes --no-cont-batching" in res.stderr
