#!/usr/bin/env bash
# Installs moetrain's build and test dependencies from Debian's packages.
# Idempotent: skips apt-get entirely when every package is already present.
set -euo pipefail
# The golden-reference fixtures in tests/golden/data are committed; only
# regenerating them needs python3-torch (see tools/ref/README.md). The
# optional libFuzzer build (-DMT_FUZZ=ON) needs clang and libclang-rt-14-dev;
# the fuzz harness also runs inside ctest with g++, so tests need neither.

packages=(
  build-essential cmake ninja-build pkg-config
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers  # GEMM (fp32 + bf16/AMX); its CMake config wants OpenCL
  libtomlplusplus-dev libcli11-dev libfmt-dev nlohmann-json3-dev libxxhash-dev
  librandom123-dev                 # counter-based RNG (Philox4x32-10)
  liblbfgs-dev                     # L-BFGS for the scaling-law fits (src/ladder)
  libxgboost-dev                   # gradient-boosted trees for the mixture search (src/mix)
  libsentencepiece-dev libzstd-dev zlib1g-dev  # data pipeline: BPE tokenizer, .zst/.gz corpora
  libfasttext-dev                  # data labels: quality and topic classifiers, document vectors
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
  libprotobuf-dev protobuf-compiler  # tests: decode the TensorBoard writer's Event messages
  libboost-dev                     # Boost.CRC: the masked CRC-32C of TFRecord framing (header-only)
  python3-doc manpages-dev         # quickstart corpus (Debian-shipped text; also base-files' licences)
  chromium                         # tests render the HTML reports in a real headless browser
  python3 python3-venv             # the interop tests' venv (scripts/interop-venv.sh: transformers, lm-eval)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  [[ $(id -u) -eq 0 ]] || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
