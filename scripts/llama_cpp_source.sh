#!/usr/bin/env bash
# Fetches the source distribution of the llama-cpp-python release the tests
# compare against (the llama.cpp it vendors), pinned by version and hash,
# and prints the folder of llama.cpp's source in it. The tests read
# llama.cpp's own test cases from there (tests/test-json-schema-to-grammar.cpp).
# Unpacked once into the cache; a folder already there is kept.
set -euo pipefail
VERSION=0.3.36  # as scripts/llama_cpp_variant.sh
SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/cohort
DIR=$CACHE/llama-cpp-python-$VERSION-source
# What is kept of it: llama.cpp's tests and its JSON-schema converter.
KEEP=(vendor/llama.cpp/tests vendor/llama.cpp/common/json-schema-to-grammar.cpp)
if [ ! -f "$DIR/tests/test-json-schema-to-grammar.cpp" ]; then
  mkdir -p "$CACHE"
  TMP=$(mktemp -d "$CACHE/llama-cpp-python-fetch.XXXXXX")
  trap 'rm -rf "$TMP"' EXIT
  python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
    "llama-cpp-python==$VERSION" -d "$TMP" >&2
  ARCHIVE=$TMP/llama_cpp_python-$VERSION.tar.gz
  echo "$SHA256  $ARCHIVE" | sha256sum -c --quiet - >&2 ||
    { echo "error: llama_cpp_python-$VERSION.tar.gz does not have the pinned sha256" >&2; exit 1; }
  tar -xzf "$ARCHIVE" -C "$TMP" "${KEEP[@]/#/llama_cpp_python-$VERSION/}"
  rm -rf "$DIR"
  mv "$TMP/llama_cpp_python-$VERSION/vendor/llama.cpp" "$DIR"
fi
echo "$DIR"
