#!/usr/bin/env python3
"""`chanflow trace html` in a real browser: headless Chromium opens each report, runs its script
and dumps the DOM; the rendered page must hold the timeline the script drew (data-drawn-slices > 0,
data-slices equal to the trace's slice events), the summary's tables with the same green
threads, times and channels as `chanflow trace summary` prints for that trace, and, opened at the
first parked run slice (report.html#at=TRACK,NS), that slice's green thread and park reason.

Usage: check_trace_html.py CHANFLOW WORK_DIR TRACE.json...

Exits 77 (ctest's SKIP_RETURN_CODE) when no Chromium is installed: scripts/bootstrap.sh installs
Debian's `chromium`; CHANFLOW_CHROMIUM names another binary.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
BROWSER_TIMEOUT_S = 120  # a bound on one page load, not a synchronisation


def fail(what):
    print("FAIL: " + what, file=sys.stderr)
    sys.exit(1)


def chromium():
    named = os.environ.get("CHANFLOW_CHROMIUM")
    if named:
        return named
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run(args):
    p = subprocess.run(args, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S)
    if p.returncode != 0:
        fail(f"{' '.join(args)}: exit {p.returncode}\nstderr: {p.stderr}")
    return p.stdout


def dump_dom(browser, page, profile, fragment=""):
    # --virtual-time-budget lets the page's script run to completion before the DOM is dumped.
    return run([browser, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                "--user-data-dir=" + profile, "--virtual-time-budget=10000", "--dump-dom",
                "file://" + os.path.abspath(page) + fragment])


def check_park_tooltip(name, browser, page, profile):
    """The first parked run slice's details, as hovering shows them, through the page's #at= link:
    its green thread and what it parked on. (Slices without a green thread, g < 0, are OS threads'
    blocking waits.)"""
    with open(page, encoding="utf-8") as f:
        m = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', f.read(),
                      re.S)
    d = json.loads(m.group(1))
    sl, strings = d["slices"], d["strings"]
    for i in range(0, len(sl), 8):
        track, ts, dur, _, _, g, _, wait = sl[i:i + 8]
        if wait >= 0 and g >= 0:
            break
    else:
        return None  # no park in this trace
    at = d["t0"] + ts + dur // 2
    dom = dump_dom(browser, page, profile, f"#at={track},{at}")
    tip = re.search(r'<div id="tip"[^>]*>(.*?)</div>', dom, re.S)
    text = html.unescape(tip.group(1)) if tip else ""
    want = ["green thread %d %s" % (g, d["gnames"][str(g)]), "parked on: " + strings[wait]]
    if any(w not in text for w in want):
        fail(f"{name}: #at={track},{at} shows {text!r}, want {want}")
    return want[1]


def table_rows(dom, table_id):
    """The rows of <table id=TABLE_ID> as lists of cell texts (tags stripped, entities decoded)."""
    m = re.search(r'<table id="?' + table_id + r'"?>(.*?)</table>', dom, re.S)
    if not m:
        fail(f"no table #{table_id} in the rendered page")
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", m.group(1), re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
        if cells:
            rows.append([html.unescape(re.sub(r"<[^>]+>", " ", c)).strip() for c in cells])
    return rows


def text_rows(text):
    """`trace summary`'s green thread rows: g -> (running, runnable, blocked) as printed."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^ +(\d+)  .{32} +(\S+) +(\S+) +(\S+) +\d+  (?:exited|live)$", line)
        if m:
            rows[int(m.group(1))] = (m.group(2), m.group(3), m.group(4))
    return rows


def check_blocked_on(who, blocked_on, cell):
    """A table's "blocked on" cell names every (kind, object) of the summary's blocked_on."""
    for on in blocked_on:
        label = on["kind"] if on["obj"] in ("", on["kind"]) else f"{on['kind']} {on['obj']}"
        if label + ":" not in cell and label + " [" not in cell:
            fail(f"{who}'s blocked-on cell lacks {label}: {cell}")


