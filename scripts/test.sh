#!/usr/bin/env bash
# test.sh — the README's test command: install what is needed, build the release preset and run
# the whole test suite (unit, conformance, stress in short mode, examples, install).
#   CHANFLOW_STRESS_LONG=1 scripts/test.sh   runs the stress tests long.
#   scripts/test.sh -L conformance           extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh release
ctest --preset release "$@"
