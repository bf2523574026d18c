#!/usr/bin/env bash
# llama.cpp's own server tests (tools/server/tests of the llama.cpp vendored in
# the llama-cpp-python sdist the other reference tests use) against
# `cohort serve` in place of llama-server: the binary is the only thing
# swapped, every preset points at the default model (nothing can be
# downloaded; tests/llama_server/utils_local_model.py is appended to the
# suite's utils.py). Tests out of cohort's scope are deselected below, each
# with its reason. The tests whose assertions hold only for the tiny models
# of llama.cpp's own CI (their texts and token counts, a BOS in the prompt,
# generations that never end before n_predict, a BERT model's special
# tokens), and the few where cohort differs on purpose, are expected
# failures, each with its reason in tests/llama_server/model_bound.py (a
# pytest plugin); every other test must pass. scripts/test.sh runs it.
# On 2026-12-07: 164 of the 210 selected tests pass (one skipped by the
# suite itself); the other 45 are those.
#   scripts/llama_server_suite.sh [pytest args...]
# COHORT_BIN picks the binary (default build/bin/cohort); SUITE_FILES a
# subset of the files below; COHORT_SUITE_POLICY a phase policy (default:
# the server's, cohort).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
version=0.3.36
cache=${XDG_CACHE_HOME:-$HOME/.cache}/cohort
sdist=$cache/sdist/llama_cpp_python-$version.tar.gz
pip=(python3 -m pip -q --disable-pip-version-check)

if [ ! -f "$sdist" ]; then
  mkdir -p "$cache/sdist"
  "${pip[@]}" download --no-deps --no-binary :all: -d "$cache/sdist" "llama-cpp-python==$version"
fi
"${pip[@]}" install -r tests/llama_server/requirements.txt

# The suite with the chat templates its tests read (../../../models/templates).
top=$ROOT/build-llama-server-tests
rm -rf "$top"
mkdir -p "$top"
tar -xzf "$sdist" -C "$top" --strip-components=3 \
  "llama_cpp_python-$version/vendor/llama.cpp/tools/server/tests" \
  "llama_cpp_python-$version/vendor/llama.cpp/models/templates"
work=$top/tools/server/tests
cat tests/llama_server/utils_local_model.py >>"$work/utils.py"
cp tests/llama_server/model_bound.py "$work/"

bin=$(readlink -f "${COHORT_BIN:-build/bin/cohort}")
cat >"$work/llama-server" <<WRAP
#!/bin/sh
exec "$bin" serve ${COHORT_SUITE_POLICY:+--phase-policy $COHORT_SUITE_POLICY} "\$@"
WRAP
chmod +x "$work/llama-server"

files=(test_basic test_tokenize test_completion test_chat_completion test_metrics test_security
       test_ignore_eos test_ctx_shift test_template test_embedding)
[ -z "${SUITE_FILES:-}" ] || read -r -a files <<<"$SUITE_FILES"  # e.g. SUITE_FILES="test_basic test_template"
paths=()
for f in "${files[@]}"; do paths+=("unit/$f.py"); done
# Out of scope (each test name with its reason); the rest must pass.
declare -A out_of_scope=(
  [test_local_media_file]="vision (--media-path)"
  [test_cors_origins_defaults_to_localhost_with_tools_enabled]="server-side tools (--tools)"
  [test_cors_proxy_only_forwards_explicit_proxy_headers]="the MCP proxy (--ui-mcp-proxy)"
)
expr=""
for name in "${!out_of_scope[@]}"; do expr+="${expr:+ or }$name"; done
deselect=(-k "not ($expr)")
cd "$work"
LLAMA_SERVER_BIN_PATH=$work/llama-server COHORT_SUITE_MODEL=$(python3 "$ROOT/scripts/default_model.py") \
  NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost \
  python3 -m pytest -q -p no:cacheprovider -p model_bound -rxX "${paths[@]}" "${deselect[@]}" "$@"
