#!/usr/bin/env bash
# measure_scaling.sh — train_digits throughput with 1 and 2 workers, alternating runs so that
# background load hits both alike. For each worker count: every run's samples/s (from
# metrics.json), the median and the best, the CPU time per 1,000 samples (user + sys of the
# process, from getrusage), and the 2/1 ratios. Used for the numbers in docs/benchmarks.md.
#
#   examples/train_digits/measure_scaling.sh [BUILD_DIR] [RUNS] [-- extra train_digits args]
#   examples/train_digits/measure_scaling.sh build/release 7 -- --epochs 40
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/release}
runs=${2:-5}
shift $(($# >= 2 ? 2 : $#))
[[ "${1:-}" == "--" ]] && shift
bin="$build/examples/train_digits"
[[ -x "$bin" ]] || {
  echo "measure_scaling: $bin not built" >&2
  exit 1
}
python3 - "$bin" "$runs" "$@" <<'PY'
import json, os, resource, statistics, subprocess, sys, tempfile
binary, runs, extra = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
res = {1: [], 2: []}
with tempfile.TemporaryDirectory() as tmp:
    for i in range(runs):
        for w in (1, 2):
            out = os.path.join(tmp, f"w{w}-{i}")
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([binary, "--workers", str(w), "--no-trace", "--out-dir", out, *extra],
                           check=True, stdout=subprocess.DEVNULL)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            s = json.load(open(os.path.join(out, "metrics.json")))
            res[w].append((s["samples_per_s"], cpu / s["samples"] * 1e6, s["test_accuracy"],
                           s["seconds"]))
for w in (1, 2):
    sps = [r[0] for r in res[w]]
    cpu = [r[1] for r in res[w]]
    acc = [r[2] for r in res[w]]
    print(f"workers {w}: samples/s " + " ".join(f"{x:.0f}" for x in sps)
          + f" | median {statistics.median(sps):.0f}, best {max(sps):.0f}"
          + f" | CPU ms per 1k samples (whole process) median {statistics.median(cpu):.1f}"
          + f" | test accuracy {min(acc) * 100:.2f}..{max(acc) * 100:.2f}%"
          + f" | train {statistics.median(r[3] for r in res[w]):.2f} s (median)")
m1 = statistics.median(r[0] for r in res[1])
m2 = statistics.median(r[0] for r in res[2])
print(f"ratio 2/1: median {m2 / m1:.2f}x, best {max(r[0] for r in res[2]) / max(r[0] for r in res[1]):.2f}x,"
      f" paired median {statistics.median(b[0] / a[0] for a, b in zip(res[1], res[2])):.2f}x")
PY
