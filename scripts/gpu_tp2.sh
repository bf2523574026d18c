#!/usr/bin/env bash
# The two-GPU run, for a machine with two NVIDIA GPUs joined by NVLink (two
# H200s), from a build configured with -DCOHORT_CUDA=ON (COHORT_BUILD names
# it; default build/). Tensor parallelism across real peers: what the
# reductions cost on the link, whether the ranks still give the bits of the
# one-GPU model, and what a second GPU buys, each against the ceilings of the
# same machine measured in the same run. Expected times on nvidia-h200-x2:
#   1. (1 min) `cohort devices` (both GPUs, peer access), and the ceilings of
#      each GPU: the device-to-device copy rate and the BF16 GEMM rate
#      (COHORT_KERNEL_BENCH=gemm cuda_kernel_bench, one run per GPU), and the
#      peer copy rate (256 MiB, GPU 0 -> 1 and 1 -> 0; PyTorch where it
#      imports, else libcudart through ctypes) as ceilings-cuda<N>.jsonl and
#      peer-copy.json,
#   2. (1 min) `cohort ar-bench -dev cuda0,cuda1 -ar nccl,host,p2p` from 8 B
#      to 256 MiB, inside and outside CUDA graphs, as ar-bench.json; targets:
#      p2p in a graph <= 3.5 us at 8 KiB and <= 8 us at 512 KiB, and from
#      32 MiB up within 10% of NCCL's bus bandwidth,
#   3. (8 min) correctness on real peers: the communicator and tensor-parallel
#      unit tests (a skipped test fails the run; only the NCCL test puts its
#      ranks on two GPUs, the others share GPU 0); perplexity of `mkmodel
#      --preset llama3-8b` in BF16 and Q4_K over 8 x 512 tokens on one GPU,
#      then on -sm tensor -dev cuda0,cuda1: -ar host and -ar p2p with the
#      same logits byte for byte (--save-logits, cmp), -ts 1,1 and
#      -ts 0.625,0.375 against the one-GPU run (mean KLD <= 1e-3, same top
#      >= 99%), COHORT_DISABLE_P2P=1 with its warning and the same bytes;
#      `compute-sanitizer --tool racecheck` on a short ar-bench of each of
#      host and p2p (racecheck runs one kernel at a time, so either, whose
#      two ranks' kernels wait for each other, may not finish: a timeout is
#      reported as not run, an error as a failure); checks.jsonl,
#   4. (3 min) `cohort bench -p 512 -n 128` on the 8B model in BF16 and Q4_K,
#      one GPU (-dev cuda0) beside -sm tensor -dev cuda0,cuda1 with each of
#      -ar nccl, host, p2p (one run per transport, so that a transport that
#      cannot start costs only its own rows), as bench-<type>-*.json;
#      targets: tg128 with p2p >= 1.7x one GPU and ahead of nccl, pp512 with
#      p2p >= 1.6x one GPU,
#   5. (3 min, only with LLAMA_BENCH) llama.cpp's `llama-bench -sm tensor
#      -ngl 99 -fa 1 -p 512 -n 128` on the same files and GPUs, with
#      GGML_CUDA_ALLREDUCE=nccl and =internal, as llama-bench-<type>-<ar>.json.
#      LLAMA_BENCH names a llama-bench built with CUDA from the llama.cpp of
#      the llama-cpp-python 0.3.36 sdist (the version the tests compare
#      against): `pip download --no-deps --no-binary :all:
#      llama-cpp-python==0.3.36` on a machine with the network, its
#      vendor/llama.cpp carried to the GPU machine (as llama.cpp/) and built there with
#      `cmake -S llama.cpp -B /tmp/llama.cpp-build -DGGML_CUDA=ON
#      -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build /tmp/llama.cpp-build
#      --target llama-bench` (about 5.5 minutes, not counted here). llama.cpp
#      compiles its NCCL path only where CMake finds nccl.h and libnccl.so;
#      without the -dev package, point NCCL_ROOT at the nvidia-nccl wheel
#      that PyTorch installs, with the link CMake looks for:
#        n=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')
#        mkdir -p /tmp/nccl/lib && ln -sf "$n/include" /tmp/nccl/include &&
#        ln -sf "$n/lib/libnccl.so.2" /tmp/nccl/lib/libnccl.so
#        NCCL_ROOT=/tmp/nccl cmake -B /tmp/llama.cpp-build ... (as above)
#      (and LD_LIBRARY_PATH=$n/lib if no libnccl.so.2 is installed). A build
#      without NCCL warns and reduces with its internal all-reduce under
#      GGML_CUDA_ALLREDUCE=nccl; the stage reports that beside the figures,
#   6. (3 min) `cohort bench-serve` of the two GPU scenarios of
#      bench/scenarios/ (three decode streams with a 32,768-token prompt
#      arriving; an 8,192- and a 32,768-token prompt together) against
#      `cohort serve -sm tensor -dev cuda0,cuda1 -ar p2p` and against one GPU
#      (-dev cuda0), the 8B model in Q4_K, --phase-policy cohort, the serving
#      flags of scripts/gpu_serve_study.sh (-np 4 -c 180000 -b 2048 -ub
#      1024), through scripts/bench_serve_policies.py, as serve/*/*.json.
# About 20 minutes in all, 23 with stage 5. Then one table of the headline
# figures beside their targets and checks (PASS or MISS: a missed performance
# target is a figure, a failed check a failure). Each stage prints one line on
# stdout; what it ran is logged under ${OUT:-/tmp/cohort-tp2}/tp2, packed at
# the end into $OUT/tp2.tar.gz (the folder itself removed when OUT is set:
# one file to fetch). A failed stage or check is reported and the later
# stages still run; the script fails at the end. TP2_STAGES picks stages
# (default "1 2 3 4 5 6"); VOCAB names a GGUF whose tokenizer the 8B model
# gets (default: synthetic).
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0  # no NVLink multicast objects
BIN=${COHORT_BUILD:-build}/bin
OUT_GIVEN=${OUT:+1}
OUT=${OUT:-/tmp/cohort-tp2}
LOGS=$OUT/tp2
STAGES=" ${TP2_STAGES:-1 2 3 4 5 6} "
WORK=$(mktemp -d)
# shellcheck disable=SC2317  # the EXIT trap calls it
pack() {
  rm -rf "$WORK"
  tar -czf "$OUT/tp2.tar.gz" -C "$OUT" tp2 && [ -n "$OUT_GIVEN" ] && rm -rf "$LOGS"
  return 0
}
trap pack EXIT
rm -rf "$LOGS"
mkdir -p "$LOGS"
failed=()
SANITIZER=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
# The two GPUs as kernel_bench sees them alone (CUDA_VISIBLE_DEVICES may already pick some).
IFS=, read -r -a visible <<<"${CUDA_VISIBLE_DEVICES:-0,1}"
TYPES=(bf16 q4_k)
CHUNKS=8  # perplexity chunks of 512 tokens
cat README.md docs/*.md >"$WORK/text.txt"

# A check's result, one JSON line in checks.jsonl (read by the summary).
check() {  # NAME PASS(0|1) VALUE TARGET
  python3 -c 'import json, sys
print(json.dumps({"check": sys.argv[1], "pass": sys.argv[2] == "1", "value": sys.argv[3], "target": sys.argv[4]}))' \
    "$@" >>"$LOGS/checks.jsonl"
}
fail() {  # STAGE-ITEM [LOG]: reported now, counted at the end
  failed+=("$1")
  if [ -n "${2:-}" ] && [ -f "$2" ]; then { echo "-- $1 failed; the end of $2:"; tail -15 "$2"; } >&2; fi
  return 0
}
# mkmodel's llama3-8b in TYPE, written once per run.
model() {
  local f="$WORK/llama3-8b-$1.gguf"
  local t0=$SECONDS
  if [ ! -f "$f" ]; then
    "$BIN/cohort" mkmodel --preset llama3-8b --type "$1" ${VOCAB:+--vocab-from "$VOCAB"} -o "$f" \
      >>"$LOGS/mkmodel.txt" 2>&1 || { rm -f "$f"; return 1; }
    echo "mkmodel llama3-8b $1: $((SECONDS - t0)) s" >>"$LOGS/mkmodel.txt"
  fi
  echo "$f"
}
wanted() { [[ $STAGES == *" $1 "* ]]; }

stage1() {
  local t0=$SECONDS n d
  "$BIN/cohort" devices >"$LOGS/devices.txt" 2>&1 || fail "1 devices" "$LOGS/devices.txt"
  "$BIN/cohort" devices --json >"$LOGS/devices.json" 2>"$LOGS/devices.err" || fail "1 devices --json" "$LOGS/devices.err"
  for n in 0 1; do
    d=${visible[$n]:-$n}
    CUDA_VISIBLE_DEVICES=$d COHORT_KERNEL_BENCH=gemm timeout 300 "$BIN/cuda_kernel_bench" \
      >"$LOGS/ceilings-cuda$n.jsonl" 2>"$LOGS/ceilings-cuda$n.err" || fail "1 kernel bench on cuda$n" "$LOGS/ceilings-cuda$n.err"
  done
  timeout 300 python3 - "$LOGS/peer-copy.json" >"$LOGS/peer-copy.txt" 2>&1 <<'PY' || fail "1 peer copy" "$LOGS/peer-copy.txt"
# Peer copy rate between GPU 0 and 1: 256 MiB, 3 untimed copies, then 20
# timed between synchronizations of both devices (wall clock).
import ctypes, glob, json, sys, time
N, REPS = 256 << 20, 20
def with_torch():
    import torch
    if torch.cuda.device_count() < 2: raise RuntimeError("PyTorch sees fewer than 2 GPUs")
    buf = [torch.empty(N, dtype=torch.uint8, device=f"cuda:{d}") for d in (0, 1)]
    def sync(): torch.cuda.synchronize(0); torch.cuda.synchronize(1)
    def copy(s, d): buf[d].copy_(buf[s], non_blocking=True)
    peer = {f"{a}->{b}": torch.cuda.can_device_access_peer(a, b) for a, b in ((0, 1), (1, 0))}
    return "torch " + torch.__version__, sync, copy, peer
def with_cudart():
    names = ["libcudart.so", "libcudart.so.13", "libcudart.so.12"] + sorted(glob.glob("/usr/local/cuda*/lib64/libcudart.so*"))
    lib = None
    for n in names:
        try: lib = ctypes.CDLL(n); break
        except OSError: pass
    if lib is None: raise RuntimeError("no libcudart")
    def ok(rc, what):
        if rc not in (0, 704): raise RuntimeError(f"{what}: CUDA error {rc}")  # 704: peer access already enabled
    ptr, peer = [ctypes.c_void_p(), ctypes.c_void_p()], {}
    for d in (0, 1):
        ok(lib.cudaSetDevice(d), "cudaSetDevice")
        ok(lib.cudaMalloc(ctypes.byref(ptr[d]), ctypes.c_size_t(N)), "cudaMalloc")
        can = ctypes.c_int()
        ok(lib.cudaDeviceCanAccessPeer(ctypes.byref(can), d, 1 - d), "cudaDeviceCanAccessPeer")
        peer[f"{d}->{1 - d}"] = bool(can.value)
        if can.value: ok(lib.cudaDeviceEnablePeerAccess(1 - d, 0), "cudaDeviceEnablePeerAccess")
    def sync():
        for d in (0, 1): ok(lib.cudaSetDevice(d), "cudaSetDevice"); ok(lib.cudaDeviceSynchronize(), "sync")
    def copy(s, d): ok(lib.cudaMemcpyPeer(ptr[d], d, ptr[s], s, ctypes.c_size_t(N)), "cudaMemcpyPeer")
    return "libcudart (ctypes)", sync, copy, peer
