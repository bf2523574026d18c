"""cohort's GGUF reader and writer against the reference implementation
(the `gguf` package): the same metadata, tensor layout and bytes."""
import numpy as np
import pytest
from gguf import GGUFReader, GGUFValueType, GGUFWriter

from conftest import run_cohort
from gguf_compare import assert_same_metadata, assert_same_tensors, cohort_view

TYPES = ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q4_k", "q5_k", "q6_k"]


def test_reads_every_value_type_written_by_the_reference(tmp_path, cohort_bin):
    path = tmp_path / "types.gguf"
    w = GGUFWriter(str(path), "llama")
    w.add_uint8("v.u8", 255)
    w.add_int8("v.i8", -128)
    w.add_uint16("v.u16", 65535)
    w.add_int16("v.i16", -32768)
    w.add_uint32("v.u32", 4294967295)
    w.add_int32("v.i32", -2147483648)
    w.add_float32("v.f32", 3.1415927)
    w.add_uint64("v.u64", 18446744073709551615)
    w.add_int64("v.i64", -9223372036854775808)
    w.add_float64("v.f64", 2.718281828459045)
    w.add_bool("v.true", True)
    w.add_bool("v.false", False)
    w.add_string("v.str", "naïve 日本語 🙂\n\ttabs")
    w.add_string("v.empty", "")
    w.add_array("v.ints", [1, -2, 3])
    w.add_array("v.floats", [0.5, -1.25])
    w.add_array("v.strs", ["a", "", "ü"])
    w.add_array("v.bools", [True, False])
    w.add_key_value("v.nested", [[1, 2], [3]], GGUFValueType.ARRAY,
                    sub_type=GGUFValueType.ARRAY)
    w.add_tensor("t.f32", np.arange(12, dtype=np.float32).reshape(3, 4))
    w.add_tensor("t.f16", np.ones((2, 32), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    ours = cohort_view(cohort_bin, path)
    reader = GGUFReader(str(path))
    assert_same_metadata(ours, reader)
    assert_same_tensors(ours, reader, path)
    assert ours["metadata"]["v.nested"]["value"] == [[1, 2], [3]]


def test_default_model_matches_the_reference_reader(cohort_bin, default_model):
    ours = cohort_view(cohort_bin, default_model)
    reader = GGUFReader(str(default_model))
    assert_same_metadata(ours, reader)
    assert_same_tensors(ours, reader, default_model)
    assert ours["architecture"] == "llama"
    assert ours["file_type"] == "Q4_1"
    assert ours["n_vocab"] == 49152
    assert ours["chat_template"] is True
    assert ours["n_params"] == sum(int(t.n_elements) for t in reader.tensors)


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
@pytest.mark.parametrize("qtype", TYPES)
def test_mkmodel_files_read_identically_by_the_reference(tmp_path, cohort_bin, arch, qtype):
    path = tmp_path / f"tiny-{arch}-{qtype}.gguf"
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--arch", arch, "--type", qtype,
               "-o", path)
    reader = GGUFReader(str(path))
    ours = cohort_view(cohort_bin, path)
    assert_same_metadata(ours, reader)
    assert_same_tensors(ours, reader, path)
    names = {t.name for t in reader.tensors}
    assert ("blk.0.attn_q.bias" in names) == (arch == "qwen2")
    assert ("blk.0.attn_q_norm.weight" in names) == (arch == "qwen3")
    matrices = [t for t in reader.tensors if len(t.shape) == 2]
    assert {t.tensor_type.name.lower() for t in matrices} == {qtype}


def test_mkmodel_is_deterministic_and_seeded(tmp_path, cohort_bin):
    a, b, c = (tmp_path / n for n in ("a.gguf", "b.gguf", "c.gguf"))
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--type", "q8_0", "-t", "1", "-o", a)
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--type", "q8_0", "-t", "2", "-o", b)
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--type", "q8_0", "-s", "7", "-o", c)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_mkmodel_weight_scale_keeps_activations_of_order_one(tmp_path, cohort_bin):
    from gguf.quants import dequantize
    path = tmp_path / "tiny.gguf"
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--type", "q4_k", "-o", path)
    for t in GGUFReader(str(path)).tensors:
        w = dequantize(t.data, t.tensor_type).astype(np.float64)
        assert np.isfinite(w).all(), t.name
        if len(t.shape) == 2:
            fan_in = int(t.shape[0])
            assert abs(w.std() * np.sqrt(fan_in) - 1.0) < 0.1, t.name
        elif t.name.endswith("norm.weight"):
            assert abs(w.mean() - 1.0) < 0.05, t.name


def test_mkmodel_vocab_from_copies_the_tokenizer(tmp_path, cohort_bin, default_model):
    path = tmp_path / "smol-vocab.gguf"
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--type", "f16", "--vocab-from",
               default_model, "-o", path)
    ours = cohort_view(cohort_bin, path)
    ref = cohort_view(cohort_bin, default_model)
    for key, value in ref["metadata"].items():
        if key.startswith("tokenizer."):
            assert ours["metadata"][key] == value, key
    emb = next(t for t in ours["tensors"] if t["name"] == "token_embd.weight")
    assert emb["shape"] == [256, 49152]


def test_mkmodel_ctx_train_sets_the_context_length(tmp_path, cohort_bin):
    path = tmp_path / "long.gguf"
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--ctx-train", "131072", "-o", path)
    assert GGUFReader(path).fields["llama.context_length"].contents() == 131072
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "-o", path)
    assert GGUFReader(path).fields["llama.context_length"].contents() == 2048  # the preset's


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
@pytest.mark.parametrize("qtype", ["f16", "q8_0", "q4_k", "q6_k"])
def test_llama_cpp_loads_and_runs_mkmodel_files(tmp_path, cohort_bin, arch, qtype):
    from llama_cpp import Llama
    path = tmp_path / f"tiny-{arch}-{qtype}.gguf"
    run_cohort(cohort_bin, "mkmodel", "--preset", "tiny", "--arch", arch, "--type", qtype,
               "-o", path)
    llm = Llama(model_path=str(path), n_ctx=64, logits_all=True, verbose=False, n_threads=2)
    llm.eval([5, 6, 7, 8])
    logits = np.asarray(llm.scores[:4])
    assert logits.shape == (4, 512)
    assert np.isfinite(logits).all()
    # random weights of the right scale give spread, non-degenerate logits
    assert 0.3 < logits.std() < 10


def test_unknown_preset_type_and_arch_are_clear_errors(tmp_path, cohort_bin):
    cases = [
        (["--preset", "nope", "--type", "f16"], "unknown preset 'nope'"),
        (["--preset", "tiny", "--type", "q9_9"], "unknown tensor type 'q9_9'"),
        (["--preset", "tiny", "--type", "q5_0"], "cannot write type q5_0"),
        (["--preset", "tiny", "--arch", "gpt5", "--type", "f16"], "unsupported architecture"),
        (["--preset", "tiny", "--ctx-train", "-1"], "--ctx-train must be 1 to"),
    ]
    for args, message in cases:
        res = run_cohort(cohort_bin, "mkmodel", *args, "-o", tmp_path / "x.gguf", check=False)
        assert res.returncode != 0
        assert res.stderr.startswith("error: ") and message in res.stderr, res.stderr
