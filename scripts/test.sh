#!/usr/bin/env bash
# The whole test suite: installs and builds (scripts/setup.sh), then
#   1. C++ unit tests (release build),
#   2. the same unit tests under AddressSanitizer + UndefinedBehaviorSanitizer,
#   3. Python tests against reference implementations (gguf, llama-cpp-python),
#      with the release binary and, for the adversarial-file tests, the
#      sanitizer binary,
#   4. the GGUF reader fuzzer (libFuzzer, ASan + UBSan) for a fixed number of runs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=$(nproc)

scripts/setup.sh

echo "== unit tests (release)"
ctest --test-dir build --output-on-failure -j "$JOBS"

echo "== unit tests (ASan + UBSan)"
cmake -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOHORT_SANITIZE=ON \
  -DCOHORT_CUDA=OFF >/dev/null
cmake --build build-asan -j "$JOBS"
ctest --test-dir build-asan --output-on-failure -j "$JOBS"

echo "== python tests"
python3 -m pytest -q tests/python
COHORT_BIN=$ROOT/build-asan/bin/cohort python3 -m pytest -q tests/python/test_gguf_adversarial.py

echo "== fuzzing the GGUF reader"
CC=clang CXX=clang++ cmake -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCOHORT_FUZZ=ON -DCOHORT_TESTS=OFF -DCOHORT_CUDA=OFF >/dev/null
cmake --build build-fuzz -j "$JOBS" --target gguf_fuzz
rm -rf build-fuzz/corpus build-fuzz/seeds
python3 tests/fuzz/make_corpus.py build-fuzz/seeds
mkdir -p build-fuzz/corpus
build-fuzz/bin/gguf_fuzz -seed=1 -runs="${COHORT_FUZZ_RUNS:-200000}" -max_len=4096 \
  -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 build-fuzz/corpus build-fuzz/seeds \
  2>build-fuzz/fuzz.log || { tail -40 build-fuzz/fuzz.log; exit 1; }
grep -E "^Done|stat::number_of_executed_units" build-fuzz/fuzz.log

echo "== all tests passed"
