"""GET /v1/phase-events, the phase view's stream: one event per engine step,
which must say what the batch trace of the same run says (rows, first
tokens, the barrier), for the unequal pair of REQUIREMENTS.md §1; a
decoding request parked by --tg-quantum while a newcomer prefills; and
nothing with --no-slots."""
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from conftest import serving
from test_phase_trace import LONG, SHORT, complete, read_trace, run_pair


class PhaseStream:
    """Reads the stream on a thread of its own; `events` grows as they come."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        self.conn.request("GET", "/v1/phase-events")
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, self.resp.read()
        assert self.resp.getheader("Content-Type") == "text/event-stream"
        self.events = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for raw in self.resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("data: "):
                    self.events.append(json.loads(line[6:]))
        except (OSError, ValueError, AttributeError):  # AttributeError: closed under the read
            pass

    def wait_for(self, predicate, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.events):
                return
            time.sleep(0.02)
        raise AssertionError(f"not seen in {timeout} s; events: {self.events[-5:]}")

    def close(self):
        # Shut the socket first: closing the response waits for the reader
        # thread's read, which a quiet stream would hold until its keep-alive.
        if self.conn.sock is not None:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(timeout=10)
        self.conn.close()


ARGS = ["-np", "2", "-c", "2048", "-b", "32", "--phase-policy", "cohort"]


def test_steps_match_the_batch_trace_for_an_unequal_pair(cohort_bin, default_model, tmp_path):
    trace_path = tmp_path / "trace.jsonl"
    with serving(cohort_bin, default_model, [*ARGS, "--trace-batches", trace_path], tmp_path) as url:
        stream = PhaseStream(url)
        stream.wait_for(lambda ev: ev and ev[0]["type"] == "hello")
        hello = stream.events[0]
        assert hello["n_slots"] == 2 and hello["policy"] == "cohort" and hello["n_batch"] == 32
        assert [s["state"] for s in hello["slots"]] == ["idle", "idle"]
        run_pair(url, stream=False)
        trace = read_trace(trace_path)
        last = max(t["step"] for t in trace if t["rows"] or t["first_tokens"])
        stream.wait_for(lambda ev: any(e.get("step") == last for e in ev))
        stream.close()
    steps = [e for e in stream.events if e["type"] == "step"]
    assert all(e["type"] != "lost" for e in stream.events)
    assert [e["seq"] for e in steps] == list(range(steps[0]["seq"], steps[0]["seq"] + len(steps)))
    by_step = {e["step"]: e for e in steps if e["step"] >= 0}
    worked = [t for t in trace if t["rows"] or t["first_tokens"]]
    assert sorted(by_step) == [t["step"] for t in worked]
    for t in worked:
        e = by_step[t["step"]]
        assert e["phase"] == {"pp": "prefill", "tg": "decode"}[t["phase"]], (t, e)
        rows = {r["slot"]: r for r in t["rows"]}
        for s in e["slots"]:
            r = rows.get(s["slot"])
            if r is not None:
                assert s["id"] == r["id"] and s["n"] == r["n"], (t, e)
                assert s["state"] == {"pp": "prefill", "tg": "decode"}[r["kind"]], (t, e)
            elif s["id"] in t["first_tokens"]:
                assert s["state"] == "decode" and s["n"] == 0, (t, e)  # the barrier opens
            else:
                assert s["state"] in ("idle", "ready"), (t, e)
            if s["id"] in t["first_tokens"]:
                assert s["n_generated"] == 1 and s["ttft_ms"] > 0, (t, e)
            elif r is not None and r["kind"] == "tg":
                assert s["gap_ms"] > 0, (t, e)
    # The short prompt waited at the barrier while the long one prefilled.
    short_id = min((s for e in steps for s in e["slots"] if s["id"] >= 0), key=lambda s: s["n_prompt"])["id"]
    barrier = [e for e in steps
               if any(s["id"] == short_id and s["state"] == "ready" for s in e["slots"])
               and any(s["id"] != short_id and s["state"] == "prefill" for s in e["slots"])]
    assert barrier, steps
    # Each request's first token came once, after which it decoded 7 more.
    for rid in {s["id"] for e in steps for s in e["slots"] if s["id"] >= 0}:
        ttfts = [s["ttft_ms"] for e in steps for s in e["slots"] if s["id"] == rid and s["ttft_ms"] >= 0]
        gaps = [s["gap_ms"] for e in steps for s in e["slots"] if s["id"] == rid and s["gap_ms"] >= 0]
        assert len(ttfts) == 1 and len(gaps) == 7, (rid, ttfts, gaps)
    assert SHORT and LONG  # the pair of test_phase_trace.py


def test_no_slots_turns_the_stream_off(cohort_bin, default_model, tmp_path):
    with serving(cohort_bin, default_model, ["-c", "512", "--no-slots"], tmp_path) as url:
        try:
            urllib.request.urlopen(url + "/v1/phase-events", timeout=10)
            raise AssertionError("the stream answered with --no-slots")
        except urllib.error.HTTPError as e:
            assert e.code == 501
            assert json.loads(e.read())["error"]["type"] == "not_supported_error"


def test_tg_quantum_parks_the_decoding_request_while_a_new_one_prefills(cohort_bin, default_model, tmp_path):
    args = ["-np", "2", "-c", "2048", "-b", "32", "--phase-policy", "cohort", "--tg-quantum", "4"]
    with serving(cohort_bin, default_model, args, tmp_path) as url:
        stream = PhaseStream(url)
        stream.wait_for(lambda ev: ev and ev[0]["type"] == "hello")
        first = threading.Thread(target=complete, args=(url, "Count to a hundred.", 48),
                                 kwargs={"ignore_eos": True})
        first.start()
        stream.wait_for(lambda ev: any(s["state"] == "decode" for e in ev if e["type"] == "step"
                                       for s in e["slots"]))
        complete(url, SHORT, 4)
        first.join()
        stream.close()
    steps = [e for e in stream.events if e["type"] == "step"]
    parked = [e for e in steps if any(s["state"] == "parked" for s in e["slots"])]
    assert parked and all(e["parked"] == 1 and e["phase"] == "prefill" for e in parked), steps
    assert any(any(s["state"] == "prefill" for s in e["slots"]) for e in parked)


def test_no_frame_is_made_while_nobody_watches(cohort_bin, default_model, tmp_path):
    with serving(cohort_bin, default_model, ARGS, tmp_path) as url:
        complete(url, SHORT, 4)  # steps with no stream open
        stream = PhaseStream(url)
        stream.wait_for(lambda ev: ev and ev[0]["type"] == "hello")
        complete(url, SHORT, 4)
        stream.wait_for(lambda ev: any(e["type"] == "step" and e["step"] >= 0 for e in ev))
        stream.close()
    steps = [e for e in stream.events if e["type"] == "step"]
    # The feed numbers the frames it made: the first seen is the first made.
    assert steps[0]["seq"] == 1, steps[0]
    assert min(e["step"] for e in steps if e["step"] >= 0) > 0  # the earlier steps made none
