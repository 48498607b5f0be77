#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every CTest test
# (unit, gradient checks, golden reference, end-to-end), the Hugging Face
# interoperability tests included: their Python venv (transformers,
# lm-evaluation-harness) is built here, once per pinned requirements file.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
scripts/interop-venv.sh >/dev/null
MT_BUILD_TESTS=ON scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 -j1 "$@"
