#!/usr/bin/env python3
"""Paired before/after runs of chanflow's own Google Benchmark binaries, alternated.

A change that must not cost speed is measured by building the tree before it and after it side by
side (two release build directories) and running the same benchmark binaries of both in turn,
round after round, so that a busy machine's load falls on both columns alike. Prints one Markdown
table: per benchmark, the min–max over the rounds of each build, and the ratio of the medians
(after / before; above 1 is slower for times).

    git worktree add /tmp/before <rev> && (cd /tmp/before && cmake --preset release &&
        cmake --build build/release --target chanflow_runtime_bench chanflow_graph_bench \\
        chanflow_exec_bench)
    python3 scripts/bench_pair.py /tmp/before/build/release build/release --rounds 3

Values are Google Benchmark's real time per iteration in the unit each benchmark reports (or its
ns_per_op counter where it has one, like scripts/bench.py). A benchmark missing from either build
is listed as such, not dropped silently. Nothing here edits a number.
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

BINARIES = {
    "runtime": "bench/chanflow_runtime_bench",
    "graph": "bench/graph/chanflow_graph_bench",
    "exec": "bench/exec/chanflow_exec_bench",
}


def run_once(exe, filt, min_time):
    """One repetition of every benchmark of `exe` matching `filt`: {name: (value, unit)}."""
    cmd = [str(exe), "--benchmark_format=json", "--benchmark_repetitions=1"]
    if filt:
        cmd.append(f"--benchmark_filter={filt}")
    if min_time:
        cmd.append(f"--benchmark_min_time={min_time}")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        if "ns_per_op" in b:
            res[b["name"]] = (b["ns_per_op"], "ns/op")
        else:
            res[b["name"]] = (b["real_time"], b.get("time_unit", "ns"))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path, help="release build directory of the tree before")
    ap.add_argument("after", type=Path, help="release build directory of the tree after")
    ap.add_argument("--rounds", type=int, default=3, help="alternations (default 3)")
    ap.add_argument("--only", choices=sorted(BINARIES), action="append",
                    help="one binary's benchmarks (repeatable; default all)")
    ap.add_argument("--filter", default="", help="Google Benchmark filter for every binary")
    ap.add_argument("--min-time", type=float, default=0.0,
                    help="--benchmark_min_time (default: each benchmark's own)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    layers = args.only or sorted(BINARIES)
    for side in (args.before, args.after):
        for layer in layers:
            if not (side / BINARIES[layer]).is_file():
                sys.exit(f"bench_pair: {side / BINARIES[layer]} is not built")

    samples = {}  # (layer, name) -> {"before": [...], "after": [...], "unit": str}
    for r in range(args.rounds):
        for layer in layers:
            # Alternate which side goes first, so neither always runs on the warmer machine.
            order = (("before", args.before), ("after", args.after))
            if r % 2 == 1:
                order = order[::-1]
            for side, build in order:
                print(f"[bench_pair] round {r + 1}/{args.rounds} {layer} {side}", file=sys.stderr,
                      flush=True)
                for name, (v, unit) in run_once(build / BINARIES[layer], args.filter,
                                                args.min_time).items():
                    s = samples.setdefault((layer, name), {"before": [], "after": [], "unit": unit})
                    s[side].append(v)

    print("| binary | benchmark | unit | before (min–max) | after (min–max) | after/before |")
    print("|---|---|---|---|---|---|")
    for (layer, name), s in sorted(samples.items()):
        b, a = s["before"], s["after"]
        if not b or not a:
            print(f"| {layer} | {name} | {s['unit']} | {'missing' if not b else ''} | "
                  f"{'missing' if not a else ''} | |")
            continue
        ratio = statistics.median(a) / statistics.median(b)
        print(f"| {layer} | {name} | {s['unit']} | {min(b):.3g}–{max(b):.3g} | "
              f"{min(a):.3g}–{max(a):.3g} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
