"""Hostile request bodies against a real server (the default model): JSON
element bombs and detokenize bombs, 8 at once, each answered with a clear
error or a bounded reply; the server's RSS while they run stays within a
bound above idle and returns to idle afterwards; /tokenize and /detokenize
refuse more than --max-tokenize tokens; a server out of descriptors does not
spin. The server's memory is sampled from /proc every 10 ms while the
requests run."""
import json
import os
import resource
import socket
import subprocess
import threading
import time
import urllib.request

from conftest import serving
from test_server_load import rss_kib, server_pid

ARGS = ["-c", "2048", "-np", "2", "-t", "1"]
PEAK_BOUND_MIB = 96   # above idle, while 8 bombs are in flight (their bodies alone are ~64)
SETTLED_MIB = 16      # above idle, once they are answered


def post_raw(url, path, data):
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=300) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
        out = b""
        while chunk := sock.recv(1 << 16):
            out += chunk
    head, _, body = out.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def under_load(url, pid, path, bodies):
    """Sends the bodies at once; returns (statuses, replies, peak RSS in KiB)."""
    results = [None] * len(bodies)
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, post_raw(url, path, bodies[i])))
               for i in range(len(bodies))]
    peak = rss_kib(pid)
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        peak = max(peak, rss_kib(pid))
        time.sleep(0.01)
    return [r[0] for r in results], [r[1] for r in results], peak


def settled_rss(pid, idle):
    """RSS once it stops falling (up to 5 s)."""
    rss = rss_kib(pid)
    for _ in range(50):
        if rss <= idle + SETTLED_MIB * 1024:
            break
        time.sleep(0.1)
        rss = rss_kib(pid)
    return rss


def test_bombs_are_bounded_and_memory_returns(tmp_path, cohort_bin, default_model):
    with serving(cohort_bin, default_model, ARGS, tmp_path) as url:
        pid = server_pid(int(url.rsplit(":", 1)[1]))
        urllib.request.urlopen(url + "/props", timeout=60).read()
        idle = rss_kib(pid)
        report = {"idle_mib": idle / 1024}
        space = json.loads(post_raw(url, "/tokenize", b'{"content": "' + b" " * 64 + b'"}')[1])["tokens"]
        cases = {
            # 8 MiB of empty objects under an unknown key: refused before a value is built
            "element bomb 8 MiB": ("/tokenize", b'{"x":[' + b"{}," * ((8 << 20) // 3 - 10) + b'{}]}', 400),
            # near the value limit (each "{}," counts twice): parsed, at most two trees at once
            "element bomb at the limit": ("/tokenize", b'{"content":"a","x":[' + b"{}," * 120000 + b'{}]}', 200),
            # one long whitespace token many times: the reply is capped
            "detokenize bomb": ("/detokenize", json.dumps({"tokens": space * (250000 // len(space))}).encode(),
                                None),
        }
        for name, (path, body, want) in cases.items():
            statuses, replies, peak = under_load(url, pid, path, [body] * 8)
            after = settled_rss(pid, idle)
            report[name] = {"statuses": sorted(set(statuses)), "peak_above_idle_mib": (peak - idle) / 1024,
                            "after_above_idle_mib": (after - idle) / 1024,
                            "reply_bytes": max(len(r) for r in replies), "reply": replies[0][:120]}
            print(name, report[name])
            assert all(s < 500 for s in statuses), (name, statuses, replies[0][:200])
            if want is not None:
                assert set(statuses) == {want}, (name, statuses, replies[0][:200])
            assert peak - idle <= PEAK_BOUND_MIB * 1024, (name, report)
            assert after - idle <= SETTLED_MIB * 1024, (name, report)
            assert max(len(r) for r in replies) <= 8 << 20, (name, report)
        # the server still answers, and quickly
        assert json.loads(post_raw(url, "/tokenize", b'{"content": "Hello"}')[1])["tokens"]


def test_max_tokenize_caps_both_routes(tmp_path, cohort_bin, default_model):
    with serving(cohort_bin, default_model, [*ARGS, "--max-tokenize", "100"], tmp_path) as url:
        ok = post_raw(url, "/tokenize", json.dumps({"content": "word " * 90}).encode())
        assert ok[0] == 200 and len(json.loads(ok[1])["tokens"]) <= 100
        status, body = post_raw(url, "/tokenize", json.dumps({"content": "word " * 150}).encode())
        assert status == 400 and b"--max-tokenize 100" in body, body
        status, body = post_raw(url, "/detokenize", json.dumps({"tokens": [1] * 101}).encode())
        assert status == 400 and b"--max-tokenize 100" in body, body
        assert post_raw(url, "/detokenize", json.dumps({"tokens": [1] * 100}).encode())[0] == 200


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_out_of_descriptors_does_not_spin(tmp_path, cohort_bin, default_model):
    """With 64 descriptors and more connections than that held open, accept()
    fails with EMFILE: the server waits instead of spinning (CPU below 5%
    while it lasts) and serves again once they close."""
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    port_no = port.getsockname()[1]
    port.close()
    log = open(tmp_path / "serve.log", "w")
    limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))  # noqa: E731
    proc = subprocess.Popen([str(cohort_bin), "serve", "-m", str(default_model), "--port", str(port_no),
                             *map(str, ARGS), "--max-connections", "1000"],
                            stdout=log, stderr=subprocess.STDOUT, preexec_fn=limit)
    url = f"http://127.0.0.1:{port_no}"
    try:
        for _ in range(600):
            try:
                if urllib.request.urlopen(url + "/health", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        held = [socket.create_connection(("127.0.0.1", port_no)) for _ in range(100)]
        time.sleep(0.5)
        t0, c0 = time.monotonic(), cpu_seconds(proc.pid)
        time.sleep(2.0)
        share = (cpu_seconds(proc.pid) - c0) / (time.monotonic() - t0)
        for s in held:
            s.close()
        print(f"server CPU while out of descriptors: {100 * share:.1f}%")
        assert share < 0.05, share
        for _ in range(100):
            try:
                if urllib.request.urlopen(url + "/health", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        assert urllib.request.urlopen(url + "/health", timeout=5).status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()
