#!/usr/bin/env bash
# The whole test suite. Installs and builds (scripts/setup.sh, then the
# test-only packages), then:
#   1. the release lane: C++ unit tests; Python tests against the reference
#      implementations (gguf, llama-cpp-python, openai); the llama.cpp
#      comparisons once more against llama.cpp built without AVX-512
#      (scripts/llama_cpp_variant.sh) where this CPU's native build differs
#      from that one (on a CPU without AVX-512 they are the same build).
#      Beside it, at the lowest CPU priority, the sanitizer and fuzzer
#      builds: compiling is not timing-sensitive, takes the cores the tests
#      leave idle (their servers' waits, single-threaded steps), and leaves
#      the tests' timing as on an idle machine;
#   2. the checked lane: the unit tests under AddressSanitizer +
#      UndefinedBehaviorSanitizer, then the adversarial-file tests with that
#      binary beside the GGUF reader fuzzer (libFuzzer, one core, a fixed
#      number of runs).
# Logs of the side-by-side parts are in build-logs/; the time of every stage
# is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=$(nproc)
LOGS=$ROOT/build-logs
rm -rf "$LOGS"
mkdir -p "$LOGS"
source scripts/apt_install.sh
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost  # the tests' servers are local

# stage NAME CMD...: runs CMD, appending "seconds NAME" to the lane's timing file.
stage() {
  local name=$1 t0=$SECONDS
  shift
  echo "== $name"
  "$@"
  printf '%6d  %s\n' $((SECONDS - t0)) "$name" >>"$TIMES"
}

install_test_deps() {
  # chromium and its driver: the web page's browser tests (test_webui_browser.py).
  apt_install clang libclang-rt-14-dev chromium chromium-driver
  python3 -m pip install -q --disable-pip-version-check -r tests/requirements.txt
  scripts/llama_cpp_variant.sh native
  LLAMA_AVX2=$(scripts/llama_cpp_variant.sh avx2)
  scripts/llama_cpp_source.sh >/dev/null  # llama.cpp's own test cases (test_json_schema_llama_cases.py)
}

# The CPU features a llama-cpp-python build reports (llama_print_system_info).
llama_cpp_features() {
  python3 -c 'import llama_cpp; print(llama_cpp.llama_print_system_info().decode().strip())'
}

release_lane() {
  # cohort's side of the llama.cpp comparisons (and the F64 reference),
  # computed in the python tests, is read back by the AVX2 run instead of
  # computed again (tests/python/run_cache.py).
  export COHORT_TEST_RESULTS_CACHE=$LOGS/test-results
  # The slowest unit test takes 2.5 s on 2 cores: a test past 120 s hangs.
  stage "unit tests (release)" ctest --test-dir build --output-on-failure -j "$JOBS" --timeout 120
  stage "python tests" python3 -m pytest -q --durations=12 tests/python
  # On a CPU without AVX-512 the native build has the AVX2 build's kernels
  # (llama.cpp reports the same features for both): the run would repeat the
  # one above, so it is left out, and said so.
  local native avx2
  native=$(llama_cpp_features)
  avx2=$(PYTHONPATH="$LLAMA_AVX2" llama_cpp_features)
  if [ "$native" = "$avx2" ]; then
    echo "== llama.cpp comparisons against AVX2 llama.cpp: not run again, the native build is the same ($native)"
  else
    stage "llama.cpp comparisons against AVX2 llama.cpp" env PYTHONPATH="$LLAMA_AVX2" \
      python3 -m pytest -q -s tests/python/test_forward_reference.py \
      tests/python/test_generation_reference.py tests/python/test_perplexity.py
  fi
  stage "llama.cpp's server tests" scripts/llama_server_suite.sh
}

build_asan() {
  # -O1 -g1: half the compile time of -O2 -g; line tables are all a sanitizer
  # report needs (-O0 compiles faster still but triples the unit tests' time).
  # Compiling is further cut (the build took 1648 s at nice 19 beside the
  # release lane's tests on 2 cores) by
  # the system's compiled fmt instead of header-only (COHORT_FMT_LIBRARY, on
  # with COHORT_SANITIZE), unity files (the libraries') and precompiled
  # headers; only what the checked lane runs is built, and xgrammar is the
  # library built once into the cache (scripts/xgrammar.sh --library). The
  # tests' own files compile at -O0 (src/CMakeLists.txt).
  cmake -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOHORT_SANITIZE=ON \
    -DCOHORT_CUDA=OFF -DCOHORT_XGRAMMAR_DIR="$XGRAMMAR_DIR" -DCOHORT_XGRAMMAR_LIBRARY="$XGRAMMAR_LIBRARY" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
    -DCMAKE_UNITY_BUILD=ON -DCOHORT_PCH=ON >/dev/null
  cmake --build build-asan -j "$JOBS" --target cohort cohort_tests
}

