"""Corrupt and truncated GGUF files: every one must give one clear `error:`
line and a non-zero exit, never a crash, hang or sanitizer report, and no
run's heap may outgrow the file (nothing is allocated from an unchecked count
or length): peak memory stays under that of reading the intact file plus twice
the file's size (the pages of the mapping it touched, and copies of what it
read from them, such as metadata strings).

Run with COHORT_BIN pointing at the ASan+UBSan build as well (scripts/test.sh
does), so that memory errors fail the test instead of passing silently."""
import os
import random
import shutil
import struct
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class HeaderMap:
    """Offsets of the fields of a GGUF header, found by walking it."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0
        self.counts = []        # (offset, size): counts and lengths
        self.types = []         # (offset, size): value and tensor type ids
        self.dims = []          # (offset, size): tensor dimensions
        self.offsets = []       # (offset, size): tensor data offsets
        self.boundaries = [0]   # start of each section / entry
        self._walk()

    def _u(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def _string(self):
        self.counts.append((self.pos, 8))
        n = self._u("<Q")
        self.pos += n

    def _value(self, t):
        if t == 8:
            self._string()
        elif t == 9:
            self.types.append((self.pos, 4))
            et = self._u("<I")
            self.counts.append((self.pos, 8))
            n = self._u("<Q")
            for _ in range(n):
                self._value(et)
        else:
            self.pos += SCALAR_SIZES[t]

    def _walk(self):
        self.pos = 8
        self.counts.append((self.pos, 8))
        n_tensors = self._u("<Q")
        self.counts.append((self.pos, 8))
        n_kv = self._u("<Q")
        self.boundaries.append(self.pos)
        for _ in range(n_kv):
            self._string()
            self.types.append((self.pos, 4))
            self._value(self._u("<I"))
            self.boundaries.append(self.pos)
        for _ in range(n_tensors):
            self._string()
            self.counts.append((self.pos, 4))
            n_dims = self._u("<I")
            for _ in range(n_dims):
                self.dims.append((self.pos, 8))
                self.pos += 8
            self.types.append((self.pos, 4))
            self.pos += 4
            self.offsets.append((self.pos, 8))
            self.pos += 8
            self.boundaries.append(self.pos)
        self.header_end = self.pos


# Peak resident memory may vary this much between runs of the same input
# (sanitizer quarantine, page-cache timing).
RSS_SLACK = 16 << 20


def run_info(cohort_bin, path):
    """`cohort info -m path`, killed after 120 s; the result carries the
    process's peak resident memory in bytes (`max_rss`), from wait4."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(["timeout", "-s", "KILL", "120", str(cohort_bin), "info", "-m",
                                 str(path)], stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        res = subprocess.CompletedProcess(proc.args, proc.returncode,
                                          out.read().decode(errors="replace"),
                                          err.read().decode(errors="replace"))
    res.max_rss = usage.ru_maxrss * 1024  # Linux reports KiB
    return res


class RssBound:
    """Peak memory allowed for a damaged copy of `path`: what reading the
    intact file takes, plus the file's size twice (mapped and copied)."""

    def __init__(self, cohort_bin, path):
        self.base = run_info(cohort_bin, path).max_rss
        self.size = os.path.getsize(path)

    def check(self, res, what):
        limit = self.base + 2 * self.size + RSS_SLACK
        assert res.max_rss <= limit, f"{what}: peak memory {res.max_rss} bytes > {limit}"


def assert_clean_error(res, what):
    assert res.returncode == 1, f"{what}: exit {res.returncode}\n{res.stderr[-2000:]}"
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), f"{what}: {res.stderr[-2000:]}"
    # A failed allocation would mean one sized from an unchecked header value.
    assert "out of memory" not in lines[0], f"{what}: {lines[0]}"


def assert_no_crash(res, what):
    assert res.returncode in (0, 1), f"{what}: exit {res.returncode}\n{res.stderr[-2000:]}"
    if res.returncode == 1:
        assert_clean_error(res, what)


# Runs are independent processes: a few at a time, each worker on its own copy
# of the file it damages.
WORKERS = max(1, min(4, os.cpu_count() or 1))


def in_workers(items, work):
    """work(worker, part) for each of WORKERS interleaved parts of items (the
    order within a part kept), in threads; exceptions are raised here."""
    parts = [items[i::WORKERS] for i in range(WORKERS)]
    with ThreadPoolExecutor(WORKERS) as pool:
        for f in [pool.submit(work, i, part) for i, part in enumerate(parts) if part]:
            f.result()


