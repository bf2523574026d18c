#!/usr/bin/env python3
"""Writes small seed GGUF files for the fuzzer with the reference writer
(the `gguf` package): every metadata value type, nested arrays, a vocabulary
fragment and tensors of several block types."""
import pathlib
import sys

import numpy as np
from gguf import GGUFWriter, GGMLQuantizationType, GGUFValueType


def write(path, arch, build):
    w = GGUFWriter(str(path), arch)
    build(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def all_types(w):
    w.add_uint8("t.u8", 7)
    w.add_int8("t.i8", -7)
    w.add_uint16("t.u16", 700)
    w.add_int16("t.i16", -700)
    w.add_uint32("t.u32", 70000)
    w.add_int32("t.i32", -70000)
    w.add_float32("t.f32", 0.5)
    w.add_uint64("t.u64", 1 << 40)
    w.add_int64("t.i64", -(1 << 40))
    w.add_float64("t.f64", 0.25)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo")
    w.add_array("t.arr", [1, 2, 3])
    w.add_array("t.strs", ["a", "bc", ""])
    w.add_key_value("t.nested", [[1, 2], [3]], GGUFValueType.ARRAY,
                    sub_type=GGUFValueType.ARRAY)
    w.add_tensor("f32", np.arange(16, dtype=np.float32))


def vocab(w):
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(["a", "b", "ab", "<s>"])
    w.add_token_types([1, 1, 1, 3])
    w.add_token_merges(["a b"])
    w.add_bos_token_id(3)


def quantized(w):
    rng = np.random.default_rng(0)
    for qt, n in [(GGMLQuantizationType.Q8_0, 34), (GGMLQuantizationType.Q4_K, 144),
                  (GGMLQuantizationType.Q6_K, 210), (GGMLQuantizationType.F16, 64)]:
        raw = rng.integers(0, 255, size=(2, n), dtype=np.uint8)
        w.add_tensor(qt.name.lower(), raw, raw_dtype=qt)
    w.add_context_length(128)


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    write(out / "all_types.gguf", "llama", all_types)
    write(out / "vocab.gguf", "llama", vocab)
    write(out / "quantized.gguf", "qwen3", quantized)
    write(out / "empty.gguf", "llama", lambda w: None)


if __name__ == "__main__":
    main()