try:
    tool, sync, copy, peer = with_torch()
except Exception as e:
    print(f"PyTorch not used ({e}); libcudart through ctypes")
    tool, sync, copy, peer = with_cudart()
rows = []
for s, d in ((0, 1), (1, 0)):
    for _ in range(3): copy(s, d)
    sync()
    t = time.perf_counter()
    for _ in range(REPS): copy(s, d)
    sync()
    dt = (time.perf_counter() - t) / REPS
    rows.append({"src": s, "dst": d, "bytes": N, "us": dt * 1e6, "gbs": N / dt / 1e9})
    print(f"cuda{s} -> cuda{d}: {N / dt / 1e9:.1f} GB/s ({dt * 1e6:.0f} us per 256 MiB)")
json.dump({"tool": tool, "peer_access": peer, "copies": rows}, open(sys.argv[1], "w"), indent=2)
PY
  python3 - "$LOGS" $((SECONDS - t0)) <<'PY' || fail "1 two GPUs with peer access"
import json, os, sys
L = sys.argv[1]
def load(name):
    try: return json.load(open(os.path.join(L, name)))
    except Exception: return None
def jl(name):
    try: return [json.loads(x) for x in open(os.path.join(L, name)) if x.startswith("{")]
    except Exception: return []
dev = load("devices.json") or {}
names = ", ".join(d["name"] for d in dev.get("devices", [])) or "none"
p = dev.get("peer_access", [])
peer = "yes" if len(p) > 1 and p[0][1] and p[1][0] else "no"
parts = []
for n in (0, 1):
    r = jl(f"ceilings-cuda{n}.jsonl")
    copy = next((x["gbps"] for x in r if x.get("op") == "copy"), None)
    gemm = next((x["tflops"] for x in r if x.get("op") == "gemm" and x.get("n_tok") == 8192), None)
    parts.append(f"cuda{n} copy {copy or '?'} GB/s, GEMM {gemm or '?'} TFLOP/s")
