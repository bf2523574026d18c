#!/usr/bin/env bash
# The engine loop's cost of a phase-view watcher: the same bench-serve
# workload against one server, runs alternating between no watcher and one
# open GET /v1/phase-events stream (read by curl and thrown away), ROUNDS
# times each. Prints one line per run: mean and median inter-token latency
# (one decode step per token) and output tokens/s.
# Usage: scripts/bench_phase_watch.sh [MODEL] (default: the default model)
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-$(python3 scripts/default_model.py)}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18090}
OUT=$(mktemp -d)
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
build/bin/cohort serve -m "$MODEL" --port "$PORT" -np 4 -c 4096 -b 256 >"$OUT/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$OUT"' EXIT
until curl -sf "http://127.0.0.1:$PORT/health" >/dev/null; do sleep 0.2; done

run() {  # run NAME
  build/bin/cohort bench-serve --port "$PORT" --num-prompts 16 --request-rate inf --random-input-len 128 \
    --random-output-len 64 --seed 1 -o json --label "$1" >"$OUT/$1.json" 2>/dev/null
  python3 - "$OUT/$1.json" "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print(f"{sys.argv[2]:<11} ITL mean {s['itl_ms']['mean']:6.2f} ms  p50 {s['itl_ms']['p50']:6.2f} ms  "
      f"TPOT mean {s['tpot_ms']['mean']:6.2f} ms  output {s['output_tok_s']:6.1f} tokens/s")
PY
}

run warmup >/dev/null
for i in $(seq "$ROUNDS"); do
  run "none-$i"
  curl -sN "http://127.0.0.1:$PORT/v1/phase-events" >/dev/null &
  watcher=$!
  sleep 0.2
  run "watched-$i"
  kill $watcher
  wait $watcher 2>/dev/null || true
done
