"""Helpers to compare cohort's view of a GGUF file with the reference reader
(gguf-py's GGUFReader)."""
import json

import numpy as np
from gguf import GGUFReader, GGUFValueType

from conftest import run_cohort

SCALAR_NAMES = {
    GGUFValueType.UINT8: "uint8", GGUFValueType.INT8: "int8", GGUFValueType.UINT16: "uint16",
    GGUFValueType.INT16: "int16", GGUFValueType.UINT32: "uint32", GGUFValueType.INT32: "int32",
    GGUFValueType.FLOAT32: "float32", GGUFValueType.BOOL: "bool", GGUFValueType.STRING: "string",
    GGUFValueType.ARRAY: "array", GGUFValueType.UINT64: "uint64", GGUFValueType.INT64: "int64",
    GGUFValueType.FLOAT64: "float64",
}


def cohort_view(cohort_bin, path):
    return json.loads(run_cohort(cohort_bin, "info", "-m", path, "--json", "--full").stdout)


def flatten(v):
    return [x for item in v for x in flatten(item)] if isinstance(v, list) else [v]


def same_value(ours, ref, vtype):
    """Exact equality; float32 values are compared after rounding ours to f32."""
    if isinstance(ref, list):
        return isinstance(ours, list) and len(ours) == len(ref) and all(
            same_value(o, r, None) for o, r in zip(ours, ref))
    if vtype == GGUFValueType.FLOAT32 or isinstance(ref, (float, np.floating)):
        return np.float32(ours) == np.float32(ref) or (np.isnan(ref) and ours is None)
    return ours == ref


def assert_same_metadata(ours, reader: GGUFReader):
    ref_fields = {k: f for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    assert list(ours["metadata"].keys()) == list(ref_fields.keys())
    for key, field in ref_fields.items():
        got = ours["metadata"][key]
        assert got["type"] == SCALAR_NAMES[field.types[0]], key
        if field.types[0] == GGUFValueType.ARRAY and len(field.types) > 1:
            assert got["elem_type"] == SCALAR_NAMES[field.types[1]], key
        ref = field.contents()
        if len(field.types) > 2:  # nested arrays: the reference flattens them
            got = dict(got, value=flatten(got["value"]))
        assert same_value(got["value"], ref, field.types[-1]), (key, got["value"], ref)


def assert_same_tensors(ours, reader: GGUFReader, path):
    assert [t["name"] for t in ours["tensors"]] == [t.name for t in reader.tensors]
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    for mine, ref in zip(ours["tensors"], reader.tensors):
        assert mine["type"].lower() == ref.tensor_type.name.lower(), ref.name
        assert mine["shape"] == [int(d) for d in ref.shape], ref.name
        assert mine["offset"] == ref.data_offset, ref.name
        assert mine["n_bytes"] == ref.n_bytes, ref.name
        ref_bytes = np.asarray(ref.data).view(np.uint8).reshape(-1)
        ours_bytes = raw[mine["offset"]:mine["offset"] + mine["n_bytes"]]
        assert np.array_equal(ref_bytes, ours_bytes), ref.name