pc = load("peer-copy.json") or {}
peer_bw = ", ".join(f"{c['src']}->{c['dst']} {c['gbs']:.0f} GB/s" for c in pc.get("copies", [])) or "?"
print(f"[1] devices: {names}; peer access {peer}; {'; '.join(parts)}; peer copy {peer_bw} ({sys.argv[2]} s)")
sys.exit(0 if len(dev.get("devices", [])) >= 2 and peer == "yes" else 1)
PY
}

stage2() {
  local t0=$SECONDS
  timeout 600 "$BIN/cohort" ar-bench -dev cuda0,cuda1 -ar nccl,host,p2p \
    --sizes 8,64,512,4K,8K,32K,64K,256K,512K,1M,4M,8M,32M,64M,128M,256M --graph on,off -o json \
    >"$LOGS/ar-bench.json" 2>"$LOGS/ar-bench.err" || fail "2 ar-bench" "$LOGS/ar-bench.err"
  python3 - "$LOGS/ar-bench.json" $((SECONDS - t0)) <<'PY' || fail "2 ar-bench rows"
import json, sys
try: rows = json.load(open(sys.argv[1]))
except Exception as e: print(f"[2] ar-bench: no JSON ({e}) ({sys.argv[2]} s)"); sys.exit(1)
skipped = [f"{r['transport']} graph {'on' if r['graph'] else 'off'}: {r['skipped']}" for r in rows if "skipped" in r]
def get(t, g, b):
    return next((r for r in rows if r.get("transport") == t and r.get("graph") == g and r.get("bytes") == b), None)
s8, s512 = get("p2p", True, 8192), get("p2p", True, 512 << 10)
ratios = [get("p2p", True, b)["busbw_gbs"] / get("nccl", True, b)["busbw_gbs"]
          for b in (32 << 20, 64 << 20, 128 << 20, 256 << 20) if get("p2p", True, b) and get("nccl", True, b)]
f = lambda r: f"{r['median_us']:.2f} us" if r else "?"
large = f"p2p/nccl busbw {min(ratios):.2f} at worst (>= 0.90)" if ratios else "no p2p and nccl rows to compare"
print(f"[2] ar-bench p2p in a graph: 8 KiB {f(s8)} (<= 3.5), 512 KiB {f(s512)} (<= 8); >= 32 MiB {large}"
      f"{'; skipped: ' + '; '.join(skipped) if skipped else ''} ({sys.argv[2]} s)")
sys.exit(0 if s8 and s512 else 1)
PY
  # The copy-engine threshold (COHORT_AR_CE_MIN_BYTES, 512 KiB): the same
  # sizes with the kernel at every one, beside the default run's copy engines.
  COHORT_AR_CE_MIN_BYTES=4G timeout 300 "$BIN/cohort" ar-bench -dev cuda0,cuda1 -ar host,p2p \
    --sizes 256K,512K,1M,4M,32M,256M --graph on -o json >"$LOGS/ar-bench-kernel.json" 2>>"$LOGS/ar-bench.err" ||
    fail "2 ar-bench, kernel at every size" "$LOGS/ar-bench.err"
  python3 - "$LOGS/ar-bench.json" "$LOGS/ar-bench-kernel.json" <<'PY' || true
import json, sys
ce, kernel = (json.load(open(f)) for f in sys.argv[1:])
for t in ("host", "p2p"):
    cells = []
    for k in kernel:
        if k.get("transport") != t or "skipped" in k: continue
        c = next((r for r in ce if r.get("transport") == t and r.get("graph") and r.get("bytes") == k["bytes"]), None)
        if c: cells.append(f"{k['bytes'] >> 10} KiB {c['median_us']:.1f} ({c['path']}) / {k['median_us']:.1f} (kernel)")
    print(f"[2] {t} in a graph, default routing / kernel at every size, us: {'; '.join(cells) or 'no rows'}")
PY
}

