#!/usr/bin/env bash
# Configures and builds moetrain (Release) into ${BUILD_DIR:-build}: every
# target, or only those named (scripts/quickstart.sh builds `moetrain` alone,
# not the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build_dir" -j"${JOBS:-$(nproc)}" "$@"
