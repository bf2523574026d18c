"""TLS (--ssl-cert-file, --ssl-key-file) with a self-signed certificate made
in the test: the official `openai` client over https (verifying the
certificate) completes, streamed and not; a plain HTTP request, bytes that
are neither HTTP nor TLS, and a client that never starts its handshake are
all turned away or timed out without holding a worker, and the server keeps
serving; the flags refuse half a setup or a bad file with a message naming it."""
import shutil
import socket
import ssl
import subprocess
import time

import pytest
import requests
from openai import DefaultHttpxClient, OpenAI

from conftest import SERVE_ARGS, run_cohort, serving

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def make_certificate(directory, name="server"):
    """A self-signed certificate for 127.0.0.1 and localhost, and its key (PEM files)."""
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert),
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    return cert, key


@pytest.fixture(scope="module")
def tls_server(cohort_bin, default_model, tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    cert, key = make_certificate(d)
    with serving(cohort_bin, default_model, [*SERVE_ARGS, "--ssl-cert-file", cert, "--ssl-key-file", key], d,
                 cafile=cert) as url:
        yield url, cert


def test_openai_client_over_https(tls_server):
    url, cert = tls_server
    client = OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=300,
                    http_client=DefaultHttpxClient(verify=ssl.create_default_context(cafile=str(cert))))
    common = dict(model="any", prompt="The weather today", max_tokens=12, temperature=0)
    whole = client.completions.create(**common)
    assert whole.usage.completion_tokens > 0
    chunks = list(client.completions.create(stream=True, **common))
    assert "".join(ch.choices[0].text for ch in chunks if ch.choices) == whole.choices[0].text
    chat = list(client.chat.completions.create(model="any", messages=[{"role": "user", "content": "Hi"}],
                                               max_tokens=4, temperature=0, stream=True))
    assert chat[-1].choices[0].finish_reason in ("stop", "length")
    # keep-alive over TLS: several requests on one connection
    with requests.Session() as s:
        for _ in range(3):
            assert s.get(url + "/health", verify=str(cert), timeout=30).json() == {"status": "ok"}


def test_without_the_certificate_the_client_refuses(tls_server):
    url, _ = tls_server
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(url + "/health", timeout=30)


def read_until_closed(sock, timeout=10):
    sock.settimeout(timeout)
    out = b""
    try:
        while chunk := sock.recv(4096):
            out += chunk
    except ConnectionResetError:
        pass
    return out


def test_plain_http_and_garbage_on_the_tls_port_are_turned_away(tls_server):
    url, cert = tls_server
    port = int(url.rsplit(":", 1)[1])
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]  # never say hello
    for _ in range(20):  # more than the server's workers
        with socket.create_connection(("127.0.0.1", port)) as s:
            t0 = time.monotonic()
            s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            out = read_until_closed(s)
            assert time.monotonic() - t0 < 5
            assert out == b"" or out.startswith(b"HTTP/1.1 400"), out[:200]
            assert b"HTTPS" in out or out == b"", out[:200]
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(bytes(range(256)) * 4)
        assert not read_until_closed(s).startswith(b"HTTP/1.1 200")
    for s in silent:
        s.close()
    assert requests.get(url + "/health", verify=str(cert), timeout=30).json() == {"status": "ok"}
    with socket.create_connection(("127.0.0.1", port)) as raw:  # a TLS client that leaves mid-request
        ctx = ssl.create_default_context(cafile=str(cert))
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    assert requests.get(url + "/health", verify=str(cert), timeout=30).json() == {"status": "ok"}


def test_tls_flag_errors_name_the_file(cohort_bin, default_model, tmp_path):
    cert, key = make_certificate(tmp_path)
    other_cert, other_key = make_certificate(tmp_path, "other")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n")
    missing = tmp_path / "missing.pem"
    cases = [
        (["--ssl-cert-file", cert], "--ssl-key-file"),
        (["--ssl-key-file", key], "--ssl-cert-file"),
        (["--ssl-cert-file", missing, "--ssl-key-file", key], str(missing)),
        (["--ssl-cert-file", cert, "--ssl-key-file", missing], str(missing)),
        (["--ssl-cert-file", garbage, "--ssl-key-file", key], str(garbage)),
        (["--ssl-cert-file", cert, "--ssl-key-file", garbage], str(garbage)),
        (["--ssl-cert-file", cert, "--ssl-key-file", other_key], str(other_key)),
    ]
    for args, message in cases:
        res = run_cohort(cohort_bin, "serve", "-m", default_model, "--port", "0", *args, check=False, timeout=60)
        assert res.returncode == 1 and message in res.stderr, (args, res.returncode, res.stderr)
