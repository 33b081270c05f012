#!/usr/bin/env python3
"""A real trace, explained: `chanflow run --trace` of examples/programs/fibonacci.pbtxt, then
`chanflow trace summary` (text and --json) on it must name the program's green thread (its go
block, block 1) and what it parks on (its receive from the program's channel `ch`, which the
executor waits on in a select with the run's context), and `chanflow trace html`'s report must
render it in headless Chromium (check_trace_html.py; that part is skipped without Chromium).

Usage: check_trace_fibonacci.py CHANFLOW FIBONACCI.pbtxt WORK_DIR

Whether the go block ever waits on `ch` is up to the schedule: when block 0's send is always first
at the channel, the receive never parks. Up to ATTEMPTS runs are made for one that parks (nearly
every run does); the names and invariants are checked on every run.
"""
import json
import os
import re
import shutil
import subprocess
import sys

ATTEMPTS = 5
GO_THREAD = re.compile(r"^go@block1#\d+$")  # the executor names a go op's green thread so
RUN_TIMEOUT_S = 120  # a bound on one command, not a synchronisation


def fail(what):
    print("FAIL: " + what, file=sys.stderr)
    sys.exit(1)


def run(args):
    p = subprocess.run(args, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if p.returncode != 0:
        fail(f"{' '.join(args)}: exit {p.returncode}\nstderr: {p.stderr}")
    return p.stdout


def check_run(chanflow, program, trace):
    out = run([chanflow, "run", program, "--fetch", "result", "--trace", trace])
    if "result = tensor([34]" not in out:
        fail(f"fibonacci printed {out!r}")
    s = json.loads(run([chanflow, "trace", "summary", "--json", trace]))
    text = run([chanflow, "trace", "summary", trace])
    if not s["complete"] or s["truncated"] or s["dropped_events"] != 0:
        fail(f"the trace is not complete: {json.dumps(s)[:400]}")
    span = s["span"]["dur_ns"]
    names = [g["name"] for g in s["green_threads"]]
    go = [g for g in s["green_threads"] if GO_THREAD.match(g["name"])]
    if len(go) != 1:
        fail(f"want one green thread of the go block (go@block1#N), got {names}")
    for g in s["green_threads"]:
        total = g["running_ns"] + g["runnable_ns"] + g["blocked_ns"]
        if total > span:
            fail(f"{g['name']}: running + runnable + blocked = {total} ns > the span {span} ns")
        if f"  {g['name']}" not in text:
            fail(f"the text summary lacks green thread {g['name']}:\n{text}")
    g = go[0]
    for on in g["blocked_on"]:
        objs = [on["obj"]] + [c.split(" ", 1)[-1] for c in on["cases"]]
        if not set(objs) <= {"ch", "quit", "context", "select"}:
            fail(f"{g['name']} blocked on {on}: not the program's channels or the run's context")
    parked_on_ch = any(on["kind"] == "chan.recv" and on["obj"] == "ch" or
                       "chan.recv ch" in on["cases"] for on in g["blocked_on"])
    if not parked_on_ch:
        return None
    channels = {c["name"]: c for c in s["channels"]}
    if "ch" not in channels or channels["ch"]["total_ns"] <= 0:
        fail(f"{g['name']} parked on ch but the channel table says {s['channels']}")
    if not re.search(r"\n  ch +\S+", text) or "chan.recv ch" not in text:
        fail(f"the text summary does not show channel ch:\n{text}")
    return g


def main():
    if len(sys.argv) != 4:
        fail("usage: check_trace_fibonacci.py CHANFLOW FIBONACCI.pbtxt WORK_DIR")
    chanflow, program, work = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    trace = os.path.join(work, "fibonacci.json")
    for attempt in range(1, ATTEMPTS + 1):
        g = check_run(chanflow, program, trace)
        if g is not None:
            print(f"run {attempt}: {g['name']} blocked {g['blocked_ns']} ns in "
                  f"{sum(on['parks'] for on in g['blocked_on'])} parks, on ch among them")
            break
    else:
        fail(f"in {ATTEMPTS} runs the go block never parked on ch")
    html_check = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_trace_html.py")
    p = subprocess.run([sys.executable, html_check, chanflow, os.path.join(work, "html"), trace],
                       timeout=RUN_TIMEOUT_S * 3)
    if p.returncode == 77:
        print("(report not rendered: no chromium)")
    elif p.returncode != 0:
        fail("the report of the fibonacci trace (check_trace_html.py above)")


if __name__ == "__main__":
    main()
