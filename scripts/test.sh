#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every CTest test
# (unit, gradient checks, golden reference, end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 -j1 "$@"
