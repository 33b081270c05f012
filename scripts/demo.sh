#!/usr/bin/env bash
# demo.sh — the README's main job: install what is needed, build the release preset and run the
# flagship demonstration.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh release >/dev/null
exec build/release/examples/tensor_pipeline "$@"
