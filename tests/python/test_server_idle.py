"""Idle and slow connections cost `cohort serve` no thread: with 1,000
connections open that send nothing (and 200 of them half a request head),
/health answers within 100 ms, each on a new connection, and the server has
as many threads as before they came (before the I/O thread, 270 idle
sockets held every worker and made /health time out for ~28 s).

Run as a script against a running server, it prints the /health latencies
with N idle connections for docs/PERFORMANCE.md:
python3 tests/python/test_server_idle.py URL [N_IDLE [N_REQUESTS]]."""
import os
import resource
import socket
import threading
import time

from conftest import SERVE_ARGS, serving
from test_server_load import server_pid

N_IDLE = 1000
HEALTH = b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"


def raise_fd_limit(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def health_ms(host, port, timeout=60):
    """One /health on a new connection, in milliseconds (status checked)."""
    t0 = time.perf_counter()
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(HEALTH)
        out = b""
        while chunk := s.recv(4096):
            out += chunk
    assert out.startswith(b"HTTP/1.1 200"), out[:200]
    return 1000 * (time.perf_counter() - t0)


def open_idle(host, port, n):
    """n connections; every fifth sends half a request head."""
    socks = []
    for i in range(n):
        s = socket.create_connection((host, port), timeout=60)
        if i % 5 == 0:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Half: ")
        socks.append(s)
    return socks


def measure(url, n_idle=N_IDLE, n_requests=200, interval=0.0, hold=False):
    """/health latencies (ms) on new connections with n_idle idle ones open;
    with `hold`, idle connections the server closes are opened again, as an
    attacker would keep them."""
    host, port = url.removeprefix("http://").split(":")
    port = int(port)
    socks = open_idle(host, port, n_idle)
    done = threading.Event()

    def keep():
        while not done.wait(0.1):
            for i, s in enumerate(socks):
                s.setblocking(False)
                try:
                    if s.recv(1) == b"":
                        s.close()
                        socks[i] = open_idle(host, port, 1)[0]
                except (BlockingIOError, ConnectionResetError):
                    pass

    holder = threading.Thread(target=keep) if hold else None
    try:
        if holder:
            holder.start()
        time.sleep(0.5)  # let the server take them all; a measurement, not a synchronisation
        ms = []
        for _ in range(n_requests):
            ms.append(health_ms(host, port, timeout=120))
            time.sleep(interval)
    finally:
        done.set()
        if holder:
            holder.join()
        for s in socks:
            s.close()
    first = ms[0]
    ms.sort()
    return {"first_ms": round(first, 2), "p50_ms": round(ms[len(ms) // 2], 2),
            "p99_ms": round(ms[len(ms) * 99 // 100], 2), "max_ms": round(ms[-1], 2)}


def test_thousand_idle_connections_cost_no_thread(tmp_path, cohort_bin, default_model):
    if raise_fd_limit(N_IDLE + 512) < N_IDLE + 512:
        import pytest
        pytest.skip("RLIMIT_NOFILE too low for 1,000 connections")
    # The server inherits the raised limit (its --max-connections default follows it).
    with serving(cohort_bin, default_model, SERVE_ARGS, tmp_path) as url:
        host, port = url.removeprefix("http://").split(":")
        pid = server_pid(int(port))
        health_ms(host, int(port))
        threads_before = len(os.listdir(f"/proc/{pid}/task"))
        socks = open_idle(host, int(port), N_IDLE)
        try:
            ms = sorted(health_ms(host, int(port)) for _ in range(200))
            threads_after = len(os.listdir(f"/proc/{pid}/task"))
            # all still open: none was answered or closed
            for s in socks[:50]:
                s.setblocking(False)
                try:
                    assert s.recv(1) == b"X", "an idle connection got bytes or a close"
                except BlockingIOError:
                    pass
        finally:
            for s in socks:
                s.close()
        p50, p99, worst = ms[len(ms) // 2], ms[len(ms) * 99 // 100], ms[-1]
        print(f"/health with {N_IDLE} idle connections: p50 {p50:.2f} ms, p99 {p99:.2f} ms, "
              f"max {worst:.2f} ms; threads {threads_before} -> {threads_after}")
        assert p99 < 100, ms
        assert worst < 500, ms  # a loaded CI machine; measured far below (docs/PERFORMANCE.md)
        assert threads_after == threads_before


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url")
    ap.add_argument("--idle", type=int, default=N_IDLE)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--interval", type=float, default=0.0, help="seconds between /health requests")
    ap.add_argument("--hold", action="store_true", help="reopen idle connections the server closes")
    a = ap.parse_args()
    raise_fd_limit(a.idle + 512)
    print(measure(a.url, a.idle, a.requests, a.interval, a.hold))
