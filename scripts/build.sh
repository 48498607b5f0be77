#!/usr/bin/env bash
# Configures and builds moetrain (Release) into ${BUILD_DIR:-build}: every
# target, or only those named. MT_BUILD_TESTS=OFF configures without the
# tests and micro-benchmarks (scripts/quickstart.sh on a fresh checkout);
# unset, a build directory keeps what it was configured with (new: ON).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
tests=()
[[ -n "${MT_BUILD_TESTS:-}" ]] && tests=(-DMT_BUILD_TESTS="$MT_BUILD_TESTS")
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${tests[@]}" >/dev/null
ninja -C "$build_dir" -j"${JOBS:-$(nproc)}" "$@"