def check(chanflow, browser, work, trace):
    name = os.path.splitext(os.path.basename(trace))[0]
    page = os.path.join(work, name + ".html")
    run([chanflow, "trace", "html", trace, "-o", page])
    summary = json.loads(run([chanflow, "trace", "summary", "--json", trace]))
    text = run([chanflow, "trace", "summary", trace])
    with open(trace, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    slices = sum(1 for e in events if e.get("ph") == "X")

    with tempfile.TemporaryDirectory(dir=work) as profile:
        dom = dump_dom(browser, page, profile)
    m = re.search(r'<div id="timeline"([^>]*)>', dom)
    if not m:
        fail(f"{name}: no #timeline element in the rendered page")
    attrs = dict(re.findall(r'(data-[a-z-]+)="([\d.]+)"', m.group(1)))
    if "data-drawn-slices" not in attrs:
        fail(f"{name}: the page's script did not run (no data-drawn-slices on #timeline)")
    if int(attrs["data-slices"]) != slices or not 0 < int(attrs["data-drawn-slices"]) <= slices:
        fail(f"{name}: #timeline {attrs}, the trace has {slices} slices")
    if not re.search(r'id="status">' + str(slices) + " slices on ", dom):
        fail(f"{name}: the status line does not count {slices} slices")
    if "<canvas" not in dom:
        fail(f"{name}: no canvas in the timeline")

    with tempfile.TemporaryDirectory(dir=work) as profile:
        tooltip = check_park_tooltip(name, browser, page, profile)

    printed = text_rows(text)
    rows = {int(r[0]): r for r in table_rows(dom, "gthreads")}
    for g in summary["green_threads"]:
        row = rows.get(g["g"])
        if row is None or row[1] != g["name"]:
            fail(f"{name}: green thread {g['g']} ({g['name']}) not in the page's table: {rows}")
        if tuple(row[2:5]) != printed[g["g"]]:
            fail(f"{name}: {g['name']}: the page says running/runnable/blocked {row[2:5]}, "
                 f"trace summary {printed[g['g']]}")
        check_blocked_on(f"{name}: {g['name']}", g["blocked_on"], row[7])
    if summary["os_threads"]:
        os_rows = {int(r[0]): r for r in table_rows(dom, "osthreads")}
        for t in summary["os_threads"]:
            row = os_rows.get(t["tid"])
            if row is None or row[1] != t["name"] or int(row[3]) != t["waits"]:
                fail(f"{name}: OS thread {t['tid']} ({t['name']}, {t['waits']} waits) not in the "
                     f"page's table: {os_rows}")
            check_blocked_on(f"{name}: {t['name']}", t["blocked_on"], row[4])
    elif re.search(r"<table id=\"?osthreads", dom):
        fail(f"{name}: an OS-thread table without OS-thread waits")
    channels = [r[0] for r in table_rows(dom, "channels")]
    if channels != [c["name"] for c in summary["channels"]]:
        fail(f"{name}: the page lists channels {channels}, trace summary "
             f"{[c['name'] for c in summary['channels']]}")
    print(f"{name}: {len(rows)} green threads, {len(summary['os_threads'])} OS threads that "
          f"blocked, {len(channels)} channels, "
          f"{attrs['data-drawn-slices']} of {slices} slices drawn in {attrs.get('data-draw-ms')} ms"
          f"; a park's details: {tooltip}")


def main():
    if len(sys.argv) < 4:
        fail("usage: check_trace_html.py CHANFLOW WORK_DIR TRACE.json...")
    chanflow, work, traces = sys.argv[1], sys.argv[2], sys.argv[3:]
    browser = chromium()
    if browser is None:
        print("SKIP: no chromium installed (scripts/bootstrap.sh installs Debian's chromium; "
              "CHANFLOW_CHROMIUM names another binary)")
        sys.exit(SKIP)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for trace in traces:
        check(chanflow, browser, work, trace)


if __name__ == "__main__":
    main()