# Perplexity of TYPE's model in NAME's layout (the flags after NAME).
ppl() {
  local t=$1 name=$2 m
  shift 2
  m=$(model "$t") || { fail "3 mkmodel $t" "$LOGS/mkmodel.txt"; return 1; }
  timeout 300 "$BIN/cohort" perplexity -m "$m" -f "$WORK/text.txt" -c 512 --chunks "$CHUNKS" "$@" \
    >"$LOGS/perplexity-$t-$name.txt" 2>&1 || { fail "3 perplexity $t $name" "$LOGS/perplexity-$t-$name.txt"; return 1; }
}
# The check of a run against the one-GPU run: mean KLD and same top.
kld_check() {  # TYPE NAME
  python3 - "$LOGS/perplexity-$1-$2.txt" "$1 $2" >>"$LOGS/checks.jsonl" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
kld = re.search(r"Mean\s+KLD:\s+([-0-9.e]+)", text)
top = re.search(r"Same top p:\s+([0-9.]+)", text)
ok = bool(kld and top and float(kld.group(1)) <= 1e-3 and float(top.group(1)) >= 99.0)
value = f"KLD {float(kld.group(1)):.2e}, same top {float(top.group(1)):.2f}%" if kld and top else "no KLD in the log"
print(json.dumps({"check": f"perplexity {sys.argv[2]} vs one GPU", "pass": ok, "value": value,
                  "target": "KLD <= 1e-3, same top >= 99%"}))
sys.exit(0 if ok else 1)
PY
}
stage3() {
  local t0=$SECONDS log t tp warned rc line
  log="$LOGS/unit-tests.txt"
  rc=0
  "$BIN/cohort_tests" --gtest_filter='*Communicator*:*Nccl*:*AllReduce*:*TensorParallel*' >"$log" 2>&1 || rc=$?
  line=$(grep -E '^\[  PASSED  \]' "$log" || echo "no PASSED line")
  if [ "$rc" -ne 0 ] || grep -q "SKIPPED \]" "$log"; then
    fail "3 unit tests" "$log"
    check "unit tests" 0 "rc $rc; $line; $(grep -m1 -o 'SKIPPED \] [0-9]* tests*' "$log" || echo 'none skipped')" \
      "all run and pass"
  else
    check "unit tests" 1 "$line" "all run and pass"
  fi
  for t in "${TYPES[@]}"; do
    tp=(-sm tensor -dev "cuda0,cuda1")
    ppl "$t" one -dev cuda0 --save-logits "$WORK/$t-one.bin" || continue
    ppl "$t" host "${tp[@]}" -ts 1,1 -ar host --save-logits "$WORK/$t-host.bin" \
      --kl-divergence-base "$WORK/$t-one.bin" --kl-divergence && { kld_check "$t" host || fail "3 KLD $t host"; }
    ppl "$t" p2p "${tp[@]}" -ts 1,1 -ar p2p --save-logits "$WORK/$t-p2p.bin" \
      --kl-divergence-base "$WORK/$t-one.bin" --kl-divergence && { kld_check "$t" p2p || fail "3 KLD $t p2p"; }
    ppl "$t" p2p-ts0.625 "${tp[@]}" -ts 0.625,0.375 -ar p2p \
      --kl-divergence-base "$WORK/$t-one.bin" --kl-divergence && { kld_check "$t" p2p-ts0.625 || fail "3 KLD $t -ts 0.625"; }
    COHORT_DISABLE_P2P=1 ppl "$t" fallback "${tp[@]}" -ts 1,1 -ar p2p --save-logits "$WORK/$t-fallback.bin" || true
    # p2p must have run on the peers (no fallback warning) for the comparisons to mean anything.
    if grep -q "warning: -ar p2p" "$LOGS/perplexity-$t-p2p.txt" "$LOGS/perplexity-$t-p2p-ts0.625.txt" 2>/dev/null; then
      check "p2p on peers $t" 0 "$(grep -h 'warning: -ar p2p' "$LOGS/perplexity-$t-p2p.txt" \
        "$LOGS/perplexity-$t-p2p-ts0.625.txt" 2>/dev/null | head -1)" "no fallback"
      fail "3 p2p fell back to the host ($t)"
    fi
    if cmp -s "$WORK/$t-host.bin" "$WORK/$t-p2p.bin"; then
      check "host = p2p logits $t" 1 "identical bytes" "identical"
    else
      check "host = p2p logits $t" 0 "$(cmp "$WORK/$t-host.bin" "$WORK/$t-p2p.bin" 2>&1 | head -1)" "identical"
      fail "3 host and p2p bits ($t)"
    fi
    warned=0
    grep -q "warning: -ar p2p: COHORT_DISABLE_P2P=1" "$LOGS/perplexity-$t-fallback.txt" 2>/dev/null && warned=1
    if [ $warned = 1 ] && cmp -s "$WORK/$t-p2p.bin" "$WORK/$t-fallback.bin"; then
      check "COHORT_DISABLE_P2P=1 $t" 1 "warned, identical bytes" "warning and identical"
    else
      check "COHORT_DISABLE_P2P=1 $t" 0 "warned: $warned; $(cmp "$WORK/$t-p2p.bin" "$WORK/$t-fallback.bin" 2>&1 |
        head -1 | grep . || echo 'identical bytes')" "warning and identical"
      fail "3 COHORT_DISABLE_P2P=1 fallback ($t)"
    fi
    rm -f "$WORK/$t"-*.bin
  done
  # racecheck: shared-memory hazards of the reduction kernels on both GPUs
  # (host: over pinned host memory; p2p: over the peers' device memory).
  for t in host p2p; do
    log="$LOGS/racecheck-ar-bench-$t.txt"
    rc=0
    timeout -k 10 240 "$SANITIZER" --tool racecheck --error-exitcode 1 --print-limit 20 \
      "$BIN/cohort" ar-bench -dev cuda0,cuda1 -ar "$t" --sizes 8K,1M --graph off -o json >"$log" 2>&1 || rc=$?
    line=$(grep -h "RACECHECK SUMMARY" "$log" | tail -1 || true)
    if [ "$rc" -eq 0 ] && ! grep -q "skipped" "$log" && ! grep -Eq "SUMMARY: [1-9][0-9]* hazard" "$log"; then
      check "racecheck ar-bench $t" 1 "${line:-clean}" "clean"
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      check "racecheck ar-bench $t" 0 "not run: no end within 240 s (kernels serialized under racecheck)" "clean"
      echo "racecheck of ar-bench -ar $t did not finish within 240 s (not counted as a failure)" >&2
    else
      check "racecheck ar-bench $t" 0 "rc $rc; ${line:-see $log}" "clean"
      fail "3 racecheck ar-bench $t" "$log"
    fi
  done
  python3 - "$LOGS/checks.jsonl" $((SECONDS - t0)) <<'PY' || true