build_fuzzer() {
  CC=clang CXX=clang++ cmake -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCOHORT_FUZZ=ON -DCOHORT_TESTS=OFF -DCOHORT_CUDA=OFF -DCOHORT_XGRAMMAR_DIR="$XGRAMMAR_DIR" >/dev/null
  cmake --build build-fuzz -j "$JOBS" --target gguf_fuzz
}

# Inputs of at most 4 KiB parse in microseconds even under ASan, so one
# second is ample; crash files go to build-fuzz/artifacts/.
run_fuzzer() {
  rm -rf build-fuzz/corpus build-fuzz/seeds build-fuzz/artifacts
  python3 tests/fuzz/make_corpus.py build-fuzz/seeds
  mkdir -p build-fuzz/corpus build-fuzz/artifacts
  build-fuzz/bin/gguf_fuzz -seed=1 -runs="${COHORT_FUZZ_RUNS:-200000}" -max_len=4096 \
    -rss_limit_mb=2048 -timeout=1 -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/ \
    build-fuzz/corpus build-fuzz/seeds 2>build-fuzz/fuzz.log ||
    { tail -40 build-fuzz/fuzz.log; ls -l build-fuzz/artifacts; return 1; }
  grep -E "^Done|stat::number_of_executed_units" build-fuzz/fuzz.log
}

side_builds() {
  stage "ASan + UBSan build" build_asan
  stage "fuzzer build" build_fuzzer
}

# The unit tests under the sanitizers, in one process a core (gtest's
# shards) rather than one a test as ctest runs them: a process of that
# build takes 0.2 s of CPU to start and to check for leaks at its exit, about
# 110 s over the suite. A shard takes 80-100 s on 2 cores; one past 600 s hangs.
asan_unit_tests() {
  local i status=0 pids=()
  for ((i = 0; i < JOBS; i++)); do
    (cd build-asan/src && GTEST_TOTAL_SHARDS=$JOBS GTEST_SHARD_INDEX=$i timeout 600 \
      ../bin/cohort_tests --gtest_brief=1) >"$LOGS/asan-unit-$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || {
      status=1
      echo "== shard $i of the sanitized unit tests failed:"
      tail -n 80 "$LOGS/asan-unit-$i.log"
    }
  done
  grep -hE "^\[  (PASSED|FAILED|SKIPPED) |tests? from .* ran" "$LOGS"/asan-unit-*.log
  return $status
}

checked_lane() {
  stage "unit tests (ASan + UBSan)" asan_unit_tests
  (TIMES=$LOGS/times-4-fuzz.txt; stage "GGUF reader fuzzing" run_fuzzer) >"$LOGS/fuzz.log" 2>&1 &
  local fuzz_pid=$!
  stage "adversarial GGUF tests (ASan + UBSan)" env COHORT_BIN="$ROOT/build-asan/bin/cohort" \
    python3 -m pytest -q tests/python/test_gguf_adversarial.py
  wait "$fuzz_pid" || { cat "$LOGS/fuzz.log"; return 1; }
  cat "$LOGS/fuzz.log"
}

TIMES=$LOGS/times-0-setup.txt
t_start=$SECONDS
stage "setup.sh (build)" scripts/setup.sh
XGRAMMAR_DIR=$(scripts/xgrammar.sh)  # fetched and built by setup.sh
XGRAMMAR_LIBRARY=$(scripts/xgrammar.sh --library)
stage "test-only packages" install_test_deps

echo "== release lane, and beside it the sanitizer and fuzzer builds (build-logs/side-builds.log)"
(TIMES=$LOGS/times-2-side-builds.txt; renice -n 19 $BASHPID >/dev/null; side_builds) \
  >"$LOGS/side-builds.log" 2>&1 &
builds_pid=$!
status=0
# Each lane runs in a subshell of its own, started in the background and
# waited for: a function called on the left of || would run with errexit off.
(TIMES=$LOGS/times-1-release.txt; release_lane) 2>&1 | tee "$LOGS/release.log" &
wait $! || status=1
wait "$builds_pid" || { status=1; echo "== sanitizer/fuzzer builds FAILED:"; tail -80 "$LOGS/side-builds.log"; }
if ((status == 0)); then
  (TIMES=$LOGS/times-3-checked.txt; checked_lane) &
  wait $! || status=1
fi

for f in "$LOGS"/times-*.txt; do
  echo "== stage times (s), $(basename "$f" .txt | cut -d- -f3) lane"
  cat "$f"
done
echo "== total $((SECONDS - t_start)) s"
((status == 0)) || { echo "== tests FAILED"; exit 1; }
grep -hE "^[0-9]+ passed|llama.cpp built" "$LOGS/release.log" | sort | uniq -c || true
echo "== all tests passed"
