#!/usr/bin/env bash
# Installs every dependency (Debian packages, then the Python packages that the
# tests and the default model come from) and builds cohort into build/.
# Idempotent: what is already installed is not installed again.
# COHORT_CUDA=ON|OFF overrides the CUDA default (ON when nvcc is found).
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev libpcre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# llama-cpp-python compiles llama.cpp from source; pip keeps the built wheel in
# its cache (~/.cache/pip), so only the first install pays for it.
python3 -m pip install -q --disable-pip-version-check -r tests/requirements.txt

CUDA_FLAG=()
[ -n "${COHORT_CUDA:-}" ] && CUDA_FLAG=(-DCOHORT_CUDA="$COHORT_CUDA")
cmake -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${CUDA_FLAG[@]}" >/dev/null
cmake --build build -j "$(nproc)"