import json, re, sys
try: checks = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
except OSError: checks = []
klds = [float(m.group(1)) for c in checks for m in [re.search(r"KLD ([-0-9.e+]+)", c["value"])] if m]
tops = [float(m.group(1)) for c in checks for m in [re.search(r"same top ([0-9.]+)%", c["value"])] if m]
worst = f"; largest KLD {max(klds):.2e}, lowest same top {min(tops):.2f}%" if klds and tops else ""
missed = [c["check"] for c in checks if not c["pass"]]
print(f"[3] correctness: {len(checks) - len(missed)} of {len(checks)} checks passed{worst}"
      f"{'; not passed: ' + ', '.join(missed) if missed else ''} ({sys.argv[2]} s)")
PY
}

stage4() {
  local t0=$SECONDS t m ar
  for t in "${TYPES[@]}"; do
    m=$(model "$t") || { fail "4 mkmodel $t" "$LOGS/mkmodel.txt"; continue; }
    timeout 420 "$BIN/cohort" bench -m "$m" -p 512 -n 128 -r 3 -dev cuda0 -o json \
      >"$LOGS/bench-$t-1gpu.json" 2>"$LOGS/bench-$t-1gpu.err" || fail "4 bench $t one GPU" "$LOGS/bench-$t-1gpu.err"
    for ar in nccl host p2p; do
      timeout 420 "$BIN/cohort" bench -m "$m" -p 512 -n 128 -r 3 -sm tensor -dev cuda0,cuda1 -ar "$ar" -o json \
        >"$LOGS/bench-$t-tp2-$ar.json" 2>"$LOGS/bench-$t-tp2-$ar.err" || fail "4 bench $t tp2 $ar" "$LOGS/bench-$t-tp2-$ar.err"
    done
  done
  python3 - "$LOGS" $((SECONDS - t0)) <<'PY' || true
import json, os, sys
L = sys.argv[1]
def ts(name, n_prompt, n_gen):
    try: rows = json.load(open(os.path.join(L, name)))
    except Exception: return None
    return next((r["avg_ts"] for r in rows if r["n_prompt"] == n_prompt and r["n_gen"] == n_gen), None)
parts = []
for t in ("bf16", "q4_k"):
    one, p2p, nccl = (f"bench-{t}-{x}.json" for x in ("1gpu", "tp2-p2p", "tp2-nccl"))
    tg, pp = ts(one, 0, 128), ts(one, 512, 0)
    tgp, ppp, tgn = ts(p2p, 0, 128), ts(p2p, 512, 0), ts(nccl, 0, 128)
    r = lambda a, b: f"{a / b:.2f}x" if a and b else "?"
    parts.append(f"{t} tg128 p2p {r(tgp, tg)} one GPU (>= 1.7), {r(tgp, tgn)} nccl (> 1); pp512 {r(ppp, pp)} (>= 1.6)")
print(f"[4] bench: {'; '.join(parts)} ({sys.argv[2]} s)")
PY
}

