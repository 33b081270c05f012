#!/usr/bin/env python3
"""`chanflow run --trace`: the content of the trace (docs/runtime.md, "Tracing").

  check_trace.py CHANFLOW PROGRAMS_DIR TESTDATA_DIR WORK_DIR

On 1, 2, 4 and 8 workers: fibonacci.pbtxt's trace has run slices whose park reasons name the
program's channels (by their variable names), wake flows whose start and end ids pair up and whose
end lands at the start of a run slice of the green thread it woke, and op slices; ping_pong.pbtxt's
has counters of its buffered channels; a run that never ends, stopped by --timeout, leaves a
complete, valid JSON file with the "cancelled" mark. Exits non-zero naming the first problem.

Whether the go block's green thread parks on a channel (and so is woken from one) is up to the
schedule: when block 0 is always first at the channel, it never waits. Up to ATTEMPTS runs per
worker count are made for one that does (nearly every run does); every run's trace is checked for
the rest.
"""
import json
import os
import re
import shutil
import subprocess
import sys


ATTEMPTS = 5


def fail(msg):
    print("check_trace: " + msg, file=sys.stderr)
    sys.exit(1)


def channel_names(pbtxt):
    """The Out variables of the program's channel_create ops."""
    text = open(pbtxt).read()
    names = set()
    for op in re.split(r"\n  ops \{|\n    ops \{", text):
        if 'type: "channel_create"' in op:
            m = re.search(r'parameter: "Out"\s*arguments: "([^"]+)"', op)
            if m:
                names.add(m.group(1))
    if not names:
        fail(f"{pbtxt}: no channel_create found")
    return names


def run(chanflow, args, want_status=0):
    p = subprocess.run([chanflow, "run"] + args, capture_output=True, text=True, timeout=120)
    if p.returncode != want_status:
        fail(f"chanflow run {' '.join(args)}: status {p.returncode}, want {want_status}\n{p.stderr}")
    return p


def load(path):
    with open(path) as f:
        doc = json.load(f)
    other = doc.get("otherData", {})
    if other.get("chanflow_trace") != 1 or other.get("complete") is not True:
        fail(f"{path}: otherData {other}")
    return doc


def check_fibonacci(chanflow, programs, work, workers):
    for _ in range(ATTEMPTS):
        parks, wakes, path = check_fibonacci_run(chanflow, programs, work, workers)
        if parks and wakes:
            return
    fail(f"{path}: in {ATTEMPTS} runs no park reason and wake flow both named a channel of the "
         f"program {sorted(channel_names(os.path.join(programs, 'fibonacci.pbtxt')))}: park "
         f"reasons {sorted(parks)}, wake objects {sorted(wakes)}")


