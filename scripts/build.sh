#!/usr/bin/env bash
# build.sh PRESET — configure and build one CMake preset (debug, release, asan, tsan, clang).
# Warnings are errors when CI=true or CHANFLOW_WERROR=1. Uses at most $CHANFLOW_JOBS jobs (default:
# the number of cores). Compiles through ccache when it is installed (CHANFLOW_CCACHE, top-level
# CMakeLists.txt); with CI=true it prints this build's ccache hits and misses at the end.
set -euo pipefail
preset=${1:-release}
cd "$(dirname "$0")/.."
werror=OFF
if [[ "${CI:-}" == "true" || "${CHANFLOW_WERROR:-0}" == "1" ]]; then werror=ON; fi
jobs=${CHANFLOW_JOBS:-$(nproc)}
ccache_stats=0
if [[ "${CI:-}" == "true" ]] && command -v ccache >/dev/null 2>&1; then
  ccache_stats=1
  ccache --zero-stats >/dev/null # the statistics printed below are this build's
fi
cmake --preset "$preset" -DCHANFLOW_WERROR="$werror" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
if [[ $ccache_stats == 1 ]]; then
  echo "ccache, build of the $preset preset:"
  ccache --show-stats
fi
