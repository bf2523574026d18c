"""quant/ against gguf-py's numpy reference (gguf.quants), through quant_probe.

- dequantization is bit-exact (random blocks, every tensor of the default model),
  on both the scalar and the AVX2 path;
- dot products agree with a float64 reference (relative errors are printed; run
  pytest with -s to see them);
- our encoders reconstruct their input closely, and Q8_0/Q4_0/Q4_1 produce the
  same bytes as gguf-py's quantizers;
- our type table matches gguf.constants.GGML_QUANT_SIZES;
- the integer dot products of the fast CPU path (quant/vec_dot.h) match llama.cpp's
  own ggml kernels (libggml-cpu from the llama-cpp-python build, through ctypes):
  the same activation values, and dot products within float rounding.
"""
import ctypes
import pathlib
import subprocess

import numpy as np
import pytest
from gguf import GGUFReader
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as Q
from gguf.quants import dequantize as np_dequantize
from gguf.quants import quantize as np_quantize

TYPES = [Q.F32, Q.F16, Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q4_K, Q.Q5_K, Q.Q6_K]
ISAS = ["scalar", "avx2"]
# Byte offsets of the f16 scale fields in one block (ggml's block layouts).
SCALE_OFFSETS = {Q.Q8_0: [0], Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2],
                 Q.Q6_K: [208]}
# Encoders that follow ggml's reference rounding rules byte for byte.
SAME_BYTES_AS_NUMPY = {Q.F32, Q.F16, Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q4_1}
# Relative RMS reconstruction error bounds on Gaussian data (C++ tests use the same).
ERROR_BOUND = {Q.F32: 0.0, Q.F16: 2.5e-4, Q.BF16: 2e-3, Q.Q8_0: 6e-3, Q.Q4_0: 0.095,
               Q.Q4_1: 0.087, Q.Q4_K: 0.08, Q.Q5_K: 0.04, Q.Q6_K: 0.0195}
DOT_TOLERANCE = 1e-5  # relative to sum |w_i x_i|


def probe(quant_probe, *args, data=b"", check=True):
    res = subprocess.run([str(quant_probe), *map(str, args)], input=data, capture_output=True,
                         timeout=300)
    if check and res.returncode != 0:
        raise AssertionError(f"quant_probe {' '.join(map(str, args))} failed "
                             f"({res.returncode}): {res.stderr.decode(errors='replace')}")
    return res


@pytest.fixture(scope="module")
def isa_available(quant_probe):
    def available(isa):
        return probe(quant_probe, "dequant", "f32", "--isa", isa, check=False).returncode == 0
    return {isa: available(isa) for isa in ISAS}


def need_isa(isa_available, isa):
    if not isa_available[isa]:
        pytest.skip(f"this CPU cannot run the {isa} path")


def random_blocks(qtype, n_blocks, rng, raw=False):
    """uint8 array of n_blocks blocks; unless raw, scales are finite and sensible."""
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    data = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    if raw:
        return data.reshape(-1)
    if qtype == Q.F32:
        data = rng.normal(size=n_blocks).astype(np.float32).view(np.uint8).reshape(n_blocks, 4)
    elif qtype == Q.F16:
        data = rng.normal(size=n_blocks).astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
    elif qtype == Q.BF16:
        f = rng.normal(size=n_blocks).astype(np.float32).view(np.uint32) >> 16
        data = f.astype(np.uint16).view(np.uint8).reshape(n_blocks, 2)
    for off in SCALE_OFFSETS.get(qtype, []):
        scales = (0.01 * rng.normal(size=n_blocks)).astype(np.float16)
        data[:, off:off + 2] = scales.view(np.uint8).reshape(n_blocks, 2)
    return data.reshape(-1)


def reference_dequant(qtype, data):
    with np.errstate(all="ignore"):
        return np.asarray(np_dequantize(data, qtype), dtype=np.float32).reshape(-1)


def our_dequant(quant_probe, qtype, data, isa):
    out = probe(quant_probe, "dequant", qtype.name, "--isa", isa, data=data.tobytes()).stdout
    return np.frombuffer(out, dtype=np.float32)


