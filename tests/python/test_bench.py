"""`cohort bench` on the default model: llama-bench's rows and fields, -d
(tests after tokens already in the cache) and the errors of impossible flags."""
import json

from conftest import run_cohort


def bench_json(cohort_bin, model, *args):
    res = run_cohort(cohort_bin, "bench", "-m", model, "-r", "1", "-o", "json", *args)
    return json.loads(res.stdout)


def test_depth_runs_every_test_at_every_depth(cohort_bin, default_model):
    rows = bench_json(cohort_bin, default_model, "-p", "8", "-n", "4", "-d", "0,24")
    got = [(r["n_prompt"], r["n_gen"], r["n_depth"]) for r in rows]
    assert got == [(8, 0, 0), (0, 4, 0), (8, 0, 24), (0, 4, 24)]
    for r in rows:
        assert r["avg_ts"] > 0 and len(r["samples_ns"]) == 1
        # The timed tokens only: a rate of n_prompt + n_gen tokens, not of the depth.
        expected = 1e9 * (r["n_prompt"] + r["n_gen"]) / r["samples_ns"][0]
        assert abs(r["avg_ts"] - expected) <= 1e-6 * expected


def test_markdown_names_the_depth_as_llama_bench(cohort_bin, default_model):
    res = run_cohort(cohort_bin, "bench", "-m", default_model, "-p", "0", "-n", "2", "-d", "16", "-r", "1")
    assert "| tg2 @ d16 |" in res.stdout


def test_impossible_depths_are_refused(cohort_bin, default_model):
    res = run_cohort(cohort_bin, "bench", "-m", default_model, "-d", "-5", check=False)
    assert res.returncode != 0 and "-d must list depths of at least 0" in res.stderr
    res = run_cohort(cohort_bin, "bench", "-m", default_model, "--npl", "2", "-d", "8", check=False)
    assert res.returncode != 0 and "-d applies to single-sequence tests" in res.stderr