stage5() {
  local t0=$SECONDS t m ar err notes=()
  if [ -z "${LLAMA_BENCH:-}" ]; then
    echo "[5] llama-bench: skipped: LLAMA_BENCH is not set (a llama-bench built with CUDA; the header says how)"
    return
  fi
  if [ ! -x "$LLAMA_BENCH" ]; then
    echo "[5] llama-bench: skipped: LLAMA_BENCH=$LLAMA_BENCH is not an executable"
    fail "5 LLAMA_BENCH not executable"
    return
  fi
  for t in "${TYPES[@]}"; do
    m=$(model "$t") || { fail "5 mkmodel $t" "$LOGS/mkmodel.txt"; continue; }
    for ar in nccl internal; do
      err="$LOGS/llama-bench-$t-$ar.err"
      GGML_CUDA_ALLREDUCE=$ar timeout 420 "$LLAMA_BENCH" -m "$m" -sm tensor -ngl 99 -fa 1 -p 512 -n 128 -r 3 -o json \
        >"$LOGS/llama-bench-$t-$ar.json" 2>"$err" || fail "5 llama-bench $t $ar" "$err"
      if grep -q "falling back to internal" "$err"; then
        notes+=("$t $ar: $(grep -h -m1 -o 'NCCL [^;.]*' "$err" || echo NCCL missing), ran internal")
        echo "fell back to internal" >"$LOGS/llama-bench-$t-$ar.fallback"
      fi
    done
  done
  python3 - "$LOGS" $((SECONDS - t0)) "${notes[*]:-}" <<'PY' || fail "5 llama-bench not on CUDA"
import json, os, sys
L = sys.argv[1]
def ts(name, n_prompt, n_gen):
    try: rows = json.load(open(os.path.join(L, name)))
    except Exception: return None
    return next((r["avg_ts"] for r in rows if r["n_prompt"] == n_prompt and r["n_gen"] == n_gen), None)
parts = []
for t in ("bf16", "q4_k"):
    for ar in ("nccl", "internal"):
        f = f"llama-bench-{t}-{ar}.json"
        pp, tg = ts(f, 512, 0), ts(f, 0, 128)
        parts.append(f"{t} {ar} pp512 {pp:.0f} tg128 {tg:.1f}" if pp and tg else f"{t} {ar} ?")
notes = f"; {sys.argv[3]}" if sys.argv[3] else ""
off = []
for f in sorted(os.listdir(L)):
    if f.startswith("llama-bench-") and f.endswith(".json"):
        try: rows = json.load(open(os.path.join(L, f)))
        except Exception: continue
        if any("CUDA" not in r.get("backends", "") for r in rows): off.append(f)
notes += f"; not on CUDA: {', '.join(off)}" if off else ""
print(f"[5] llama-bench -sm tensor (t/s): {'; '.join(parts)}{notes} ({sys.argv[2]} s)")
sys.exit(1 if off else 0)
PY
}

