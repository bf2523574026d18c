#!/usr/bin/env bash
# Structured output's cost to decoding: the same bench-serve workload
# against one server, without and with a JSON schema (bench/response_formats/
# order.json, whose answers are longer than the tokens asked for, so every
# request generates exactly --random-output-len tokens either way), at 1
# and at CONC concurrent requests, ROUNDS times each, alternating. Prints a
# line per run: mean TPOT and ITL, and the share of the server's step time
# spent computing grammar masks (cohort:grammar_mask_seconds_total over
# cohort:step_seconds_total). JSON reports under ${OUT:-a temporary folder}.
# Requests keep their end-of-generation tokens (no ignore_eos, whose
# logit_bias would make every row copy its whole vocabulary): the schema
# allows none before it is complete, and a model rarely picks one early.
# Usage: scripts/bench_structured.sh [MODEL] [serve args...]
#   (default: the default model on the CPU; e.g. MODEL -dev cuda0 on a GPU)
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-$(python3 scripts/default_model.py)}
shift || true
BIN=${COHORT_BUILD:-build}/bin
ROUNDS=${ROUNDS:-2}
CONC=${CONC:-32}
LEN=${LEN:-128}
PORT=${PORT:-18091}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
"$BIN/cohort" serve -m "$MODEL" --port "$PORT" -np "$CONC" -c $((CONC * 512)) --metrics "$@" >"$OUT/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
until curl -sf "http://127.0.0.1:$PORT/health" >/dev/null; do
  kill -0 $server 2>/dev/null || { cat "$OUT/serve.log"; exit 1; }
  sleep 0.2
done

run() {  # run NAME CONCURRENCY [bench-serve args...]
  local name=$1 conc=$2
  shift 2
  "$BIN/cohort" bench-serve --port "$PORT" --num-prompts "$conc" --request-rate inf --max-concurrency "$conc" \
    --random-input-len 32 --random-output-len "$LEN" --seed 1 --no-ignore-eos --temperature 1 -o json \
    --label "$name" "$@" >"$OUT/$name.json" 2>/dev/null
  python3 - "$OUT/$name.json" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s, server = r["summary"], r["config"].get("server") or {}
share = server.get("grammar_mask_share", 0.0)
print(f"{sys.argv[2]:<18} TPOT mean {s['tpot_ms']['mean']:7.3f} ms  ITL mean {s['itl_ms']['mean']:7.3f} ms  "
      f"tokens {s['output_tokens']:5d}  mask share {100 * share:5.2f}%")
PY
}

run warmup 1 >/dev/null
# Odd rounds run plain first, even rounds the schema first, so that a
# machine whose speed drifts over the run does not favour one of them.
for round in $(seq "$ROUNDS"); do
  for conc in 1 "$CONC"; do
    plain=(run "plain-c$conc-r$round" "$conc")
    schema=(run "schema-c$conc-r$round" "$conc" --response-format bench/response_formats/order.json)
    if ((round % 2)); then "${plain[@]}"; "${schema[@]}"; else "${schema[@]}"; "${plain[@]}"; fi
  done
done
