#!/usr/bin/env bash
# measure_scaling.sh — train_digits throughput with 1 and 2 workers, alternating runs so that
# background load hits both alike; prints every run, the median and the best of each, and the
# ratios. Used for the numbers in docs/benchmarks.md.
#
#   examples/train_digits/measure_scaling.sh [BUILD_DIR] [RUNS] [-- extra train_digits args]
#   examples/train_digits/measure_scaling.sh build/release 7 -- --epochs 30
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/release}
runs=${2:-5}
shift $(( $# >= 2 ? 2 : $# ))
[[ "${1:-}" == "--" ]] && shift
bin="$build/examples/train_digits"
[[ -x "$bin" ]] || { echo "measure_scaling: $bin not built" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((i = 1; i <= runs; i++)); do
  for w in 1 2; do
    "$bin" --workers "$w" --no-trace --out-dir "$tmp/w$w-$i" "$@" >/dev/null
  done
done
python3 - "$tmp" "$runs" <<'PY'
import json, statistics, sys
tmp, runs = sys.argv[1], int(sys.argv[2])
res = {}
for w in (1, 2):
    rows = [json.load(open(f"{tmp}/w{w}-{i}/metrics.json"))["summary"] for i in range(1, runs + 1)]
    sps = [r["samples_per_s"] for r in rows]
    acc = [r["test_accuracy"] for r in rows]
    res[w] = sps
    print(f"workers {w}: samples/s " + " ".join(f"{s:.0f}" for s in sps)
          + f" | median {statistics.median(sps):.0f}, best {max(sps):.0f}"
          + f" | test accuracy {min(acc) * 100:.2f}..{max(acc) * 100:.2f}%"
          + f" | train {statistics.median(r['train_seconds'] for r in rows):.2f} s (median)")
print(f"ratio 2/1: median {statistics.median(res[2]) / statistics.median(res[1]):.2f}x, "
      f"best {max(res[2]) / max(res[1]):.2f}x, "
      f"paired median {statistics.median(b / a for a, b in zip(res[1], res[2])):.2f}x")
PY