def assert_same_bits(ours, ref, what):
    assert ours.shape == ref.shape, what
    differ = np.flatnonzero(ours.view(np.uint32) != ref.view(np.uint32))
    assert differ.size == 0, (f"{what}: {differ.size} of {ref.size} elements differ, first at "
                              f"{differ[0]}: ours {ours[differ[0]]!r} numpy {ref[differ[0]]!r}")


def assert_same_nan_aware(ours, ref, what):
    """Bit-equal where numpy is not NaN; NaN exactly where numpy has NaN (any payload)."""
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(ours), nan), f"{what}: NaN positions differ"
    assert_same_bits(ours[~nan], ref[~nan], what)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
def test_dequant_random_blocks_bit_exact(quant_probe, isa_available, qtype, isa):
    need_isa(isa_available, isa)
    rng = np.random.default_rng(100 + qtype.value)
    n_blocks = 333 if GGML_QUANT_SIZES[qtype][0] > 1 else 4099  # odd: vector body + tail
    data = random_blocks(qtype, n_blocks, rng)
    ref = reference_dequant(qtype, data)
    assert np.isfinite(ref).all()
    assert_same_bits(our_dequant(quant_probe, qtype, data, isa), ref, f"{qtype.name} {isa}")

    raw = random_blocks(qtype, n_blocks, rng, raw=True)
    assert_same_nan_aware(our_dequant(quant_probe, qtype, raw, isa), reference_dequant(qtype, raw),
                          f"{qtype.name} {isa} all-random bytes")


@pytest.mark.parametrize("isa", ISAS)
def test_every_tensor_of_default_model_bit_exact(quant_probe, isa_available, default_model, isa):
    need_isa(isa_available, isa)
    reader = GGUFReader(default_model)
    seen = {}
    for t in reader.tensors:
        if t.tensor_type not in TYPES:
            continue
        ref = reference_dequant(t.tensor_type, t.data)
        out = probe(quant_probe, "dequant-tensor", default_model, t.name, "--isa", isa).stdout
        assert_same_bits(np.frombuffer(out, dtype=np.float32), ref, f"{t.name} {isa}")
        seen[t.tensor_type.name] = seen.get(t.tensor_type.name, 0) + 1
    print(f"\n[{isa}] bit-exact tensors per type: {seen}")
    assert sum(seen.values()) == len(reader.tensors)


