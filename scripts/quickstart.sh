#!/usr/bin/env bash
# The main job on the embedded default: installs dependencies, builds, and
# trains the quickstart MoE on Debian's Python documentation (byte-level text)
# for a few minutes, showing the loss fall. Extra arguments go to `moetrain train`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/src/moetrain train --run-dir runs/quickstart "$@"
