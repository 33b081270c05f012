#!/usr/bin/env bash
# demo.sh — the README's first command: install what is needed, build (release) and run the
# main job: examples/train_fashion trains an MLP on Fashion-MNIST (Debian's dataset-fashion-mnist)
# with chanflow's data-parallel pipeline — a loader green thread, GoMachine workers, a coordinator
# selecting over gradients, ticker and deadline, an evaluation program on the executor — then
# draws its loss/accuracy chart.
#
#   scripts/demo.sh                          # MLP, 2 workers, 10 epochs, outputs in out/train_fashion
#   scripts/demo.sh --model cnn              # the LeNet CNN (3 epochs; a few minutes on 2 cores)
#   scripts/demo.sh --workers 1 --seed 7     # arguments go to train_fashion (--help lists them)
#   CHANFLOW_DEMO_OUT=/tmp/run scripts/demo.sh              # another output directory
#
# Exit status: non-zero when a step fails (bootstrap, build, training, the chart).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${CHANFLOW_DEMO_OUT:-out/train_fashion}

scripts/bootstrap.sh # the README's set; the demo needs nothing from --dev
# Only what the demo runs (the libraries and train_fashion); scripts/test.sh builds everything.
echo "demo: building train_fashion with the release preset (build/release) ..."
werror=OFF
if [[ "${CI:-}" == "true" || "${CHANFLOW_WERROR:-0}" == "1" ]]; then werror=ON; fi
build_log=$(mktemp)
if ! { cmake --preset release -DCHANFLOW_WERROR="$werror" &&
  cmake --build --preset release -j "${CHANFLOW_JOBS:-$(nproc)}" --target train_fashion; } \
  >"$build_log" 2>&1; then
  tail -n 30 "$build_log" >&2
  echo "demo: error: the build failed (full log: $build_log)" >&2
  exit 1
fi
rm -f "$build_log"

build/release/examples/train_fashion --out-dir "$out" "$@"

# Debian's matplotlib belongs to /usr/bin/python3 (a python3 earlier on PATH may not have it).
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3
png=$("$python" scripts/plot_training.py "$out/metrics.csv" -o "$out/training.png")

echo
echo "demo: outputs in $out/"
echo "  chart:   $png"
echo "  metrics: $out/metrics.csv, $out/metrics.json"
[[ -f "$out/trace.json" ]] && echo "  trace:   $out/trace.json  (open it in https://ui.perfetto.dev)"
if [[ " $* " != *" --model cnn "* && " $* " != *" --model=cnn "* ]]; then
  echo "  the LeNet CNN: scripts/demo.sh --model cnn   (or build/release/examples/train_fashion --model cnn)"
fi
echo "  the small digits example: build/release/examples/train_digits (cmake --build --preset release --target train_digits)"
exit 0
