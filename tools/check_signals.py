#!/usr/bin/env python3
"""SIGINT and SIGTERM stop `chanflow run`: the run is canceled, the command names what was still
running, completes the streamed --trace file (valid JSON with the count of dropped events) and
exits 130 (SIGINT) or 143 (SIGTERM) within a second of the signal; a second signal ends the process at
once with status 128 + its number, without waiting for the run.

Usage: check_signals.py CHANFLOW TESTDATA_DIR WORK_DIR

Each case starts the command on a program that prints "running" before its endless (or long)
part, waits for that line (bounded), sends the signal(s) and checks the outcome.
"""
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time

READY_TIMEOUT_S = 60  # a bound on the wait for "running", not a synchronisation
# The release build's promise; sanitizer builds scale it (tools/CMakeLists.txt).
EXIT_WITHIN_S = 1.0 * float(os.environ.get("CHANFLOW_SIGNAL_TIME_SCALE", "1"))
# Tries of the second-signal case, whose first signal must come while the long op runs.
SECOND_SIGNAL_ATTEMPTS = 5


def fail(what):
    print("FAIL: " + what, file=sys.stderr)
    sys.exit(1)


def start(chanflow, args):
    """Starts `chanflow run ARGS` and returns it once it printed its "running" line."""
    p = subprocess.Popen([chanflow, "run", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    if not sel.select(timeout=READY_TIMEOUT_S):
        p.kill()
        fail(f"{args}: no 'running' line within {READY_TIMEOUT_S} s")
    line = p.stdout.readline()
    if "running" not in line:
        p.kill()
        out, err = p.communicate()
        fail(f"{args}: expected 'running', got {line!r}; stderr: {err}")
    return p


def acknowledged(p, sig):
    """Waits (bounded) for the command's line saying it took `sig`; returns that line."""
    sel = selectors.DefaultSelector()
    sel.register(p.stderr, selectors.EVENT_READ)
    if not sel.select(timeout=READY_TIMEOUT_S):
        p.kill()
        fail(f"no acknowledgement of {sig.name} within {READY_TIMEOUT_S} s")
    line = p.stderr.readline()
    if f"chanflow: {sig.name}: stopping the run" not in line:
        p.kill()
        fail(f"expected the acknowledgement of {sig.name}, got {line!r}")
    return line


def finish(p, signals):
    """Sends `signals`, each after the command acknowledged the one before (signals of one kind
    sent together would merge into one); returns (status, stderr, seconds from the last)."""
    err = ""
    for i, s in enumerate(signals):
        p.send_signal(s)
        if i + 1 < len(signals):
            err += acknowledged(p, s)
    sent = time.monotonic()
    try:
        _, rest = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        fail(f"still running 30 s after {signals}")
    return p.returncode, err + rest, time.monotonic() - sent


def check_trace(path, limit):
    with open(path) as f:
        doc = json.load(f)  # valid JSON, written after the run was canceled
    other = doc.get("otherData", {})
    for key in ("dropped_events", "max_events"):
        if not isinstance(other.get(key), int):
            fail(f"{path}: otherData.{key} missing: {other}")
    if other.get("complete") is not True:
        fail(f"{path}: not complete: {other}")
    ops = sum(1 for e in doc["traceEvents"] if e.get("cat") == "op")
    if ops > limit:
        fail(f"{path}: {ops} op events, more than --trace-limit {limit}")
    if ops == 0:
        fail(f"{path}: no op events")


def completed_ops(path):
    """The op names in `path` if it is a trace file that was stopped properly, else None (no
    file, or one cut short)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if doc.get("otherData", {}).get("complete") is not True:
        return None
    return [e.get("name") for e in doc["traceEvents"] if e.get("cat") == "op"]


def main():
    chanflow, data, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    endless = os.path.join(data, "endless_ping_pong.pbtxt")
    matmul = os.path.join(data, "long_matmul.pbtxt")

    # One signal: the run is canceled, reported and traced; status 128 + the signal.
    for sig, status in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        name = signal.Signals(sig).name
        trace = os.path.join(work, f"{name}.json")
        limit = 2000
        p = start(chanflow, [endless, "--workers", "2", "--trace", trace,
                             "--trace-limit", str(limit)])
        rc, err, took = finish(p, [sig])
        if rc != status:
            fail(f"{name}: exit {rc}, want {status}; stderr: {err}")
        pattern = (rf"^chanflow: {name}: stopping the run \(a second signal exits at once\)\n"
                   rf"chanflow: interrupted \({name}\): still running: block \d+, op \d+ "
                   r"\('[a-z_]+'\) (on the calling thread|in green thread go@block1#1)")
        if not re.search(pattern, err):
            fail(f"{name}: message {err!r} does not match {pattern!r}")
        if took >= EXIT_WITHIN_S:
            fail(f"{name}: exited {took:.2f} s after the signal (want < {EXIT_WITHIN_S})")
        check_trace(trace, limit)
        print(f"{name}: exit {status} in {took * 1000:.0f} ms: {err.strip()}")

    # A second signal while the first one's cancellation waits for an op that does not stop (a
    # long matmul): the process ends at once, with the second signal's status, no report, and the
    # streamed trace cut short (a prefix readers accept, never a completed file).
    for second, status in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        name = signal.Signals(second).name
        trace = os.path.join(work, f"second_{name}.json")
        for attempt in range(1, SECOND_SIGNAL_ATTEMPTS + 1):
            p = start(chanflow, [matmul, "--trace", trace])
            rc, err, took = finish(p, [signal.SIGINT, second])
            ops = completed_ops(trace)
            if ops is None or "matmul" in ops:
                break
            # The first signal came between the print and the matmul (the test's process saw
            # "running" before the command's main thread got to the next op, as on a loaded
            # machine): the run was canceled before its long op started and ended on its own, so
            # the second signal found no run to cut short (status -2 once the command had put the
            # default handlers back). Not the situation this case is about: again.
            print(f"second {name}: attempt {attempt}: the run was canceled before the matmul "
                  f"started (exit {rc}); again")
        else:
            fail(f"second {name}: in {SECOND_SIGNAL_ATTEMPTS} attempts the first signal never "
                 "came while the matmul ran")
        if rc != status:
            fail(f"second {name}: exit {rc}, want {status}; stderr: {err}")
        if "interrupted (" in err or ops is not None:
            fail(f"second {name}: the run was waited for (stderr {err!r})")
        if took >= EXIT_WITHIN_S:
            fail(f"second {name}: exited {took:.2f} s after it (want < {EXIT_WITHIN_S})")
        print(f"second {name}: exit {status} in {took * 1000:.0f} ms")


if __name__ == "__main__":
    main()