@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
def test_dot_matches_float64_reference(quant_probe, isa_available, qtype):
    rng = np.random.default_rng(200 + qtype.value)
    n = 4096
    row = random_blocks(qtype, n // GGML_QUANT_SIZES[qtype][0], rng)
    x = rng.normal(size=n).astype(np.float32)
    terms = reference_dequant(qtype, row).astype(np.float64) * x.astype(np.float64)
    want, scale = terms.sum(), np.abs(terms).sum()
    for isa in ISAS:
        if not isa_available[isa]:
            continue
        out = probe(quant_probe, "dot", qtype.name, n, "--isa", isa,
                    data=row.tobytes() + x.tobytes()).stdout
        got = float(out.decode())
        error = abs(got - want) / scale
        print(f"\ndot {qtype.name:5s} {isa:6s} n={n}: relative error {error:.2e}")
        assert error <= DOT_TOLERANCE, f"{qtype.name} {isa}: got {got}, want {want}"


@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
def test_quantize_reconstructs_input(quant_probe, qtype):
    rng = np.random.default_rng(300 + qtype.value)
    x = rng.normal(size=(16, 1024)).astype(np.float32)
    ours = np.frombuffer(probe(quant_probe, "quantize", qtype.name, data=x.tobytes()).stdout,
                         dtype=np.uint8)
    assert ours.size == x.size // GGML_QUANT_SIZES[qtype][0] * GGML_QUANT_SIZES[qtype][1]
    y = reference_dequant(qtype, ours)
    error = np.sqrt(np.mean((y.astype(np.float64) - x.reshape(-1)) ** 2) / np.mean(x.astype(np.float64) ** 2))
    try:
        ref = np.asarray(np_quantize(x, qtype)).view(np.uint8).reshape(-1)
    except NotImplementedError:
        ref = None
    identical = "no numpy quantizer" if ref is None else f"bytes identical to numpy: {np.array_equal(ref, ours)}"
    print(f"\nquantize {qtype.name:5s}: relative RMS error {error:.5f}; {identical}")
    assert error <= ERROR_BOUND[qtype]
    if qtype in SAME_BYTES_AS_NUMPY:
        assert ref is not None and np.array_equal(ref, ours)


# Weight type -> ggml's activation type and dot kernel (what ggml_cpu pairs them with).
VEC_DOT = {Q.Q4_0: (Q.Q8_0, "q4_0_q8_0"), Q.Q4_1: (Q.Q8_1, "q4_1_q8_1"), Q.Q8_0: (Q.Q8_0, "q8_0_q8_0"),
           Q.Q4_K: (Q.Q8_K, "q4_K_q8_K"), Q.Q5_K: (Q.Q8_K, "q5_K_q8_K"), Q.Q6_K: (Q.Q8_K, "q6_K_q8_K")}
VEC_DOT_TOLERANCE = 1e-6  # relative to sum |w_i a_i|: integer sums are exact, F32 orders differ
# (block size, bytes) of the activation blocks as ggml lays them out today; gguf-py's
# table still has the older 40-byte Q8_1 (f32 d and s).
ACT_BLOCK = {Q.Q8_0: (32, 34), Q.Q8_1: (32, 36), Q.Q8_K: (256, 292)}
Q8_K_BYTES = 292  # f32 d, int8 qs[256], int16 bsums[16]


@pytest.fixture(scope="module")
def ggml_cpu():
    """llama.cpp's CPU kernels, or skip where llama-cpp-python ships none."""
    try:
        import llama_cpp
    except ImportError:
        pytest.skip("llama-cpp-python is not installed")
    path = pathlib.Path(llama_cpp.__file__).parent / "lib" / "libggml-cpu.so"
    if not path.exists():
        pytest.skip(f"no {path}")
    lib = ctypes.CDLL(str(path))
    lib.ggml_cpu_init()  # fills the f16 tables the kernels use
    for act in ("q8_0", "q8_1", "q8_K"):
        getattr(lib, f"quantize_row_{act}").argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    for _, name in VEC_DOT.values():
        getattr(lib, f"ggml_vec_dot_{name}").argtypes = [
            ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, ctypes.c_void_p,
            ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return lib


def ggml_activations(lib, act, x):
    out = np.zeros(x.size // ACT_BLOCK[act][0] * ACT_BLOCK[act][1], dtype=np.uint8)
    getattr(lib, f"quantize_row_{act.name.lower().replace('q8_k', 'q8_K')}")(x.ctypes.data, out.ctypes.data, x.size)
    return out


def activation_values(act, data):
    """d * q of every element (Q8_K: f32 d; the others: f16 d)."""
    if act == Q.Q8_K:
        blocks = data.reshape(-1, Q8_K_BYTES)
        d = blocks[:, :4].copy().view(np.float32).astype(np.float64)
        return (d * blocks[:, 4:260].view(np.int8)).reshape(-1)
    blocks = data.reshape(-1, ACT_BLOCK[act][1])
    d = blocks[:, :2].copy().view(np.float16).astype(np.float64)
    return (d * blocks[:, -32:].view(np.int8)).reshape(-1)


def act_input(rng, n):
    """Gaussian values with block magnitudes spread over four decades."""
    x = rng.normal(size=n) * np.repeat(10.0 ** rng.uniform(-2, 2, size=n // 32), 32)
    return x.astype(np.float32)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("qtype", list(VEC_DOT), ids=lambda t: t.name)
def test_activations_match_ggml(quant_probe, isa_available, ggml_cpu, qtype, isa):
    need_isa(isa_available, isa)
    act = VEC_DOT[qtype][0]
    x = act_input(np.random.default_rng(500 + qtype.value), 4096)
    ours = np.frombuffer(probe(quant_probe, "act-quantize", qtype.name, "--isa", isa,
                               data=x.tobytes()).stdout, dtype=np.uint8)
    theirs = ggml_activations(ggml_cpu, act, x)
    if act == Q.Q8_K:
        # ggml scales by -127 / (the signed value of largest magnitude), so its d and q
        # may both be negated; the values d * q and |bsums| are the same.
        assert np.array_equal(activation_values(act, ours), activation_values(act, theirs))
        bsums = lambda b: np.abs(b.reshape(-1, Q8_K_BYTES)[:, 260:].copy().view(np.int16))
        assert np.array_equal(bsums(ours), bsums(theirs))
    else:
        assert np.array_equal(ours, theirs), f"{act.name} bytes differ from ggml's"


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("qtype", list(VEC_DOT), ids=lambda t: t.name)
def test_vec_dot_matches_ggml(quant_probe, isa_available, ggml_cpu, qtype, isa):
    need_isa(isa_available, isa)
    act, kernel = VEC_DOT[qtype]
    rng = np.random.default_rng(600 + qtype.value)
    n = 4096
    for trial in range(4):
        row = random_blocks(qtype, n // GGML_QUANT_SIZES[qtype][0], rng)
        x = act_input(rng, n)
        acts = np.frombuffer(probe(quant_probe, "act-quantize", qtype.name, "--isa", isa,
                                   data=x.tobytes()).stdout, dtype=np.uint8).copy()
        got = float(probe(quant_probe, "vec-dot", qtype.name, n, "--isa", isa,
                          data=row.tobytes() + acts.tobytes()).stdout.decode())
        want = ctypes.c_float()
        getattr(ggml_cpu, f"ggml_vec_dot_{kernel}")(n, ctypes.byref(want), 0, row.ctypes.data, 0,
                                                      acts.ctypes.data, 0, 1)
        scale = np.abs(reference_dequant(qtype, row).astype(np.float64) * activation_values(act, acts)).sum()
        error = abs(got - want.value) / scale
        assert error <= VEC_DOT_TOLERANCE, f"{qtype.name} {isa} trial {trial}: {got} vs ggml {want.value}"


def test_type_table_matches_gguf_py(quant_probe):
    ours = {}
    for line in probe(quant_probe, "types").stdout.decode().splitlines():
        type_id, name, block_size, type_size = line.split()
        ours[int(type_id)] = (name, int(block_size), int(type_size))
    theirs = {t.value: (t.name, *GGML_QUANT_SIZES[t]) for t in Q if t in GGML_QUANT_SIZES}
    # gguf-py still lists Q8_1 with f32 d and s (40 bytes); ggml's block_q8_1
    # holds two f16 (36 bytes). Q8_1 is an activation format, never in files.
    known_differences = {Q.Q8_1.value}
    for type_id, (name, block_size, type_size) in ours.items():
        assert type_id in theirs, f"{name} ({type_id}) unknown to gguf-py"
        their_name, their_block, their_size = theirs[type_id]
        assert name.upper() == their_name, type_id
        if type_id in known_differences:
            continue
        assert (block_size, type_size) == (their_block, their_size), name
    missing = sorted(set(theirs) - set(ours))
    print(f"\ngguf-py types our table lacks: {[theirs[i][0] for i in missing]}")
    assert all(i > max(ours) for i in missing), "a gap inside our table's id range"


@pytest.mark.parametrize("args, data", [
    (["dequant", "q9_9"], b""),                       # unknown type name
    (["dequant", "q4_0"], b"\0" * 17),                # not a whole block
    (["dequant", "q5_0"], b"\0" * 22),                # known type, not supported
    (["dequant", "f32", "--isa", "sse9"], b""),       # unknown ISA
    (["dot", "q8_0", "32"], b"\0" * 34),              # row without its x
    (["dot", "q4_K", "100"], b""),                    # N not a multiple of the block size
    (["quantize", "q4_K"], b"\0" * 4 * 100),          # not a whole block of floats
    (["frobnicate"], b""),
])
def test_bad_input_fails_with_error_line(quant_probe, args, data):
    res = probe(quant_probe, *args, data=data, check=False)
    assert res.returncode == 1
    assert res.stderr.decode().startswith("error:"), res.stderr
