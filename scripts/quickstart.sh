#!/usr/bin/env bash
# The main job on the embedded default: installs dependencies, builds, builds
# a bucketed dataset (topic x quality) from text Debian ships (Python
# documentation, C++ library sources, Linux manual pages, licences), plans
# the quickstart mixture against it (refusing any repeated data), and trains
# the quickstart MoE on it for a few minutes with per-bucket token ledgers and
# held-out loss per bucket, then writes runs/quickstart/report.html. A
# previous runs/quickstart is moved aside, never deleted. Extra arguments go
# to `moetrain train`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh  # what the main job builds and reads; the tests' packages come with --tests
# The main job needs the binary alone: a fresh build directory is configured
# without the tests (scripts/test.sh turns them on); an existing one keeps its
# setting.
if [[ ! -f "${BUILD_DIR:-build}/CMakeCache.txt" ]]; then export MT_BUILD_TESTS=OFF; fi
scripts/build.sh moetrain
bin=${BUILD_DIR:-build}/src/moetrain
if [[ ! -f runs/quickstart-data/manifest.json ]]; then
  "$bin" data build --config configs/data/quickstart.toml --out runs/quickstart-data
fi
"$bin" data plan runs/quickstart-data --mixture configs/data/quickstart-mixture.toml --config configs/quickstart.toml
exec "$bin" train --config configs/quickstart.toml --run-dir runs/quickstart --move-aside "$@"
