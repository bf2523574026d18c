#!/usr/bin/env bash
# Builds (once) and installs llama-cpp-python, the reference the tests compare
# against, in one of two builds:
#   native: llama.cpp's default build for this CPU (-march=native, AMX off),
#           installed into the Python environment;
#   avx2:   the kernels llama.cpp picks on an x86-64 CPU with AVX2 + FMA + F16C
#           and no AVX-512, installed into its own prefix, which is printed;
#           use it as PYTHONPATH=$(scripts/llama_cpp_variant.sh avx2).
# scripts/test.sh runs the llama.cpp comparisons against both, so what they
# assert is checked for both kinds of CPU on either kind of machine.
#
# Wheels are cached under ${XDG_CACHE_HOME:-~/.cache}/cohort, the native one
# keyed by this CPU's feature flags: pip's own cache keys wheels by version
# alone, so it would hand a wheel built for one CPU to another (SIGILL on a
# CPU without the first one's instructions) and cannot hold both builds.
set -euo pipefail
cd "$(dirname "$0")/.."

variant=${1:?usage: llama_cpp_variant.sh native|avx2}
version=0.3.36  # the llama.cpp the tests compare against (vendored in this release)
case $variant in
  native)
    # Without AMX: llama.cpp's AMX matmul (taken for the Q4 types on CPUs that
    # report amx_int8) faults at its first ldtilecfg on our Sapphire Rapids
    # machines, so the reference would crash rather than compare. Explicit
    # -mno-* flags outlast -march=native.
    key=native-noamx-$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | sort | sha1sum | cut -c1-12)
    noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    cmake_args="-DCMAKE_C_FLAGS='$noamx' -DCMAKE_CXX_FLAGS='$noamx'" ;;
  avx2)
    key=avx2
    cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF" ;;
  *) echo "error: unknown llama.cpp variant '$variant' (known: native, avx2)" >&2; exit 2 ;;
esac
cache=${XDG_CACHE_HOME:-$HOME/.cache}/cohort
wheels=$cache/llama-cpp-python-$version-$key
pip=(python3 -m pip -q --disable-pip-version-check)

if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "llama_cpp_variant: compiling llama-cpp-python $version ($key), several minutes" >&2
  rm -rf "$wheels.tmp"
  CMAKE_ARGS=$cmake_args "${pip[@]}" wheel --no-deps --no-cache-dir --no-binary llama-cpp-python \
    -w "$wheels.tmp" "llama-cpp-python==$version" >&2
  mv "$wheels.tmp" "$wheels"
fi
wheel=$(ls "$wheels"/llama_cpp_python-*.whl)
if [ "$variant" = native ]; then
  "${pip[@]}" install --no-deps --force-reinstall "$wheel" >&2
else
  prefix=$wheels/site
  [ -d "$prefix/llama_cpp" ] || "${pip[@]}" install --no-deps --target "$prefix" "$wheel" >&2
  echo "$prefix"
fi
