#!/usr/bin/env bash
# bootstrap.sh — install the Debian 12 packages chanflow needs, in two sets.
#
#   scripts/bootstrap.sh          what the README's two commands need: build, run the demo, run
#                                 every test of scripts/test.sh (about 225 MB to download, 1.1 GB
#                                 on disk on a minimal Debian 12, and Chromium's 113 MB and 357 MB
#                                 with its libraries on top; see docs/getting_started.md)
#   scripts/bootstrap.sh --dev    also what CI, benchmarks and linting need: the peers that
#                                 scripts/bench.py runs side by side, clang-14 with libFuzzer for
#                                 the fuzz scripts, clang-format and clang-tidy, git, PyTorch, mypy (about 567 MB,
#                                 2.7 GB on disk in all)
#   CHANFLOW_SKIP_BOOTSTRAP=1 ... skip entirely (e.g. on a machine you manage yourself)
#
# Idempotent: packages already installed are skipped; apt-get runs (update, then install) only
# when something is missing. As root, or with sudo available. Nothing comes from anywhere but the
# Debian archive.
set -euo pipefail

dev=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "bootstrap: unknown argument '$arg' (use --dev or --help)" >&2
      exit 2
      ;;
  esac
done

if [[ "${CHANFLOW_SKIP_BOOTSTRAP:-0}" == "1" ]]; then
  echo "bootstrap: skipped (CHANFLOW_SKIP_BOOTSTRAP=1)"
  exit 0
fi

# Grouped by purpose so a reader can see why each package is here.
packages=(
  # toolchain (GCC 12 also brings the ASan/UBSan/TSan runtimes the asan and tsan presets use)
  build-essential g++ cmake ninja-build pkg-config
  ccache                    # the top-level CMakeLists.txt compiles through it when present
  # libraries (docs/architecture.md, "Dependencies")
  libboost-context-dev      # green-thread context switching (Boost.Context fiber)
  libprotobuf-dev protobuf-compiler   # program IR file format
  libopenblas-dev           # GEMM
  libdlpack-dev             # tensor exchange header
  libcli11-dev              # the chanflow command line, train_digits' options
  nlohmann-json3-dev        # JSON save/load of object graphs, traces, metrics
  zlib1g-dev                # examples/train_digits reads the gzip dataset
  libfmt-dev                # formatting (libstdc++ 12 has no <format>)
  # tests and the release build
  libgtest-dev libgmock-dev # unit and conformance tests
  libbenchmark-dev          # chanflow's own micro-benchmarks, built by the release preset
  python3 python3-numpy     # tensor_npy_numpy_roundtrip reads chanflow's .npy files with NumPy
  python3-dev pybind11-dev python3-pybind11  # the Python module chanflow._native (python/)
  python3-pytest            # the Python suites (tests/python, ctest label `python`)
  dataset-fashion-mnist     # chanflow.dataset.fashion_mnist reads its IDX files (tests/python)
  chromium                  # headless: `chanflow trace html`'s report rendered (tools/check_trace_html.py)
  # the demo and the README's examples
  python3-matplotlib        # scripts/plot_training.py (the flagship's loss/accuracy chart)
  graphviz                  # `chanflow dot FILE | dot -Tpng` in the README
)
dev_packages=(
  git                       # scripts/lint.sh (git ls-files), scripts/bench.py (the commit)
  clang-format clang-tidy   # scripts/lint.sh (CI runs --format-only)
  clang-14 libclang-rt-14-dev  # scripts/fuzz_*.sh: libFuzzer + ASan/UBSan runtimes of clang 14
  # peers for side-by-side benchmarks (scripts/bench.py, docs/benchmarks.md)
  golang-go libboost-fiber-dev libtbb-dev
  gnuplot-nox               # scripts/bench.py's chart
  python3-torch             # tests/python's zero-copy exchange with PyTorch (skipped without it)
  python3-mypy              # tests/python/test_native_stubs.py type-checks the .pyi (skipped without it)
)
set_name="base set"
if [[ $dev == 1 ]]; then
  packages+=("${dev_packages[@]}")
  set_name="base and --dev sets"
fi

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
  echo "bootstrap: all ${#packages[@]} packages (${set_name}) already installed"
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