def check_fibonacci_run(chanflow, programs, work, workers):
    """One traced run's invariants; the park reasons and wake objects that name the program's
    channels."""
    prog = os.path.join(programs, "fibonacci.pbtxt")
    chans = channel_names(prog)
    path = os.path.join(work, f"fibonacci_w{workers}.json")
    run(chanflow, [prog, "--fetch", "result", "--workers", str(workers), "--trace", path])
    events = load(path)["traceEvents"]
    run_starts = {}
    blocked_ends = set()  # (pid, tid, end in µs) of OS threads' blocking waits
    parked_on, woken_by = set(), set()
    flow_s, flow_f = {}, {}
    ops = 0
    for e in events:
        cat = e.get("cat")
        if cat == "run":
            run_starts[(e["pid"], e["tid"], e["ts"])] = e["args"]["g"]
            if e["args"]["end"] == "park":
                w = e["args"]["wait"]
                parked_on.add(w["obj"])
                parked_on.update(c["obj"] for c in w.get("cases", []))
        elif cat == "wait":
            # The calling thread's blocking wait (block 0 runs there): what it waits on, and
            # where the wake flow that ends it lands.
            if e["ph"] != "X" or e["name"] != "blocked":
                fail(f"{path}: bad wait slice {e}")
            w = e["args"]["wait"]
            parked_on.add(w["obj"])
            parked_on.update(c["obj"] for c in w.get("cases", []))
            blocked_ends.add((e["pid"], e["tid"], round(e["ts"] + e["dur"], 3)))
        elif cat == "wake" and e["ph"] == "s":
            if e["id"] in flow_s:
                fail(f"{path}: flow id {e['id']} started twice")
            flow_s[e["id"]] = e
            woken_by.add(e["args"]["obj"])
        elif cat == "wake":
            if e["ph"] != "f" or e.get("bp") != "e":
                fail(f"{path}: bad flow end {e}")
            flow_f[e["id"]] = e
        elif cat == "op":
            ops += 1
            if not {"g", "block", "op"} <= set(e["args"]):
                fail(f"{path}: op slice without g/block/op: {e}")
    if not flow_s:
        fail(f"{path}: no wake flows")
    for fid, s in flow_s.items():
        f = flow_f.get(fid)
        if f is None:
            # The last wake-up may come after the run's end was recorded (a thread woken by
            # teardown never runs again while the trace is on).
            continue
        if "g" not in s["args"]:  # an OS thread's wake: lands where its blocking wait ends
            if (f["pid"], f["tid"], round(f["ts"], 3)) not in blocked_ends:
                fail(f"{path}: flow {fid} of an OS thread lands on no blocked slice's end: {f}")
            continue
        g = run_starts.get((f["pid"], f["tid"], f["ts"]))
        if g != s["args"]["g"]:
            fail(f"{path}: flow {fid} (g {s['args']['g']}) lands on no run slice start of its green "
                 f"thread: {f}")
    if len(flow_f) < len(flow_s) - workers or not set(flow_f) <= set(flow_s):
        fail(f"{path}: {len(flow_s)} flow starts, {len(flow_f)} ends")
    if ops == 0:
        fail(f"{path}: no op slices")
    return parked_on & chans, woken_by & chans, path


def check_counters(chanflow, programs, work, workers):
    prog = os.path.join(programs, "ping_pong.pbtxt")
    chans = channel_names(prog)
    path = os.path.join(work, f"ping_pong_w{workers}.json")
    run(chanflow, [prog, "--fetch", "result", "--workers", str(workers), "--trace", path])
    counters = [e for e in load(path)["traceEvents"] if e.get("cat") == "chan"]
    if not counters:
        fail(f"{path}: no channel counters")
    for e in counters:
        name = e["name"]
        if e["ph"] != "C" or not name.startswith("chan ") or name[5:] not in chans:
            fail(f"{path}: bad channel counter {e}")
        if not 0 <= e["args"]["len"] <= e["args"]["cap"]:
            fail(f"{path}: bad occupancy {e}")


def check_timeout(chanflow, testdata, work):
    """A timeout leaves a complete file with the "cancelled" mark, also when the event bound was
    used up long before (the marks of how the run ended are outside the bound)."""
    prog = os.path.join(testdata, "endless_ping_pong.pbtxt")
    for limit, want in (("0", {"cancelled", "stop"}), ("1000", {"cancelled", "dropped", "stop"})):
        path = os.path.join(work, f"endless_{limit}.json")
        run(chanflow, [prog, "--workers", "2", "--timeout", "200ms", "--trace", path,
                       "--trace-limit", limit], want_status=124)
        doc = load(path)
        events = doc["traceEvents"]
        marks = {e["name"] for e in events if e.get("cat") == "mark"}
        if not want <= marks:
            fail(f"{path} (--trace-limit {limit}): marks {marks}, want {want}")
        if not any(e.get("cat") == "run" for e in events):
            fail(f"{path}: no run slices")
        if limit != "0" and doc["otherData"]["events"] > int(limit):
            fail(f"{path}: {doc['otherData']['events']} events written past the bound {limit}")


def main():
    chanflow, programs, testdata, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for w in (1, 2, 4, 8):
        check_fibonacci(chanflow, programs, work, w)
        check_counters(chanflow, programs, work, w)
    check_timeout(chanflow, testdata, work)
    print("check_trace: ok")


if __name__ == "__main__":
    main()
