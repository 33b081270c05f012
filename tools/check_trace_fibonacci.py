#!/usr/bin/env python3
"""A real trace, explained: `chanflow run --trace` of examples/programs/fibonacci.pbtxt, then
`chanflow trace summary` (text and --json) on it must name the program's green thread (its go
block, block 1) and what it parks on (its receive from the program's channel `ch`, which the
executor waits on in a select with the run's context), and `chanflow trace html`'s report must
render it in headless Chromium (check_trace_html.py; that part is skipped without Chromium).

Usage: check_trace_fibonacci.py CHANFLOW FIBONACCI.pbtxt WORK_DIR

`ch` is unbuffered, so every value has one side waiting for the other: the go block parks (a run
slice ending in park, under green threads) or block 0, on the calling OS thread, blocks (a
"blocked" slice, under OS threads). Which one is up to the schedule; one run shows at least one.
"""
import json
import os
import re
import shutil
import subprocess
import sys

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
    # What a thread waited on must be the program's channels, the run's context or (block 0, at
    # the run's end) the run's group of green threads.
    allowed = {"ch", "quit", "context", "select", "group"}
    waited_on_ch = []
    for who, blocked_on in [(g["name"], g["blocked_on"])] + [
            (t["name"], t["blocked_on"]) for t in s["os_threads"]]:
        for on in blocked_on:
            objs = [on["obj"]] + [c.split(" ", 1)[-1] for c in on["cases"]]
            if not set(objs) <= allowed:
                fail(f"{who} blocked on {on}: not the program's channels or the run's context")
            if on["obj"] == "ch" or any(c.endswith(" ch") for c in on["cases"]):
                waited_on_ch.append((who, on["blocked_ns"]))
    if len(s["os_threads"]) > 1:
        fail(f"only block 0's calling thread may block, got {s['os_threads']}")
    if not waited_on_ch:
        fail(f"neither the go block nor block 0 waited on ch:\n{text}")
    channels = {c["name"]: c for c in s["channels"]}
    want = sum(ns for _, ns in waited_on_ch)
    if "ch" not in channels or channels["ch"]["total_ns"] != want:
        fail(f"waits on ch were {waited_on_ch} but the channel table says {s['channels']}")
    if not re.search(r"\n  ch +\S+", text):
        fail(f"the text summary does not show channel ch:\n{text}")
    if s["os_threads"] and "OS threads that blocked (1)" not in text:
        fail(f"the text summary does not show block 0's waits:\n{text}")
    return waited_on_ch


def main():
    if len(sys.argv) != 4:
        fail("usage: check_trace_fibonacci.py CHANFLOW FIBONACCI.pbtxt WORK_DIR")
    chanflow, program, work = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    trace = os.path.join(work, "fibonacci.json")
    waits = check_run(chanflow, program, trace)
    print("waited on ch: " + ", ".join(f"{who} {ns} ns" for who, ns in waits))
    html_check = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_trace_html.py")
    p = subprocess.run([sys.executable, html_check, chanflow, os.path.join(work, "html"), trace],
                       timeout=RUN_TIMEOUT_S * 3)
    if p.returncode == 77:
        print("(report not rendered: no chromium)")
    elif p.returncode != 0:
        fail("the report of the fibonacci trace (check_trace_html.py above)")


if __name__ == "__main__":
    main()