stage6() {
  local t0=$SECONDS m
  m=$(model q4_k) || { fail "6 mkmodel q4_k" "$LOGS/mkmodel.txt"; return; }
  local scenarios=(bench/scenarios/gpu-long-prompt-mid-decode.json bench/scenarios/gpu-unequal-pair.json)
  local common=(-m "$m" --cohort "$BIN/cohort" -np 4 -c 180000 -b 2048 --serve-arg=-ub --serve-arg=1024 --policies cohort)
  timeout 600 python3 scripts/bench_serve_policies.py "${common[@]}" --out "$LOGS/serve/one-gpu" \
    --serve-arg=-dev --serve-arg=cuda0 "${scenarios[@]}" >"$LOGS/serve-one-gpu.md" 2>&1 ||
    fail "6 bench-serve one GPU" "$LOGS/serve-one-gpu.md"
  # -t 2: one thread per rank, as -t 1 gives the one GPU.
  timeout 600 python3 scripts/bench_serve_policies.py "${common[@]}" -t 2 --out "$LOGS/serve/tp2-p2p" \
    --serve-arg=-sm --serve-arg=tensor --serve-arg=-dev --serve-arg=cuda0,cuda1 --serve-arg=-ar --serve-arg=p2p \
    "${scenarios[@]}" >"$LOGS/serve-tp2-p2p.md" 2>&1 || fail "6 bench-serve tp2 p2p" "$LOGS/serve-tp2-p2p.md"
  python3 - "$LOGS/serve" $((SECONDS - t0)) <<'PY' || fail "6 bench-serve: a report missing or a request failed"
import json, os, sys
parts, bad = [], 0
for sc in ("gpu-long-prompt-mid-decode", "gpu-unequal-pair"):
    got = []
    for lay in ("one-gpu", "tp2-p2p"):
        try:
            s = json.load(open(os.path.join(sys.argv[1], lay, f"{sc}-cohort.json")))["summary"]
            got.append(f"{lay} makespan {s['makespan_s']:.2f} s, TTFT p99 {s['ttft_ms']['p99']:.0f} ms, "
                       f"ITL p50 {s['itl_ms']['p50']:.1f} ms" + (f", {s['failed']} failed" if s["failed"] else ""))
            bad += s["failed"] > 0
        except Exception:
            got.append(f"{lay} no report")
            bad += 1
    parts.append(f"{sc}: {', '.join(got)}")
print(f"[6] bench-serve: {'; '.join(parts)} ({sys.argv[2]} s)")
sys.exit(1 if bad else 0)
PY
}

wanted 1 && stage1
wanted 2 && stage2
wanted 3 && stage3
wanted 4 && stage4
wanted 5 && stage5
wanted 6 && stage6

# The table of headline figures (stdlib only), also kept as summary.md.
python3 - "$LOGS" <<'PY' | tee "$LOGS/summary.md" || true
import json, os, sys
L = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(L, name)) as f: return json.load(f)
    except Exception: return None
def lines(name):
    try:
        with open(os.path.join(L, name)) as f: return [json.loads(x) for x in f if x.strip().startswith("{")]
    except Exception: return []
rows = []
def row(figure, value, target="", ok=None):
    rows.append((figure, value, target, "" if ok is None else "PASS" if ok else "MISS"))
def num(x, fmt):
    return "n/a" if x is None else format(x, fmt)

dev = load("devices.json")
if dev:
    p = dev.get("peer_access", [])
    peer = len(p) > 1 and bool(p[0][1]) and bool(p[1][0])
    row("GPUs", ", ".join(d["name"] for d in dev.get("devices", [])) or "none", "2", len(dev.get("devices", [])) >= 2)
    row("peer access 0 <-> 1", "yes" if peer else "no", "yes", peer)
for n in (0, 1):
    r = lines(f"ceilings-cuda{n}.jsonl")
    if r:
        row(f"cuda{n} copy ceiling (GB/s)", num(next((x["gbps"] for x in r if x.get("op") == "copy"), None), ".0f"))
        row(f"cuda{n} BF16 GEMM 8192^3 (TFLOP/s)",
            num(next((x["tflops"] for x in r if x.get("op") == "gemm" and x.get("n_tok") == 8192), None), ".0f"))
pc = load("peer-copy.json")
for c in (pc or {}).get("copies", []):
    row(f"peer copy cuda{c['src']} -> cuda{c['dst']} (GB/s)", num(c["gbs"], ".0f"))

