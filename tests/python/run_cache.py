"""Results computed once per test run.

scripts/test.sh runs the llama.cpp comparisons twice: against the llama.cpp
built for this CPU, then against the one built without AVX-512. Only
llama.cpp's side differs between the two; cohort's logits, perplexities and
generations and the F64 reference are the same computation both times. With
COHORT_TEST_RESULTS_CACHE naming a folder (test.sh empties it at the start
of a run), those results are stored there under a key of everything they
depend on (the binary's identity, the bytes of every file read, the
arguments), and the second run reads them instead of computing them again.
Unset, everything is computed each time."""
import hashlib
import os
import pathlib
import pickle

_digests = {}


def file_key(path):
    """The SHA-256 of a file's bytes (remembered while its size and time stay)."""
    st = os.stat(path)
    memo = (str(path), st.st_size, st.st_mtime_ns)
    if memo not in _digests:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _digests[memo] = h.hexdigest()
    return _digests[memo]


def binary_key(path):
    """The binary under test: its path, size and modification time (the run
    does not rebuild it)."""
    st = os.stat(path)
    return (str(pathlib.Path(path).resolve()), st.st_size, st.st_mtime_ns)


def arg_key(arg):
    """An argument as it matters: a file's bytes, or the text itself."""
    return ("file", file_key(arg)) if os.path.isfile(str(arg)) else str(arg)


def cached(kind, key, compute):
    """compute(), or its stored result for (kind, key) in this run's folder."""
    folder = os.environ.get("COHORT_TEST_RESULTS_CACHE")
    if not folder:
        return compute()
    name = hashlib.sha256(repr((kind, key)).encode()).hexdigest()
    path = pathlib.Path(folder) / f"{kind}-{name}.pickle"
    if path.exists():
        return pickle.loads(path.read_bytes())
    value = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(pickle.dumps(value))
    tmp.replace(path)
    return value
