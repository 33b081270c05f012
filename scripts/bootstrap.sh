#!/usr/bin/env bash
# bootstrap.sh — install every Debian 12 package chanflow's build, tests, benchmarks and peers need.
#
# Idempotent: packages already installed are skipped by apt-get. Runs `apt-get update` first.
# Usage: scripts/bootstrap.sh            (as root, or with sudo available)
#        CHANFLOW_SKIP_BOOTSTRAP=1 ...   (skip entirely, e.g. on a machine you manage yourself)
set -euo pipefail

if [[ "${CHANFLOW_SKIP_BOOTSTRAP:-0}" == "1" ]]; then
  echo "bootstrap: skipped (CHANFLOW_SKIP_BOOTSTRAP=1)"
  exit 0
fi

# Grouped by purpose so a reader can see why each package is here.
packages=(
  # toolchain
  build-essential g++ cmake ninja-build pkg-config git clang-14 libclang-rt-14-dev
  clang-format clang-tidy
  # libraries (ARCHITECTURE.md "Dependencies")
  libboost-context-dev      # green-thread context switching (Boost.Context fiber)
  libprotobuf-dev protobuf-compiler   # program IR file format
  libopenblas-dev           # GEMM
  libdlpack-dev             # tensor exchange header
  libgtest-dev libgmock-dev # unit and conformance tests
  libbenchmark-dev          # micro-benchmarks
  libcli11-dev              # the chanflow command line
  nlohmann-json3-dev        # JSON save/load of object graphs
  zlib1g-dev                # examples/train_digits reads the gzip dataset
  libfmt-dev                # formatting (libstdc++ 12 has no <format>)
  # peers for side-by-side benchmarks (PERFORMANCE.md)
  golang-go libboost-fiber-dev libtbb-dev
  # test oracles and charts
  python3 python3-numpy gnuplot-nox
  python3-matplotlib        # scripts/plot_training.py (the flagship's loss/accuracy chart)
)

sudo_cmd=()
if [[ "$(id -u)" != "0" ]]; then
  if command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); else
    echo "bootstrap: error: not root and no sudo; install these Debian packages yourself:" >&2
    echo "  ${packages[*]}" >&2
    exit 1
  fi
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "bootstrap: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "bootstrap: installing ${#missing[@]} package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo_cmd[@]}" apt-get update -qq; then
  echo "bootstrap: error: 'apt-get update' failed — is the Debian archive reachable?" >&2
  exit 1
fi
if ! "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/chanflow-bootstrap.log 2>&1; then
  echo "bootstrap: error: 'apt-get install' failed; last lines of /tmp/chanflow-bootstrap.log:" >&2
  tail -n 20 /tmp/chanflow-bootstrap.log >&2
  exit 1
fi
echo "bootstrap: done"
