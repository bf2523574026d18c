#!/usr/bin/env bash
# GPU tests, for a machine with a CUDA device, run from a build configured
# with -DCOHORT_CUDA=ON (COHORT_BUILD names it; default build/):
#   1. `cohort devices` lists the devices and peer access,
#   2. the CUDA unit tests (cohort_tests --gtest_filter='Cuda*'), with the
#      first model file, and the tests that read a model file once per model
#      file of every supported type written by `cohort mkmodel`; a skipped
#      CUDA test fails the run (here every one must really run); the kernel
#      tests print one `[ rel-l2   ]` line per comparison,
#   3. the same CUDA tests once more under `compute-sanitizer --tool memcheck`
#      (one model file), failing on any error it reports,
#   4. the kernel benchmark (cuda_kernel_bench), JSON lines kept as
#      kernel-bench.jsonl,
#   5. `cohort mkmodel` of the 8B presets and the time to load one, as figures
#      (COHORT_GPU_SKIP_8B=1 leaves them out).
# Writes logs under ${OUT:-/tmp/cohort-gpu}.
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
BIN=${COHORT_BUILD:-build}/bin
LOGS=${OUT:-/tmp/cohort-gpu}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$LOGS"

echo "== devices"
"$BIN/cohort" devices | tee "$LOGS/devices.txt"
"$BIN/cohort" devices --json >"$LOGS/devices.json"

echo "== CUDA unit tests, one model file per type"
models=()
for t in f32 f16 bf16 q8_0 q4_0 q4_1 q4_k q5_k q6_k; do
  "$BIN/cohort" mkmodel --preset tiny --type "$t" -o "$WORK/tiny-$t.gguf" 2>/dev/null
  models+=("$WORK/tiny-$t.gguf")
done
"$BIN/cohort" mkmodel --preset smollm-135m --type q4_1 -o "$WORK/smollm-q4_1.gguf" 2>/dev/null
models+=("$WORK/smollm-q4_1.gguf")
# The kernel tests do not read the model: all of them run with the first
# file, the model-file tests with every file.
filter='Cuda*'
for m in "${models[@]}"; do
  log="$LOGS/cuda-tests-$(basename "$m" .gguf).txt"
  COHORT_TEST_MODEL=$m "$BIN/cohort_tests" --gtest_filter="$filter" >"$log" 2>&1 ||
    { tail -30 "$log"; echo "FAILED on $m"; exit 1; }
  if grep -q "SKIPPED \]" "$log"; then grep "SKIPPED" "$log"; echo "a CUDA test was skipped"; exit 1; fi
  echo "$(basename "$m"): $(grep -E '^\[  PASSED  \]' "$log")"
  filter='CudaDequantize.EqualsTheCpuOnEveryTensorOfAModel'
done

echo "== CUDA unit tests under compute-sanitizer memcheck ($(basename "${models[0]}"))"
SANITIZER=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
log="$LOGS/cuda-tests-memcheck.txt"
COHORT_TEST_MODEL=${models[0]} "$SANITIZER" --tool memcheck --error-exitcode 1 --print-limit 20 \
  "$BIN/cohort_tests" --gtest_filter='Cuda*' >"$log" 2>&1 ||
  { tail -40 "$log"; echo "memcheck FAILED"; exit 1; }
grep -E "ERROR SUMMARY|^\[  PASSED  \]" "$log" || true

echo "== kernel benchmark"
"$BIN/cuda_kernel_bench" | tee "$LOGS/kernel-bench.jsonl"

[ -n "${COHORT_GPU_SKIP_8B:-}" ] && { echo "== all GPU tests passed (8B mkmodel figures skipped)"; exit 0; }
echo "== mkmodel of the 8B presets (figures)"
for spec in "llama3-8b q4_k" "qwen3-8b q4_k" "llama3-8b f16"; do
  set -- $spec
  out="$WORK/$1-$2.gguf"
  /usr/bin/time -f "$1 $2: %e s wall, %M KB peak RSS" "$BIN/cohort" mkmodel --preset "$1" --type "$2" -o "$out" 2>&1 |
    grep -v "^mkmodel: [0-9]* matrices" | tee -a "$LOGS/mkmodel.txt"
  ls -l "$out" | awk '{print "  " $5 / 2^30 " GiB"}' | tee -a "$LOGS/mkmodel.txt"
  "$BIN/cohort" info -m "$out" 2>&1 | grep -E "^info: opened" | tee -a "$LOGS/mkmodel.txt"
  if [ "$spec" = "llama3-8b q4_k" ]; then
    "$BIN/cohort" run -m "$out" -p Hi -n 1 --temp 0 2>&1 | grep -E "ready in" | tee -a "$LOGS/mkmodel.txt"
  fi
  rm -f "$out"
done
echo "== all GPU tests passed"
