#!/usr/bin/env bash
# build.sh PRESET — configure and build one CMake preset (debug, release, asan, tsan).
# Warnings are errors when CI=true or CHANFLOW_WERROR=1. Uses at most $CHANFLOW_JOBS jobs (default:
# the number of cores).
set -euo pipefail
preset=${1:-release}
cd "$(dirname "$0")/.."
werror=OFF
if [[ "${CI:-}" == "true" || "${CHANFLOW_WERROR:-0}" == "1" ]]; then werror=ON; fi
jobs=${CHANFLOW_JOBS:-$(nproc)}
cmake --preset "$preset" -DCHANFLOW_WERROR="$werror" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
