"""Shared fixtures: the cohort binary under test and the default model.

COHORT_BIN overrides the binary (the sanitizer build runs the same tests);
COHORT_QUANT_PROBE overrides the quant_probe test binary likewise.
"""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _default_model() -> pathlib.Path:
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
                         timeout=timeout, **kw)
    if check and res.returncode != 0:
        raise AssertionError(f"cohort {' '.join(map(str, args))} failed ({res.returncode}):\n"
                             f"{res.stderr}")
    return res
