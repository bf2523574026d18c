"""`cohort bench-serve` against a real `cohort serve` with the default model:
its JSON report agrees with the server's own counters and with itself
(token counts, TTFT before the end, one ITL gap per token after the first),
scenarios are sent at their times, and bad flags, bad scenario files and an
unreachable server end with a clear `error:` line and a non-zero status."""
import json
import re
import socket
import urllib.request

import pytest

from conftest import run_cohort
from test_phase_trace import server as serve


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(cohort_bin, default_model, tmp_path_factory):
    """(url, port) of `cohort serve` with 4 slots on a free port."""
    with serve(cohort_bin, default_model, tmp_path_factory.mktemp("bench_serve"), "cohort",
               batch=512) as (url, _):
        yield url, int(url.rsplit(":", 1)[1])


def metrics(url):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^cohort:(\w+) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def bench(cohort_bin, port, *args, check=True):
    return run_cohort(cohort_bin, "bench-serve", "--port", port, *args, check=check, timeout=120)


def test_random_workload_report_matches_the_server(cohort_bin, server):
    url, port = server
    before = metrics(url)
    res = bench(cohort_bin, port, "--num-prompts", 6, "--random-input-len", 24, "--random-output-len", 8,
                "--random-range-ratio", 0.25, "--request-rate", "inf", "--max-concurrency", 4, "--seed", 3,
                "--label", "test", "-o", "json")
    after = metrics(url)
    report = json.loads(res.stdout)
    s, reqs = report["summary"], report["requests"]
    assert report["label"] == "test"
    assert report["config"]["prompt_words_calibrated"] is True
    assert s["completed"] == 6 and s["failed"] == 0 and len(reqs) == 6
    # the server's view: as many requests and generated tokens as the report says
    assert after["requests_total"] - before["requests_total"] == 6
    assert after["tokens_predicted_total"] - before["tokens_predicted_total"] == s["output_tokens"]
    assert s["output_tokens"] == sum(r["completion_tokens"] for r in reqs)
    n_gaps = 0
    for r in reqs:
        assert r["ok"] and r["error"] is None and r["http_status"] == 200, r
        assert 6 <= r["max_tokens"] <= 10
        assert r["completion_tokens"] == r["max_tokens"]           # ignore_eos: exactly max_tokens
        assert r["prompt_tokens"] == r["expected_prompt_tokens"]   # calibrated made-up prompts
        assert sum(r["chunk_tokens"]) == r["completion_tokens"]
        assert len(r["chunk_s"]) - 1 == r["completion_tokens"] - 1  # one ITL gap per token after the first
        assert r["send_s"] <= r["first_token_s"] <= r["end_s"]
        assert r["chunk_s"] == sorted(r["chunk_s"]) and r["chunk_s"][-1] <= r["end_s"]
        n_gaps += len(r["chunk_s"]) - 1
    assert s["itl_ms"]["n"] == n_gaps
    assert s["ttft_ms"]["n"] == 6 and s["ttft_ms"]["p50"] <= s["ttft_ms"]["max"] <= s["e2e_ms"]["max"]
    assert s["makespan_s"] >= max(r["end_s"] for r in reqs) - min(r["send_s"] for r in reqs) - 1e-9
    # the server's queue wait (its last chunk's timings) ends before the first token
    assert s["queue_ms"]["n"] == 6
    for r in reqs:
        assert 0 <= r["server_queue_ms"] <= (r["first_token_s"] - r["send_s"]) * 1e3 + 1


def test_scenario_is_sent_at_its_times_and_reported_in_markdown(cohort_bin, server, tmp_path):
    _, port = server
    scenario = tmp_path / "two.json"
    scenario.write_text(json.dumps([
        {"name": "first", "at": 0, "prompt": "Count to five:", "max_tokens": 4},
        {"name": "second", "at": 0.3, "prompt_tokens": 40, "max_tokens": 3},
    ]))
    saved = tmp_path / "result.json"
    res = bench(cohort_bin, port, "--scenario", scenario, "--save-result", saved, "-o", "md")
    assert "## bench-serve: two" in res.stdout
    assert "| successful requests | 2 |" in res.stdout and "| failed requests | 0 |" in res.stdout
    assert "| TTFT |" in res.stdout and "| ITL |" in res.stdout
    report = json.loads(saved.read_text())
    first, second = report["requests"]
    assert (first["name"], second["name"]) == ("first", "second")
    assert second["scheduled_s"] == 0.3 and second["send_s"] >= 0.3
    assert second["prompt_tokens"] == 40
    assert [first["completion_tokens"], second["completion_tokens"]] == [4, 3]


