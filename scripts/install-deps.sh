#!/usr/bin/env bash
# Installs moetrain's dependencies from Debian's packages: those of the main
# job, and with --tests those of the test suite too. Idempotent: skips
# apt-get entirely when every package is already present.
set -euo pipefail
# The golden-reference fixtures in tests/golden/data are committed; only
# regenerating them needs python3-torch (see tools/ref/README.md). The
# optional libFuzzer build (-DMT_FUZZ=ON) needs clang and libclang-rt-14-dev;
# the fuzz harness also runs inside ctest with g++, so tests need neither.

# What the main job (scripts/quickstart.sh) builds with and reads.
packages=(
  build-essential cmake ninja-build pkg-config
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers  # GEMM (fp32 + bf16/AMX); its CMake config wants OpenCL
  libtomlplusplus-dev libcli11-dev libfmt-dev nlohmann-json3-dev libxxhash-dev
  librandom123-dev                 # counter-based RNG (Philox4x32-10)
  liblbfgs-dev                     # L-BFGS for the scaling-law fits (src/ladder)
  libxgboost-dev                   # gradient-boosted trees for the mixture search (src/mix)
  libeigen3-dev                    # Gaussian-process surrogates of the hyperparameter sweep (src/sweep)
  libsentencepiece-dev libzstd-dev zlib1g-dev  # data pipeline: BPE tokenizer, .zst/.gz corpora
  libfasttext-dev                  # data labels: quality and topic classifiers, document vectors
  libopenmpi-dev openmpi-bin
  libboost-dev                     # Boost.CRC: the masked CRC-32C of TFRecord framing (header-only)
  python3-doc manpages-dev         # quickstart corpus (Debian-shipped text; also base-files' licences)
)
# --tests: what the test suite and micro-benchmarks add (scripts/test.sh).
if [[ "${1:-}" == "--tests" ]]; then
  packages+=(
    libgtest-dev libgmock-dev libbenchmark-dev
    libprotobuf-dev protobuf-compiler  # tests: decode the TensorBoard writer's Event messages
    chromium                         # tests render the HTML reports in a real headless browser
    python3 python3-venv             # the interop tests' venv (scripts/interop-venv.sh: transformers, lm-eval)
    slurmctld slurmd slurm-client munge  # tests/slurm start a real one-node Slurm (tests/support/slurm_cluster.h)
  )
elif [[ -n "${1:-}" ]]; then
  echo "install-deps: unknown argument '$1' (expected nothing, or --tests)" >&2
  exit 2
fi

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
