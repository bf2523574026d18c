"""`cohort serve` answers at the HTTP level as llama-server does: the CORS
preflight is 200 with the request's Origin echoed, credentials allowed and
llama-server's methods and headers (the cases of llama.cpp's
test_security.py), --cors-origins localhost echoes local origins only, and
every response carries Process-Start-Time-Unix (llama-server: on /metrics),
and --host takes a comma list of addresses."""
import socket
import time

import pytest
import requests

from conftest import SERVE_ARGS, run_cohort, serving

TIMEOUT = (5, 300)
PREFLIGHT = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "Authorization"}


@pytest.mark.parametrize("origin,header,value", [
    ("localhost", "Access-Control-Allow-Origin", "localhost"),
    ("web.mydomain.fr", "Access-Control-Allow-Origin", "web.mydomain.fr"),
    ("origin", "Access-Control-Allow-Credentials", "true"),
    ("web.mydomain.fr", "Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"),
    ("web.mydomain.fr", "Access-Control-Allow-Headers", "*"),
])
def test_cors_preflight_as_llama_server(cohort_server, origin, header, value):
    r = requests.options(cohort_server + "/completions", headers={"Origin": origin, **PREFLIGHT}, timeout=TIMEOUT)
    assert r.status_code == 200
    assert r.headers[header] == value


def test_responses_echo_the_origin(cohort_server):
    origin = {"Origin": "https://app.example.org"}
    r = requests.post(cohort_server + "/v1/completions", json={"prompt": "Hi", "max_tokens": 2},
                      headers=origin, timeout=TIMEOUT)
    assert r.status_code == 200
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.org"
    assert "Origin" in r.headers["Vary"]
    r = requests.post(cohort_server + "/v1/completions", json={"prompt": "Hi", "max_tokens": 2, "stream": True},
                      headers=origin, timeout=TIMEOUT)
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.org"
    assert requests.get(cohort_server + "/nope", headers=origin, timeout=TIMEOUT).headers[
        "Access-Control-Allow-Origin"] == "https://app.example.org"


def test_process_start_time_on_every_response(cohort_server):
    now = time.time()
    seen = set()
    for method, path in [("GET", "/metrics"), ("GET", "/health"), ("GET", "/v1/models"), ("GET", "/nope"),
                         ("OPTIONS", "/v1/completions"), ("POST", "/tokenize")]:
        r = requests.request(method, cohort_server + path, json={"content": "hi"}, timeout=TIMEOUT)
        seen.add(r.headers["Process-Start-Time-Unix"])
    assert len(seen) == 1
    start = int(seen.pop())
    assert now - 600 < start <= now


def test_cors_origins_localhost(cohort_bin, default_model, tmp_path):
    with serving(cohort_bin, default_model, [*SERVE_ARGS, "--cors-origins", "localhost"], tmp_path) as url:
        for origin in ["http://localhost", "http://localhost:8080", "http://127.0.0.1:3000", "http://[::1]:3000"]:
            r = requests.options(url + "/completions", headers={"Origin": origin, **PREFLIGHT}, timeout=TIMEOUT)
            assert r.status_code == 200
            assert r.headers["Access-Control-Allow-Origin"] == origin
        for origin in ["http://web.mydomain.fr", "http://notlocalhost", "http://localhost.evil.com"]:
            r = requests.options(url + "/completions", headers={"Origin": origin, **PREFLIGHT}, timeout=TIMEOUT)
            assert r.status_code == 200
            assert "Access-Control-Allow-Origin" not in r.headers


def _ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="IPv6 loopback is unavailable")
def test_host_takes_a_list_of_addresses(cohort_bin, default_model, tmp_path):
    with serving(cohort_bin, default_model, [*SERVE_ARGS, "--host", "127.0.0.1,::1"], tmp_path) as url:
        port = url.rsplit(":", 1)[1]
        direct = requests.Session()
        direct.trust_env = False  # no proxy for [::1], whatever NO_PROXY says
        for base in (f"http://127.0.0.1:{port}", f"http://[::1]:{port}"):
            assert direct.get(base + "/health", timeout=TIMEOUT).status_code == 200
            r = direct.post(base + "/completion", json={"prompt": "Hi", "n_predict": 2}, timeout=TIMEOUT)
            assert r.status_code == 200 and r.json()["tokens_predicted"] == 2


def test_host_list_with_an_empty_address_is_refused(cohort_bin, default_model):
    r = run_cohort(cohort_bin, "serve", "-m", default_model, "--port", "0", "--host", "127.0.0.1,", check=False,
                   timeout=60)
    assert r.returncode != 0 and "--host" in r.stderr and "empty address" in r.stderr