ar = load("ar-bench.json")
if isinstance(ar, list):
    def get(t, g, b):
        return next((r for r in ar if r.get("transport") == t and r.get("graph") == g and r.get("bytes") == b), None)
    for b, name, limit in ((8192, "8 KiB", 3.5), (512 << 10, "512 KiB", 8.0)):
        r = get("p2p", True, b)
        row(f"ar-bench p2p graph {name} median (us)", num(r and r["median_us"], ".2f"), f"<= {limit}",
            None if r is None else r["median_us"] <= limit)
        n = get("nccl", True, b)
        row(f"ar-bench nccl graph {name} median (us)", num(n and n["median_us"], ".2f"))
    for b in (32 << 20, 64 << 20, 128 << 20, 256 << 20):
        p, n = get("p2p", True, b), get("nccl", True, b)
        if p and n:
            ratio = p["busbw_gbs"] / n["busbw_gbs"]
            row(f"ar-bench {b >> 20} MiB busbw p2p / nccl (GB/s)",
                f"{p['busbw_gbs']:.0f} / {n['busbw_gbs']:.0f} = {ratio:.2f}", ">= 0.90", ratio >= 0.90)
    for r in ar:
        if "skipped" in r:
            row(f"ar-bench {r['transport']} graph {'on' if r['graph'] else 'off'}", "skipped: " + r["skipped"][:60])

for c in lines("checks.jsonl"):
    row(c["check"], c["value"], c["target"], c["pass"])

def ts(name, n_prompt, n_gen):
    r = load(name)
    if not isinstance(r, list): return None
    return next((x["avg_ts"] for x in r if x.get("n_prompt") == n_prompt and x.get("n_gen") == n_gen), None)
for t in ("bf16", "q4_k"):
    one_tg, one_pp = ts(f"bench-{t}-1gpu.json", 0, 128), ts(f"bench-{t}-1gpu.json", 512, 0)
    if one_tg is None and one_pp is None and not os.path.exists(os.path.join(L, f"bench-{t}-tp2-p2p.json")):
        continue
    row(f"bench {t} one GPU tg128 / pp512 (t/s)", f"{num(one_tg, '.1f')} / {num(one_pp, '.0f')}")
    for ar in ("nccl", "host", "p2p"):
        tg, pp = ts(f"bench-{t}-tp2-{ar}.json", 0, 128), ts(f"bench-{t}-tp2-{ar}.json", 512, 0)
        row(f"bench {t} tp2 {ar} tg128 / pp512 (t/s)", f"{num(tg, '.1f')} / {num(pp, '.0f')}")
    tg, pp = ts(f"bench-{t}-tp2-p2p.json", 0, 128), ts(f"bench-{t}-tp2-p2p.json", 512, 0)
    nccl = ts(f"bench-{t}-tp2-nccl.json", 0, 128)
    if tg and one_tg:
        row(f"bench {t} tg128 p2p / one GPU", f"{tg / one_tg:.2f}x", ">= 1.7x", tg / one_tg >= 1.7)
    if tg and nccl:
        row(f"bench {t} tg128 p2p / nccl", f"{tg / nccl:.2f}x", "> 1x", tg > nccl)
    if pp and one_pp:
        row(f"bench {t} pp512 p2p / one GPU", f"{pp / one_pp:.2f}x", ">= 1.6x", pp / one_pp >= 1.6)
    for ar in ("nccl", "internal"):
        f = f"llama-bench-{t}-{ar}.json"
        if os.path.exists(os.path.join(L, f)):
            fb = " (NCCL missing: internal)" if os.path.exists(os.path.join(L, f"llama-bench-{t}-{ar}.fallback")) else ""
            row(f"llama-bench {t} -sm tensor {ar} tg128 / pp512 (t/s)",
                f"{num(ts(f, 0, 128), '.1f')} / {num(ts(f, 512, 0), '.0f')}{fb}")
            lt = ts(f, 0, 128)
            if tg and lt:
                row(f"bench {t} tg128 cohort p2p / llama.cpp {ar}", f"{tg / lt:.2f}x")

for sc in ("gpu-long-prompt-mid-decode", "gpu-unequal-pair"):
    for lay in ("one-gpu", "tp2-p2p"):
        r = load(os.path.join("serve", lay, f"{sc}-cohort.json"))
        if r:
            s = r["summary"]
            fail = f", {s['failed']} failed" if s.get("failed") else ""
            row(f"serve {sc} {lay}",
                f"makespan {s['makespan_s']:.2f} s, TTFT p50/p99 {s['ttft_ms']['p50']:.0f}/{s['ttft_ms']['p99']:.0f} ms, "
                f"ITL p50/p99 {s['itl_ms']['p50']:.1f}/{s['itl_ms']['p99']:.1f} ms{fail}")

print("\n| figure | value | target | |\n|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
PY

if [ ${#failed[@]} -gt 0 ]; then printf '== FAILED: %s\n' "${failed[@]}"; exit 1; fi
echo "== the two-GPU run finished without a failure (stages:${STAGES% })"
exit 0
