#!/usr/bin/env bash
# Creates (once) the Python venv the interoperability tests run in, and prints
# its path. Cached under ${MOETRAIN_CACHE:-/var/cache/moetrain}, keyed by the
# hash of tools/interop/requirements.txt: a later run with the same pins reuses
# it, a changed pin builds a new one. The install takes minutes (torch, and
# llama.cpp compiled from source).
#   --installed   print the path only if the venv is complete; exit 1 otherwise
set -euo pipefail
cd "$(dirname "$0")/.."
req=tools/interop/requirements.txt
cache=${MOETRAIN_CACHE:-/var/cache/moetrain}
key=$(sha256sum "$req" | cut -c1-16)
venv="$cache/venv-$key"
if [[ -x "$venv/bin/python" && -f "$venv/.complete" ]]; then
  echo "$venv"
  exit 0
fi
if [[ "${1:-}" == "--installed" ]]; then
  echo "interop-venv: $venv is not installed: run scripts/interop-venv.sh" >&2
  exit 1
fi
mkdir -p "$cache"
# A venv cannot be moved (its scripts name their path), so an interrupted
# install is recognised by the missing .complete marker and started over.
rm -rf "$venv"
start=$(date +%s)
"${PYTHON:-python3}" -m venv "$venv" >&2
# llama-cpp-python compiles llama.cpp: for the baseline x86-64 ISA, since the
# cached venv outlives the CPU it was built on (tests run tiny models only).
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF \
  -DGGML_AVX512=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
touch "$venv/.complete"
echo "interop-venv: installed $req into $venv in $(( $(date +%s) - start )) s" >&2
echo "$venv"