@pytest.fixture(scope="module")
def header(default_model):
    with open(default_model, "rb") as f:
        data = f.read(8 << 20)
    return HeaderMap(data)


def test_truncation_at_every_section_boundary_and_random_points(tmp_path, cohort_bin,
                                                                default_model, header):
    from gguf import GGUFReader
    # the end of the last tensor's data; trailing padding after it may be cut freely
    size = max(int(t.data_offset) + int(t.n_bytes) for t in GGUFReader(str(default_model)).tensors)
    rng = random.Random(1)
    cuts = set(header.boundaries) | {header.header_end, header.header_end + 1}
    cuts |= {b + d for b in header.boundaries[:50] for d in (1, 4, 7)}
    cuts |= {rng.randrange(0, header.header_end) for _ in range(40)}
    cuts |= {rng.randrange(header.header_end, size) for _ in range(40)}
    cuts |= {size - 1, size - 32}
    cuts = sorted((c for c in cuts if c < size), reverse=True)
    bound = RssBound(cohort_bin, default_model)

    def shrink(worker, part):  # shrinking one copy in place: no rewrite of the 100 MB file
        work = tmp_path / f"cut{worker}.gguf"
        shutil.copyfile(default_model, work)
        for n in part:
            with open(work, "r+b") as f:
                f.truncate(n)
            res = run_info(cohort_bin, work)
            assert_clean_error(res, f"truncated at {n}")
            bound.check(res, f"truncated at {n}")

    in_workers(cuts, shrink)


EXTREMES = [0, 1, 0x7F, 0xFF, 0x7FFF_FFFF, 0xFFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF,
            0x8000_0000_0000_0000, 0xFFFF_FFFF_FFFF_FFFF]


def flipped_files(header, rng):
    groups = {"count": header.counts, "type": header.types, "dim": header.dims,
              "offset": header.offsets}
    for name, fields in groups.items():
        picks = fields if len(fields) <= 30 else fields[:10] + rng.sample(fields[10:], 20)
        for off, width in picks:
            for v in EXTREMES:
                yield f"{name}@{off}={v:#x}", off, (v & ((1 << (8 * width)) - 1)).to_bytes(
                    width, "little")


def test_header_fields_set_to_extreme_values(tmp_path, cohort_bin, default_model, header):
    rng = random.Random(2)
    bound = RssBound(cohort_bin, default_model)
    codes = []

    def flip(worker, part):
        work = tmp_path / f"flip{worker}.gguf"
        shutil.copyfile(default_model, work)
        with open(work, "r+b") as f:
            for what, off, new in part:
                f.seek(off)
                old = f.read(len(new))
                f.seek(off)
                f.write(new)
                f.flush()
                res = run_info(cohort_bin, work)
                assert_no_crash(res, what)
                bound.check(res, what)
                codes.append(res.returncode)
                f.seek(off)
                f.write(old)

    in_workers(list(flipped_files(header, rng)), flip)
    # Most extreme values must be refused; a few (a count of 1, a valid type) stay valid.
    assert codes.count(1) > 5 * codes.count(0)


def test_random_byte_mutations_of_the_header(tmp_path, cohort_bin, default_model, header):
    rng = random.Random(3)
    base = bytearray(header.data[:header.header_end + 64])
    (tmp_path / "base.gguf").write_bytes(bytes(base))
    bound = RssBound(cohort_bin, tmp_path / "base.gguf")
    mutants = []
    for i in range(60):
        data = bytearray(base)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(0, len(data))] = rng.randrange(256)
        path = tmp_path / f"m{i}.gguf"
        path.write_bytes(bytes(data))
        mutants.append((i, path))

    def check(_worker, part):
        for i, path in part:
            res = run_info(cohort_bin, path)
            assert_no_crash(res, f"mutation {i}")
            bound.check(res, f"mutation {i}")

    in_workers(mutants, check)


def test_not_a_file_and_empty_file(tmp_path, cohort_bin):
    assert_clean_error(run_info(cohort_bin, tmp_path / "missing.gguf"), "missing")
    assert_clean_error(run_info(cohort_bin, tmp_path), "directory")
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    assert_clean_error(run_info(cohort_bin, empty), "empty")
