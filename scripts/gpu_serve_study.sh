#!/usr/bin/env bash
# The phase-policy study on one GPU: `cohort serve` on `mkmodel --preset
# llama3-8b --type q4_k` under each --phase-policy (and cohort with
# --tg-quantum 64), replayed by `cohort bench-serve` on the two GPU scenarios
# of bench/scenarios/ (three decode streams with a 32,768-token prompt
# arriving; an 8,192- and a 32,768-token prompt together) and on a Poisson
# mix (POISSON, default 48 requests at 3 a second, 512-token prompts and 256
# generated, each +-50%: about 4 slots busy), with the serving flags of the
# llama-server figures in ANCHORS.md: -np 4 -c 180000 -b 2048 -ub 1024.
# LLAMA_SERVER names a llama-server binary to measure beside it, with and
# without continuous batching (-ngl 99 -fa on -ub 1024 --cache-ram 0).
# Markdown tables on stdout; JSON reports and the inter-token-gap plots
# (itl-<scenario>.png) under ${OUT:-/tmp/cohort-serve}. NO_TG_QUANTUM=1 leaves
# out the --tg-quantum run, POLICIES picks the policies (default all four),
# LOGPROBS=1 has every request ask for log-probabilities (a chunk per token,
# so a character that spans tokens no longer shows as a gap of two steps).
# MODEL names the GGUF (default: written here, with Llama 3.1's training
# context of 131,072: llama-server caps a slot's context at the file's);
# VOCAB names a GGUF whose tokenizer the written model gets (the default
# model, or a GGUF of its tokenizer.* keys alone). Without it the model's tokenizer is synthetic,
# whose greedy tokens there mostly decode to no text, so the streams carry
# no chunks to time.
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
BIN=${COHORT_BUILD:-build}/bin
OUT=${OUT:-/tmp/cohort-serve}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
model=${MODEL:-$WORK/llama3-8b-q4_k.gguf}
if [ ! -f "$model" ]; then
  "$BIN/cohort" mkmodel --preset llama3-8b --type q4_k --ctx-train 131072 ${VOCAB:+--vocab-from "$VOCAB"} -o "$model" 2>&1 | tail -1
fi
scenarios=(bench/scenarios/gpu-long-prompt-mid-decode.json bench/scenarios/gpu-unequal-pair.json
           "poisson:${POISSON:-48:3:512:256}")
common=(-m "$model" --cohort "$BIN/cohort" -np 4 -c 180000 -b 2048 --serve-arg=-ub --serve-arg=1024
        ${LOGPROBS:+--logprobs})
llama=()
if [ -n "${LLAMA_SERVER:-}" ]; then
  llama=(--llama-server "$LLAMA_SERVER" --llama-arg=-ngl --llama-arg=99 --llama-arg=-fa --llama-arg=on
         --llama-arg=-ub --llama-arg=1024 --llama-arg=--cache-ram --llama-arg=0)
fi
python3 scripts/bench_serve_policies.py "${common[@]}" "${llama[@]}" --out "$OUT" \
  --policies "${POLICIES:-mixed,no-cont,cohort,serial}" "${scenarios[@]}"
if [ -z "${NO_TG_QUANTUM:-}" ]; then
  echo
  echo "cohort --tg-quantum 64:"
  python3 scripts/bench_serve_policies.py "${common[@]}" --out "$OUT/tg-quantum" --policies cohort \
    --label-suffix " --tg-quantum 64" --serve-arg=--tg-quantum --serve-arg=64 "${scenarios[@]}"
fi
if python3 -c 'import matplotlib' 2>/dev/null; then
  for s in gpu-long-prompt-mid-decode gpu-unequal-pair "poisson-${POISSON:-48:3:512:256}"; do
    s=${s//:/-}
    python3 scripts/plot_itl.py "$OUT/$s"-*.json "$OUT/tg-quantum/$s-cohort.json" -o "$OUT/itl-$s.png" || true
  done
fi
