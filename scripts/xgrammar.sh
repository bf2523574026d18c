#!/usr/bin/env bash
# Fetches xgrammar's source (the structured-output engine: grammar and JSON
# schema to token masks), pinned by version and hash, and prints the folder
# it is unpacked in, which CMake takes as COHORT_XGRAMMAR_DIR. CMake builds
# its C++ core as a static library of ours (cmake/xgrammar.cmake).
#
# Source: the PyPI source distribution, which holds the C++ core and the
# third-party headers it needs (picojson, dlpack). Only xgrammar itself is
# taken as source (--no-binary xgrammar): `--no-binary :all:` would build
# pip's own build dependencies (cmake) from source too. Unpacked once into
# the cache, with our patches applied (cmake/xgrammar-*.patch: JSON numbers
# of at most 16 digits, as llama.cpp's converter writes them); a folder
# already there is kept, so a changed patch needs a new PATCH_LEVEL.
#
# --library: also builds xgrammar's static library (cmake/xgrammar/, the
# release build's flags) once into the cache and prints the library's path
# instead, for COHORT_XGRAMMAR_LIBRARY: a fresh clone then links it, as pip
# installs a wheel it built before. The folder's name carries a hash of
# what the library is made from (the source folder, the build files, the
# compiler's version), so a change to any of them builds a new one.
set -euo pipefail
VERSION=0.2.9
SHA256=87b466bca2475e29bb0323abc62c6c33cbcbcff47e5fb800a3e2099ac9620b90
PATCH_LEVEL=1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/cohort
DIR=$CACHE/xgrammar-$VERSION-p$PATCH_LEVEL
TMP= BUILD=
trap 'rm -rf ${TMP:+"$TMP"} ${BUILD:+"$BUILD"}' EXIT
if [ ! -f "$DIR/include/xgrammar/xgrammar.h" ]; then
  mkdir -p "$CACHE"
  TMP=$(mktemp -d "$CACHE/xgrammar-fetch.XXXXXX")
  python3 -m pip download -q --disable-pip-version-check --no-deps \
    --no-binary xgrammar "xgrammar==$VERSION" -d "$TMP" >&2
  ARCHIVE=$TMP/xgrammar-$VERSION.tar.gz
  echo "$SHA256  $ARCHIVE" | sha256sum -c --quiet - >&2 ||
    { echo "error: xgrammar-$VERSION.tar.gz does not have the pinned sha256" >&2; exit 1; }
  tar -xzf "$ARCHIVE" -C "$TMP"
  for p in "$ROOT"/cmake/xgrammar-*.patch; do
    patch -s -p1 -d "$TMP/xgrammar-$VERSION" <"$p" >&2
  done
  rm -rf "$DIR"
  mv "$TMP/xgrammar-$VERSION" "$DIR"
fi
[ "${1:-}" = --library ] || { echo "$DIR"; exit 0; }

CXX_BIN=${CXX:-c++}
KEY=$( { echo "$DIR"; cat "$ROOT/cmake/xgrammar.cmake" "$ROOT/cmake/xgrammar/CMakeLists.txt";
         "$CXX_BIN" --version; cmake --version; } | sha256sum | cut -c1-16)
LIBDIR=$CACHE/xgrammar-$VERSION-p$PATCH_LEVEL-lib-$KEY
if [ ! -f "$LIBDIR/libcohort_xgrammar.a" ]; then
  BUILD=$(mktemp -d "$CACHE/xgrammar-build.XXXXXX")
  cmake -S "$ROOT/cmake/xgrammar" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$CXX_BIN" -DCOHORT_XGRAMMAR_DIR="$DIR" >/dev/null
  cmake --build "$BUILD" -j "$(nproc)" >&2
  mkdir -p "$LIBDIR.tmp"
  cp "$BUILD/libcohort_xgrammar.a" "$LIBDIR.tmp/"
  rm -rf "$LIBDIR"
  mv "$LIBDIR.tmp" "$LIBDIR"
fi
echo "$LIBDIR/libcohort_xgrammar.a"
