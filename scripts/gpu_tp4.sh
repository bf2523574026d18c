#!/usr/bin/env bash
# The four-GPU run, for a machine with four NVIDIA GPUs joined by NVLink (four
# H200s), from a build configured with -DCOHORT_CUDA=ON (COHORT_BUILD names
# it; default build/): how tensor parallelism and each AllReduce transport
# scale from one GPU to 2, 3 and 4, against the ceilings of the same machine
# measured in the same run. Stages (TP4_STAGES picks them, default all):
#   1. `cohort devices` (the peer-access matrix) and each GPU's copy and BF16
#      GEMM rates (cuda_kernel_bench) as devices.{txt,json},
#      ceilings-cuda<N>.jsonl;
#   2. `cohort ar-bench -ar nccl,host,p2p` from 8 B to 256 MiB, in and out of
#      CUDA graphs, on cuda0..cuda<n-1> for n = 2, 3, 4 (ar-bench-<n>.json);
#      targets: p2p at 4 ranks in a graph <= 5 us at 8 KiB and <= 12 us at
#      512 KiB, and below NCCL at every size;
#   3. correctness on real peers: the communicator and tensor-parallel unit
#      tests (host and p2p spread over the GPUs against the rank-order sum
#      rounded in double arithmetic; a skipped test fails the stage); the
#      perplexity of `mkmodel --preset llama3-8b --type bf16` over CHUNKS
#      (default 6) x 512 tokens on one GPU, then with -sm tensor on 2, 3 and 4
#      GPUs (-ar p2p, even splits, and -ts 0.4,0.3,0.2,0.1 on 4) against it
#      (mean KLD <= 1e-3, same top >= 99%), and -ar host against -ar p2p on 4
#      GPUs byte for byte (--save-logits, cmp);
#   4. `cohort bench -p 512 -n 128` at 1, 2, 3 and 4 GPUs with -ar nccl and
#      -ar p2p on the 8B model in BF16 and on `mkmodel --preset llama3-70b
#      --type bf16 --layers LAYERS_70B` (default 40, about 72 GB: one H200
#      holds it), as bench-<model>-<n>-<ar>.json; target: tg128 of the 8B
#      model at 4 GPUs >= 2.8x one GPU. With LLAMA_BENCH (a llama-bench built
#      with CUDA there, see scripts/gpu_tp2.sh, stage 5), llama.cpp's
#      `-sm tensor -ngl 99 -fa 1` on the same files and GPU counts
#      (GGML_CUDA_ALLREDUCE=nccl) as llama-bench-<model>-<n>.json.
# About 30 minutes in all. Logs and JSON under ${OUT:-/tmp/cohort-tp4}/tp4,
# packed at the end into $OUT/tp4.tar.gz; then one table of the headline
# figures beside their targets. A failed stage is reported and the later
# stages still run; the script fails at the end. VOCAB names a GGUF whose
# tokenizer the models get (default: synthetic).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export NCCL_NVLS_ENABLE=0  # no NVLink multicast objects
BIN=${COHORT_BUILD:-build}/bin
OUT=${OUT:-/tmp/cohort-tp4}
LOGS=$OUT/tp4
STAGES=" ${TP4_STAGES:-1 2 3 4} "
CHUNKS=${CHUNKS:-6}
LAYERS_70B=${LAYERS_70B:-40}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"; tar -czf "$OUT/tp4.tar.gz" -C "$OUT" tp4' EXIT
rm -rf "$LOGS"
mkdir -p "$LOGS"
failed=()
fail() { failed+=("$1"); echo "-- $1 failed${2:+; see $2}" >&2; }
wanted() { [[ $STAGES == *" $1 "* ]]; }
devs() { seq -s, -f 'cuda%g' 0 $(($1 - 1)); }  # devs 3: cuda0,cuda1,cuda2
cat README.md docs/*.md >"$WORK/text.txt"

# mkmodel's PRESET in BF16 (extra flags after it), written once per run.
model() {
  local f="$WORK/$1.gguf" preset=$1
  shift
  if [ ! -f "$f" ]; then
    "$BIN/cohort" mkmodel --preset "$preset" --type bf16 "$@" ${VOCAB:+--vocab-from "$VOCAB"} -o "$f" \
      >>"$LOGS/mkmodel.txt" 2>&1 || { rm -f "$f"; return 1; }
  fi
  echo "$f"
}

stage1() {
  local g
  "$BIN/cohort" devices >"$LOGS/devices.txt" 2>&1 || fail "1 devices" "$LOGS/devices.txt"
  "$BIN/cohort" devices --json >"$LOGS/devices.json" 2>"$LOGS/devices.err" || fail "1 devices --json"
  for g in 0 1 2 3; do
    CUDA_VISIBLE_DEVICES=$g COHORT_KERNEL_BENCH=gemm timeout 300 "$BIN/cuda_kernel_bench" \
      >"$LOGS/ceilings-cuda$g.jsonl" 2>"$LOGS/ceilings-cuda$g.err" || fail "1 kernel bench cuda$g"
  done
}

stage2() {
  local n
  for n in 2 3 4; do
    timeout 900 "$BIN/cohort" ar-bench -dev "$(devs $n)" -ar nccl,host,p2p \
      --sizes 8,64,512,4K,8K,32K,64K,256K,512K,1M,4M,8M,32M,64M,128M,256M --graph on,off -o json \
      >"$LOGS/ar-bench-$n.json" 2>"$LOGS/ar-bench-$n.err" || fail "2 ar-bench on $n GPUs" "$LOGS/ar-bench-$n.err"
  done
}

# Perplexity of the 8B model in NAME's layout (the flags after NAME).
ppl() {
  local name=$1 m
  shift
  m=$(model llama3-8b) || { fail "3 mkmodel llama3-8b"; return 1; }
  timeout 600 "$BIN/cohort" perplexity -m "$m" -f "$WORK/text.txt" -c 512 --chunks "$CHUNKS" "$@" \
    >"$LOGS/perplexity-$name.txt" 2>&1 || { fail "3 perplexity $name" "$LOGS/perplexity-$name.txt"; return 1; }
}
stage3() {
  local rc=0 n
  "$BIN/cohort_tests" --gtest_filter='*Communicator*:*Nccl*:*AllReduce*:*TensorParallel*' \
    >"$LOGS/unit-tests.txt" 2>&1 || rc=$?
  if [ $rc -ne 0 ] || grep -q "SKIPPED \]" "$LOGS/unit-tests.txt"; then fail "3 unit tests" "$LOGS/unit-tests.txt"; fi
  ppl one -dev cuda0 --save-logits "$WORK/one.bin" || return
  for n in 2 3 4; do
    ppl "p2p-$n" -sm tensor -dev "$(devs $n)" -ar p2p --kl-divergence-base "$WORK/one.bin" --kl-divergence
  done
  ppl p2p-4-uneven -sm tensor -dev "$(devs 4)" -ts 0.4,0.3,0.2,0.1 -ar p2p \
    --kl-divergence-base "$WORK/one.bin" --kl-divergence
  ppl host-4 -sm tensor -dev "$(devs 4)" -ar host --save-logits "$WORK/host.bin"
  ppl p2p-4-logits -sm tensor -dev "$(devs 4)" -ar p2p --save-logits "$WORK/p2p.bin"
  if cmp "$WORK/host.bin" "$WORK/p2p.bin" >"$LOGS/host-vs-p2p.txt" 2>&1; then
    echo "identical" >"$LOGS/host-vs-p2p.txt"
  else
    fail "3 host and p2p bits on 4 GPUs" "$LOGS/host-vs-p2p.txt"
  fi
  rm -f "$WORK"/*.bin
}

stage4() {
  local name m n ar flags
  for name in llama3-8b llama3-70b; do
    if [ $name = llama3-70b ]; then
      m=$(model llama3-70b --layers "$LAYERS_70B") || { fail "4 mkmodel $name"; continue; }
    else
      m=$(model llama3-8b) || { fail "4 mkmodel $name"; continue; }
    fi
    timeout 900 "$BIN/cohort" bench -m "$m" -p 512 -n 128 -r 2 -dev cuda0 -o json \
      >"$LOGS/bench-$name-1.json" 2>"$LOGS/bench-$name-1.err" || fail "4 bench $name 1 GPU" "$LOGS/bench-$name-1.err"
    for n in 2 3 4; do
      for ar in nccl p2p; do
        flags=(-sm tensor -dev "$(devs $n)" -ar "$ar")
        timeout 900 "$BIN/cohort" bench -m "$m" -p 512 -n 128 -r 2 "${flags[@]}" -o json \
          >"$LOGS/bench-$name-$n-$ar.json" 2>"$LOGS/bench-$name-$n-$ar.err" ||
          fail "4 bench $name $n GPUs $ar" "$LOGS/bench-$name-$n-$ar.err"
      done
      if [ -n "${LLAMA_BENCH:-}" ]; then
        CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) GGML_CUDA_ALLREDUCE=nccl timeout 900 "$LLAMA_BENCH" \
          -m "$m" -sm tensor -ngl 99 -fa 1 -p 512 -n 128 -r 2 -o json \
          >"$LOGS/llama-bench-$name-$n.json" 2>"$LOGS/llama-bench-$name-$n.err" ||
          fail "4 llama-bench $name $n GPUs" "$LOGS/llama-bench-$name-$n.err"
      fi
    done
  done
}

for s in 1 2 3 4; do
  if wanted $s; then
    t0=$SECONDS
    "stage$s"
    echo "stage $s: $((SECONDS - t0)) s" | tee -a "$LOGS/times.txt"
  fi
done
python3 scripts/gpu_tp4_summary.py "$LOGS" | tee "$LOGS/summary.md" || fail "summary"
if ((${#failed[@]})); then
  printf 'failed: %s\n' "${failed[@]}"
  exit 1
fi