def test_response_format_is_sent_and_the_masks_share_is_reported(cohort_bin, server, tmp_path):
    """--response-format puts the object into every request: the server
    computes grammar masks for it (its /metrics, which the report carries
    as config.server), and none without it."""
    url, port = server
    form = {"type": "json_schema", "json_schema": {"name": "t", "schema": {
        "type": "object", "properties": {"items": {"type": "array", "minItems": 40,
                                                   "items": {"type": "integer", "minimum": 0, "maximum": 9}}},
        "required": ["items"]}}}
    path = tmp_path / "form.json"
    path.write_text(json.dumps(form))
    common = ["--num-prompts", 3, "--random-input-len", 16, "--random-output-len", 12, "--request-rate", "inf",
              "--no-ignore-eos", "--temperature", 1, "-o", "json"]
    plain = json.loads(bench(cohort_bin, port, *common).stdout)
    assert plain["config"]["server"]["grammar_mask_steps"] == 0
    assert plain["config"]["server"]["step_seconds"] > 0
    before = metrics(url)
    res = bench(cohort_bin, port, *common, "--response-format", path)
    report = json.loads(res.stdout)
    assert report["config"]["response_format"] == form
    assert report["summary"]["completed"] == 3
    # the schema's answer is longer than 12 tokens: every request runs to its limit
    assert all(r["completion_tokens"] == 12 for r in report["requests"])
    server = report["config"]["server"]
    assert server["grammar_mask_steps"] >= 12
    assert 0 < server["grammar_mask_seconds"] < server["step_seconds"]
    assert server["grammar_mask_share"] == pytest.approx(server["grammar_mask_seconds"] / server["step_seconds"])
    assert metrics(url)["grammar_mask_steps_total"] - before["grammar_mask_steps_total"] == server["grammar_mask_steps"]


@pytest.mark.parametrize("args, message", [
    (["--arrival", "gamma"], "--arrival"),
    (["--request-rate", "fast"], "--request-rate"),
    (["--num-prompts", "0"], "--num-prompts"),
    (["-o", "xml"], "--output"),
    (["--no-such-flag"], "no-such-flag"),
])
def test_bad_flags_give_a_clear_error(cohort_bin, args, message):
    res = run_cohort(cohort_bin, "bench-serve", "--port", _free_port(), *args, check=False, timeout=30)
    assert res.returncode != 0
    assert res.stderr.startswith("error:") and message in res.stderr, res.stderr


def test_bad_scenario_file_names_the_file_and_field(cohort_bin, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"at": 0, "prompt_tokens": 10}]')
    res = run_cohort(cohort_bin, "bench-serve", "--port", _free_port(), "--scenario", bad, check=False, timeout=30)
    assert res.returncode != 0
    assert res.stderr.startswith("error:") and "bad.json" in res.stderr and "max_tokens" in res.stderr, res.stderr


def test_unreachable_server_is_an_error(cohort_bin):
    port = _free_port()
    res = run_cohort(cohort_bin, "bench-serve", "--port", port, "--num-prompts", 1, check=False, timeout=30)
    assert res.returncode != 0
    assert res.stderr.startswith("error:") and f"cannot connect to 127.0.0.1:{port}" in res.stderr, res.stderr


def test_logprobs_time_every_token_where_a_character_spans_tokens(cohort_bin, server, tmp_path):
    """Greedy emoji from the default model are several tokens each: without
    --logprobs the server sends a chunk only once a character is whole, so
    chunks are fewer than tokens; with it every token comes in a chunk of its
    own (its text empty until the character is whole), each one timed."""
    _, port = server
    scenario = tmp_path / "emoji.json"
    scenario.write_text(json.dumps([{"name": "emoji", "at": 0, "prompt": "Emoji story: 🦄🐉🧚🦄🐉🧚🦄",
                                     "max_tokens": 12}]))
    plain = json.loads(bench(cohort_bin, port, "--scenario", scenario, "-o", "json").stdout)
    counted = json.loads(bench(cohort_bin, port, "--scenario", scenario, "--logprobs", "-o", "json").stdout)
    assert plain["config"]["logprobs"] is False and counted["config"]["logprobs"] is True
    p, c = plain["requests"][0], counted["requests"][0]
    assert p["completion_tokens"] == c["completion_tokens"] == 12
    assert len(p["chunk_s"]) < 12, p["chunk_s"]  # characters held until whole
    assert c["chunk_tokens"] == [1] * 12
    assert plain["summary"]["itl_ms"]["n"] == len(p["chunk_s"]) - 1
    assert counted["summary"]["itl_ms"]["n"] == 11
