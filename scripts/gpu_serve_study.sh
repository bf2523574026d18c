#!/usr/bin/env bash
# The phase-policy study on one GPU: `cohort serve` on `mkmodel --preset
# llama3-8b --type q4_k` under each --phase-policy (and cohort with
# --tg-quantum 64), replayed by `cohort bench-serve` on the two GPU scenarios
# of bench/scenarios/ (three decode streams with a 32,768-token prompt
# arriving; an 8,192- and a 32,768-token prompt together), with the serving
# flags of the llama-server figures in ANCHORS.md: -np 4 -c 180000 -b 2048
# -ub 1024. Markdown tables on stdout, JSON reports under ${OUT:-/tmp/cohort-serve}.
# VOCAB names a GGUF whose tokenizer the model gets (default: synthetic).
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
BIN=${COHORT_BUILD:-build}/bin
OUT=${OUT:-/tmp/cohort-serve}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
model="$WORK/llama3-8b-q4_k.gguf"
"$BIN/cohort" mkmodel --preset llama3-8b --type q4_k ${VOCAB:+--vocab-from "$VOCAB"} -o "$model" 2>&1 | tail -1
scenarios=(bench/scenarios/gpu-long-prompt-mid-decode.json bench/scenarios/gpu-unequal-pair.json)
common=(-m "$model" --cohort "$BIN/cohort" -np 4 -c 180000 -b 2048 --serve-arg=-ub --serve-arg=1024)
python3 scripts/bench_serve_policies.py "${common[@]}" --out "$OUT" --policies "${POLICIES:-mixed,no-cont,cohort,serial}" \
  "${scenarios[@]}"
echo
echo "cohort --tg-quantum 64:"
python3 scripts/bench_serve_policies.py "${common[@]}" --out "$OUT/tg-quantum" --policies cohort \
  --serve-arg=--tg-quantum --serve-arg=64 "${scenarios[@]}"
