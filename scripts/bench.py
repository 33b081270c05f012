#!/usr/bin/env python3
"""Side-by-side benchmarks: chanflow against its peers, in one run, on this machine.

Builds chanflow in release (CMake preset) and every peer program (bench/peers/: Go, Boost.Fiber,
oneTBB flow graph, std:: baselines, OpenBLAS/memcpy) outside the source tree, runs each shape
several times, takes medians, and prints one table: area, shape, chanflow, peer, ratio, target,
met / not met. Each row declares its target below (docs/benchmarks.md, "Targets", lists them), as a
ratio against a peer measured in the same run. Writes build/bench/results.json,
build/bench/results.png (gnuplot), appends a dated section to docs/benchmarks_history.md and
replaces the measured areas' sections of docs/benchmarks.md's current results. First runs
scripts/bootstrap.sh --dev, which installs the peers (golang-go, libboost-fiber-dev, libtbb-dev,
gnuplot-nox) when they are missing (CHANFLOW_SKIP_BOOTSTRAP=1 skips it).

    python3 scripts/bench.py              # full run (several minutes on 2 cores)
    python3 scripts/bench.py --quick      # smoke run: fewer repetitions, smaller counts
    python3 scripts/bench.py --only objects
    python3 scripts/bench.py --only python   # the Python module against the C++ call and PyTorch
    python3 scripts/bench.py --only training # conv2d / nn.h kernels, Fluid book models vs PyTorch
    python3 scripts/bench.py --only fashion  # train_fashion / train_digits runs vs PyTorch

Peers run in a fixed environment: Go under GOMAXPROCS=1/2/4 (compared with chanflow at the same
worker count), Boost.Fiber with GLIBC_TUNABLES keeping freed stacks faulted in, OpenBLAS
single-threaded; PyTorch (bench/peers/conv_torch.py, the training rows) under /usr/bin/python3 at 1
and 2 threads, oneDNN on and off (TORCH_RUNS; the Fluid book rows: bench/peers/fluid_book_torch.py
against python_bench.py fluid-book, BOOK_TORCH_RUNS; the fashion rows: whole training runs of
examples/train_fashion and train_digits against bench/peers/fashion_torch.py, FASHION_TORCH_RUNS,
including runs beside a busy loop and two training processes at once). The Python rows run bench/python/python_bench.py
under /usr/bin/python3 (the interpreter the release preset builds chanflow._native for) against the
module in build/release/python, and are n/a, saying why, when that module was not built. Nothing
here edits a number: every figure comes from a program run.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "release"
PEERS = ROOT / "build" / "peers"
OUT = ROOT / "build" / "bench"
DOC = ROOT / "docs" / "benchmarks.md"
HISTORY = ROOT / "docs" / "benchmarks_history.md"
PYTHON = Path("/usr/bin/python3")  # CMakePresets.json builds chanflow._native for this one
PY_BENCH = ROOT / "bench" / "python" / "python_bench.py"
TORCH_CONV = ROOT / "bench" / "peers" / "conv_torch.py"
TORCH_BOOK = ROOT / "bench" / "peers" / "fluid_book_torch.py"
TORCH_FASHION = ROOT / "bench" / "peers" / "fashion_torch.py"
TRAIN_FASHION = BUILD / "examples" / "train_fashion"
TRAIN_DIGITS = BUILD / "examples" / "train_digits"

BOOST_ENV = {
    "GLIBC_TUNABLES": "glibc.malloc.trim_threshold=4000000000:glibc.malloc.mmap_threshold=4000000000"
}
WORKERS = (1, 2, 4)
AREAS = ("channels", "select", "green threads", "scaling", "objects", "tensor", "training",
         "fashion", "graph", "executor", "python")
# bench/tensor/ binaries the training area runs (its own source, src_training), not the tensor one.
TRAINING_EXES = ("chanflow_conv_bench", "chanflow_nn_bench")
# The PyTorch settings the training rows time, one process each: (key, threads, environment,
# flags, kinds). OpenBLAS is single-threaded in all (torch's own threads are the parallelism).
# OMP_WAIT_POLICY=PASSIVE lets torch's idle OpenMP threads sleep instead of spinning: on a busy
# 2-core host the default policy's spinning makes each 2-thread call many times slower, so the
# 2-thread settings run with PASSIVE and, for context, once more with the default (None: the
# variable is removed from the environment). --no-mkldnn runs torch's own im2col + BLAS kernels
# instead of oneDNN's (faster on LeNet1's single input channel). Each row compares chanflow with
# the best of these (per repetition), never with one chosen for it.
TORCH_RUNS = (
    ("torch1", 1, {}, (), "Forward,Backward,Step"),
    ("torch1_nodnnl", 1, {}, ("--no-mkldnn",), "Forward,Backward,Step"),
    ("torch2", 2, {"OMP_WAIT_POLICY": "PASSIVE"}, (), "Step"),
    ("torch2_nodnnl", 2, {"OMP_WAIT_POLICY": "PASSIVE"}, ("--no-mkldnn",), "Step"),
    ("torch2_spin", 2, {"OMP_WAIT_POLICY": None}, (), "Step"),
)
TORCH_LABELS = {"torch1": "1 thread, oneDNN", "torch1_nodnnl": "1 thread, no oneDNN",
                "torch_2proc": "2 processes x 1 thread, a batch each, oneDNN (approximate)",
                "torch2": "2 threads, oneDNN", "torch2_nodnnl": "2 threads, no oneDNN",
                "torch2_spin": "2 threads, oneDNN, default OMP wait policy"}
LENET = ("LeNet1", "LeNet2")
# The PyTorch settings of the Fluid book rows (fluid_book_torch.py), one process each: (key,
# threads, environment, flags), compared as the best of them per repetition.
BOOK_TORCH_RUNS = (
    ("torch1", 1, {}, ()),
    ("torch1_nodnnl", 1, {}, ("--no-mkldnn",)),
    ("torch2", 2, {"OMP_WAIT_POLICY": "PASSIVE"}, ()),
    ("torch2_nodnnl", 2, {"OMP_WAIT_POLICY": "PASSIVE"}, ("--no-mkldnn",)),
)
BOOK_MODELS = ("mlp", "cnn")
# The fashion area: whole training runs of examples/train_fashion and examples/train_digits
# against bench/peers/fashion_torch.py. PyTorch's settings per model, a process each: (key,
# threads, flags); OPENBLAS_NUM_THREADS and OMP_NUM_THREADS = threads (its Linear layers' products
# run in OpenBLAS, whose threads are the parallelism there), OMP_WAIT_POLICY=PASSIVE at 2 threads
# (see TORCH_RUNS). oneDNN on/off only for the CNN: torch 1.13 does not route float32 Linear
# layers through oneDNN, so for the MLPs the flag changes nothing (the same weights bit for bit).
FASHION_TORCH_RUNS = {
    "mlp": (("torch1", 1, ()), ("torch2", 2, ())),
    "cnn": (("torch1", 1, ()), ("torch1_nodnnl", 1, ("--no-mkldnn",)),
            ("torch2", 2, ()), ("torch2_nodnnl", 2, ("--no-mkldnn",))),
    "digits": (("torch1", 1, ()), ("torch2", 2, ())),
}
FASHION_TARGET_ACCURACY = {"mlp": 0.88, "cnn": 0.90}


def fashion_label(model, key):
    """A fashion area PyTorch setting in words (oneDNN named only where it is a choice)."""
    return TORCH_LABELS[key] if model == "cnn" else f"{key[-1]} thread{'s' * (key[-1] != '1')}"

# The busy core of the contention rows: a Python busy loop, started and killed by this script.
HOG = (str(PYTHON), "-c", "while True: pass")


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def merged_env(env):
    """os.environ with `env` applied (a value of None removes that variable)."""
    full_env = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            full_env.pop(k, None)
        else:
            full_env[k] = str(v)
    return full_env


def run(cmd, env=None, cwd=None, timeout=3600):
    """Runs a command, returns stdout; raises with its stderr on failure."""
    full_env = merged_env(env)
    log("$ " + " ".join(str(c) for c in cmd) +
        ("" if not env else "   [" + " ".join(f"{k}={'(unset)' if v is None else v}"
                                              for k, v in env.items()) + "]"))
    p = subprocess.run([str(c) for c in cmd], env=full_env, cwd=cwd, capture_output=True,
                       text=True, timeout=timeout)
    if p.returncode != 0:
        first_error = next((l.strip() for l in (p.stdout + "\n" + p.stderr).splitlines()
                            if re.search(r"\berror\b", l, re.I)), "")
        raise RuntimeError(f"{Path(str(cmd[0])).name} failed ({p.returncode}): {first_error[:200]}"
                           f"\n{p.stderr[-4000:]}\n{p.stdout[-2000:]}")
    return p.stdout


class Unavailable(Exception):
    """A source of numbers that cannot run here (its program does not exist yet, ...)."""


class NotReached(Unavailable):
    """A time-to-accuracy figure whose run ended before it reached the accuracy: a row's target
    is not met when chanflow's is missing this way and its peer's is not."""


# ------------------------------------------------------------------------------------------------
# Sources: each returns {key: [samples]} in the unit its rows declare.

class Sources:
    def __init__(self, args):
        self.args = args
        self.reps = args.reps
        self.cache = {}
        self.versions = {}
        self.built = {}
        self.build_errors = {}

    def get(self, name):
        if name not in self.cache:
            try:
                self.cache[name] = getattr(self, "src_" + name.split(":")[0])(*name.split(":")[1:])
            except Unavailable as e:
                self.cache[name] = e
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                log(f"source {name} failed: {e}")
                self.cache[name] = Unavailable(f"{name} failed: {str(e).splitlines()[0]}")
        return self.cache[name]

    # --- building --------------------------------------------------------------------------

    def build_chanflow(self):
        if "chanflow" in self.built:
            return self.built["chanflow"]
        if not self.args.no_build:
            run(["cmake", "--preset", "release"], cwd=ROOT)
            help_out = run(["cmake", "--build", "--preset", "release", "--target", "help"], cwd=ROOT)
            targets = sorted(set(re.findall(r"^(chanflow_\w*bench\w*):", help_out, re.M)))
            # The Python module (its rows need it), when CMake found Python and pybind11.
            targets += re.findall(r"^(chanflow_python):", help_out, re.M)
            log(f"benchmark targets: {targets}")
            for t in targets:  # one at a time: a layer that does not compile yet costs only its rows
                try:
                    run(["cmake", "--build", "--preset", "release", "-j2", "--target", t], cwd=ROOT)
                except RuntimeError as e:
                    self.build_errors[t] = str(e).splitlines()[0]
                    log(f"{t} did not build: {e}")
        self.built["chanflow"] = True
        return True

    def chanflow_exe(self, target, what):
        self.build_chanflow()
        if target in self.build_errors:
            raise Unavailable(f"{target} did not build ({what})")
        exe = BUILD / "bench" / target
        target = target.split("/")[-1]
        if target in self.build_errors:
            raise Unavailable(f"{target} did not build ({what})")
        if not exe.exists():
            raise Unavailable(f"{target} not built ({what})")
        return exe

    def build_peer(self, name):
        if name in self.built:
            return self.built[name]
        PEERS.mkdir(parents=True, exist_ok=True)
        out = PEERS / name
        cpp = ROOT / "bench" / "peers" / "cpp"
        flags = ["-O2", "-std=c++20", "-DNDEBUG", "-I", cpp]
        cmds = {
            "gopeer": (["go", "build", "-o", out, "."], ROOT / "bench" / "peers" / "go"),
            "boost_fiber_peer": (["g++", *flags, cpp / "boost_fiber_peer.cc", "-o", out,
                                  "-lboost_fiber", "-lboost_context", "-pthread"], None),
            "tbb_flow_peer": (["g++", *flags, cpp / "tbb_flow_peer.cc", "-o", out, "-ltbb",
                               "-pthread"], None),
            "std_baselines": (["g++", *flags, cpp / "std_baselines.cc", "-o", out, "-lbenchmark",
                               "-pthread"], None),
            "blas_memcpy_peer": (["g++", *flags, cpp / "blas_memcpy_peer.cc", "-o", out,
                                  "-lbenchmark", "-lopenblas", "-pthread"], None),
        }
        cmd, cwd = cmds[name]
        if not self.args.no_build or not out.exists():
            run(cmd, cwd=cwd)
        self.built[name] = out
        return out

    # --- Google Benchmark programs ----------------------------------------------------------

    def gbench(self, exe, filt=None, env=None, reps=None, min_time=None):
        """Runs a Google Benchmark binary; returns {name: [per-repetition value]}.

        Value: counter ns_per_op if present (runtime shapes, timed inside a green thread), else
        real time per iteration divided by counter ops_per_iter (batches), in ns; counters named
        bytes_per_thread are returned as they are."""
        reps = reps or self.reps
        cmd = [exe, "--benchmark_format=json", f"--benchmark_repetitions={reps}"]
        if filt:
            cmd.append(f"--benchmark_filter={filt}")
        if min_time:
            cmd.append(f"--benchmark_min_time={min_time}")
        data = json.loads(run(cmd, env=env))
        ctx = data.get("context", {})
        self.versions.setdefault("google-benchmark library_build_type",
                                 ctx.get("library_build_type", "?"))
        per_unit = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
        res = {}
        for b in data["benchmarks"]:
            if b.get("run_type") != "iteration":
                continue
            name = re.sub(r"/(real|manual)_time$", "", b["name"])
            name = re.sub(r"/iterations:\d+", "", name)
            if b.get("error_occurred"):  # that shape's own check failed: its rows say so
                log(f"{exe.name} {name}: {b.get('error_message')}")
                res[name + "!error"] = f"{exe.name} {name}: {b.get('error_message')}"
                continue
            if "bytes_per_thread" in b:
                v = b["bytes_per_thread"]
            elif "ns_per_op" in b:
                v = b["ns_per_op"]
            elif "ns_per_node" in b:
                # An inverted rate counter (kIsRate | kInvert): Google Benchmark stores it in
                # seconds per node whatever its name says.
                v = b["ns_per_node"] * 1e9
            else:
                v = b["real_time"] * per_unit[b.get("time_unit", "ns")] / b.get("ops_per_iter", 1)
            res.setdefault(name, []).append(v)
            for k in ("bytes_per_second", "flops"):
                if k in b:
                    res.setdefault(name + "#" + k, []).append(b[k])
        return res

    def src_cf_core(self):
        exe = self.chanflow_exe("chanflow_core_bench", "core layer")
        return self.gbench(exe, min_time=self.args.min_time)

    def src_std(self):
        return self.gbench(self.build_peer("std_baselines"), min_time=self.args.min_time)

    def src_cf_runtime(self):
        exe = self.chanflow_exe("chanflow_runtime_bench", "runtime layer")
        env = {"CHANFLOW_BENCH_SCALE": str(self.args.scale),
               "CHANFLOW_BENCH_ITERS": str(self.args.iters)}
        res = self.gbench(exe, filt="-ParkedMemory", env=env)
        for w in (1, 2):
            name = f"BM_ParkedMemory100k/{w}"
            for _ in range(self.args.mem_reps):
                # Names carry suffixes (/iterations:1/manual_time): anchor on the argument's '/'.
                one = self.gbench(exe, filt=f"^{name}/", env=env, reps=1)
                if name not in one:
                    res[name + "!error"] = one.get(name + "!error", f"no {name} reported")
                    break
                res.setdefault(name, []).extend(one[name])
        return res

    def src_cf_tensor(self):
        self.build_chanflow()
        exes = sorted((BUILD / "bench" / "tensor").glob("*bench*")) if (BUILD / "bench" / "tensor").exists() else []
        exes = [e for e in exes if e.is_file() and os.access(e, os.X_OK)
                and e.name not in TRAINING_EXES]
        if not exes:
            raise Unavailable("no tensor benchmark binary (bench/tensor/) built yet")
        res = {}
        for e in exes:
            res.update(self.gbench(e, env={"OPENBLAS_NUM_THREADS": "1"},
                                   min_time=self.args.min_time))
        return res

    def src_cf_layer(self, layer):
        """bench/<layer>/ binaries written by the graph and exec layers."""
        exe = self.chanflow_exe(f"{layer}/chanflow_{layer}_bench", f"{layer} layer")
        return self.gbench(exe, env={"OPENBLAS_NUM_THREADS": "1"})

    def src_blas(self):
        return self.gbench(self.build_peer("blas_memcpy_peer"), env={"OPENBLAS_NUM_THREADS": "1"},
                           min_time=self.args.min_time)

    # --- RESULT-line programs ------------------------------------------------------------------

    def parse_results(self, text):
        res = {}
        lines = text.splitlines()
        if lines and lines[0].startswith("# "):  # the program's banner: its peer's version
            self.versions[lines[0][2:].split()[0]] = lines[0][2:]
        for line in lines:
            if line.startswith("RESULT "):
                _, key, _unit, *vals = line.split()
                res.setdefault(key, []).extend(float(v) for v in vals)
            elif line.startswith("UNAVAILABLE "):  # UNAVAILABLE <key> <why>: that key's rows say so
                _, key, why = line.split(maxsplit=2)
                res[key + "!error"] = why
        return res

    def src_go(self, procs):
        exe = self.build_peer("gopeer")
        self.versions["go"] = run(["go", "version"]).strip()
        env = {"GOMAXPROCS": procs}
        res = self.parse_results(run([exe, "-reps", self.reps, "-scale", self.args.scale], env=env))
        for _ in range(self.args.mem_reps):
            one = self.parse_results(run([exe, "-only", "^parked_mem100k$"], env=env))
            for k, v in one.items():
                res.setdefault(k, []).extend(v)
        return res

    def src_gotest(self):
        """Go's own runtime channel benchmarks: go test -run NONE -bench ... runtime."""
        pattern = ("Chan|Select" if self.args.go_all else
                   "^Benchmark(ChanProdCons(0|10|100)|ChanSem|ChanNonblocking|SelectUncontended|"
                   "SelectNonblock)$")
        cmd = ["go", "test", "-run", "NONE", "-bench", pattern, "-cpu",
               ",".join(str(w) for w in WORKERS), "-count", self.reps,
               "-benchtime", "200ms" if self.args.quick else "1s", "runtime"]
        out = run(cmd, cwd="/tmp", timeout=7200)
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / "go_test_runtime.txt").write_text(out)
        res = {}
        for m in re.finditer(r"^Benchmark(\w+?)(?:-(\d+))?\s+\d+\s+([\d.]+) ns/op", out, re.M):
            res.setdefault(f"{m.group(1)}/{m.group(2) or 1}", []).append(float(m.group(3)))
        return res

    def src_boost(self):
        exe = self.build_peer("boost_fiber_peer")
        return self.parse_results(run([exe, "--reps", self.reps, "--scale", self.args.scale],
                                      env=BOOST_ENV))

    # --- the Python module (bench/python/python_bench.py) ----------------------------------------

    def python_bench(self, mode, *flags):
        """Runs python_bench.py `mode` against build/release/python; returns its RESULT lines."""
        self.build_chanflow()
        if "chanflow_python" in self.build_errors:
            raise Unavailable("the Python module chanflow_python did not build: "
                              + self.build_errors["chanflow_python"])
        if not list((BUILD / "python" / "chanflow").glob("_native*.so")):
            raise Unavailable("the Python module chanflow._native was not built (CMake needs "
                              "Python 3's development files and pybind11: on Debian, "
                              "python3-dev pybind11-dev python3-pybind11 python3-numpy)")
        if not PYTHON.exists():
            raise Unavailable(f"{PYTHON} does not exist (the interpreter the module is built for)")
        return self.parse_results(run([PYTHON, PY_BENCH, mode, *flags],
                                      env={"PYTHONPATH": str(BUILD / "python"),
                                           "PYTHONDONTWRITEBYTECODE": "1"}))

    def src_py_exec(self):
        """Executor.run of bench/exec/ten_ops.pbtxt: C++ (BM_RunTenOps, key cpp_run10) and Python
        (py_native_run10, py_fluid_run10), one repetition of each in turn, so that a busy
        machine's load falls on both sides alike; every value is a mean per call over
        --min-time seconds."""
        exe = self.chanflow_exe("exec/chanflow_exec_bench", "exec layer")
        res = {}
        for _ in range(self.reps):
            cpp = self.gbench(exe, filt="^BM_RunTenOps/", reps=1, min_time=self.args.min_time)
            if "BM_RunTenOps" not in cpp:
                res["cpp_run10!error"] = cpp.get("BM_RunTenOps!error", "no BM_RunTenOps reported")
                break
            res.setdefault("cpp_run10", []).extend(cpp["BM_RunTenOps"])
            py = self.python_bench("exec", "--program", ROOT / "bench" / "exec" / "ten_ops.pbtxt",
                                   "--reps", 1, "--min-time", self.args.min_time)
            for k, v in py.items():  # samples (lists) and UNAVAILABLE reasons (strings)
                if isinstance(v, list):
                    res.setdefault(k, []).extend(v)
                else:
                    res[k] = v
        return res

    def src_py_graph(self):
        """GoMachine.run + result of the 10-op graph: C++ (BM_GoMachineRunTenOps, key
        cpp_graph_run10) and Python (python_bench.py graph, py_graph_run10), one repetition of
        each in turn, like src_py_exec."""
        exe = self.chanflow_exe("graph/chanflow_graph_bench", "graph layer")
        res = {}
        for _ in range(self.reps):
            cpp = self.gbench(exe, filt="^BM_(GoMachine|TapeMachine)RunTenOps/", reps=1,
                              min_time=self.args.min_time)
            if "BM_GoMachineRunTenOps" not in cpp or "BM_TapeMachineRunTenOps" not in cpp:
                res["cpp_graph_run10!error"] = cpp.get("BM_GoMachineRunTenOps!error",
                                                       "no BM_GoMachineRunTenOps reported")
                break
            res.setdefault("cpp_graph_run10", []).extend(cpp["BM_GoMachineRunTenOps"])
            res.setdefault("cpp_tape_run10", []).extend(cpp["BM_TapeMachineRunTenOps"])
            py = self.python_bench("graph", "--reps", 1, "--min-time", self.args.min_time)
            for k, v in py.items():
                if isinstance(v, list):
                    res.setdefault(k, []).extend(v)
                else:
                    res[k] = v
        return res

    def src_py_dlpack(self):
        """The DLPack hand-offs at 1 KiB ... 256 MiB, interleaved in one process."""
        return self.python_bench("dlpack", "--reps", self.reps,
                                 "--min-time", self.args.min_time / 5)

    def src_py_chan(self):
        """A round trip between two Python threads over chanflow channels and over queue.Queue,
        interleaved in one process (bench/python/python_bench.py chan)."""
        return self.python_bench("chan", "--reps", self.reps, "--min-time", self.args.min_time)

    def src_training(self):
        """The training rows: bench/conv_bench.cc and bench/nn_bench.cc (OpenBLAS single-threaded)
        against bench/peers/conv_torch.py under each of TORCH_RUNS, one repetition of each side in
        turn (chanflow first in even repetitions, PyTorch first in odd ones), so that a busy
        machine's load falls on both alike; nn_bench's memcpy peer runs in the same process as its
        kernels. Keys: cf:<benchmark>, nn:<benchmark>[#counter], <torch run>:<benchmark>, and per
        repetition the best of the torch runs, torch_best:<benchmark> (all runs) and
        torch_best1:<benchmark> (the 1-thread ones). Then, mem_reps times in turn, the peak-RSS
        growth of both sides' --rss mode (one process per shape): cf_rss:<shape>,
        torch_rss:<shape> (oneDNN) and torch_rss_nodnnl:<shape>, in bytes."""
        conv = self.chanflow_exe("tensor/chanflow_conv_bench", "tensor layer, conv2d")
        nn = self.chanflow_exe("tensor/chanflow_nn_bench", "tensor layer, nn.h kernels")
        blas1 = {"OPENBLAS_NUM_THREADS": "1"}
        res = {}

        def merge(prefix, data):
            for k, v in data.items():
                if isinstance(v, list):
                    res.setdefault(prefix + k, []).extend(v)
                else:
                    res[prefix + k] = v

        def chanflow_side():
            merge("cf:", self.gbench(conv, filt="^BM_Conv2d", env=blas1, reps=1,
                                     min_time=self.args.min_time))
            merge("nn:", self.gbench(nn, env=blas1, reps=1, min_time=self.args.min_time))

        def torch_json(key, cmd, env):
            """conv_torch.py's JSON lines as {name: value}, or a string saying why not."""
            if not PYTHON.exists():
                return f"{PYTHON} does not exist (PyTorch's interpreter)"
            try:
                out = run([PYTHON, TORCH_CONV, *cmd], env={**blas1, **env})
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                return f"conv_torch.py ({TORCH_LABELS.get(key, key)}) failed: " \
                       + str(e).splitlines()[0]
            lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
            for l in lines:
                if "torch" in l:
                    self.versions["PyTorch"] = (f"torch {l['torch']} ({PYTHON}), oneDNN on and "
                                                "off, OpenBLAS 1 thread")
            return lines

        def torch_side():
            for key, threads, env, flags, kinds in TORCH_RUNS:
                lines = torch_json(key, ["--threads", threads, "--kinds", kinds, "--min-time",
                                         self.args.min_time, *flags], env)
                if isinstance(lines, str):
                    for shape in LENET:
                        for kind in kinds.split(","):
                            res[f"{key}:BM_Conv2d{shape}{kind}!error"] = lines
                    continue
                for l in lines:
                    res.setdefault(f"{key}:{l['name']}", []).append(l["ms_per_call"] * 1e6)
            two_processes()

        def two_processes():
            """chanflow's own scheme in torch: two 1-thread processes stepping at once, a batch
            each; the time per batch is 1 / the sum of their rates. Approximate: the processes'
            timed windows start together but are not synchronised."""
            if not PYTHON.exists():
                for shape in LENET:
                    res[f"torch_2proc:BM_Conv2d{shape}Step!error"] = f"{PYTHON} does not exist"
                return
            cmd = [str(PYTHON), str(TORCH_CONV), "--threads", "1", "--kinds", "Step",
                   "--min-time", str(self.args.min_time)]
            log("$ 2 x " + " ".join(cmd) + "   [OPENBLAS_NUM_THREADS=1, at once]")
            env = {**os.environ, **blas1}
            procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for _ in range(2)]
            outs = [p.communicate(timeout=3600) for p in procs]
            if any(p.returncode for p in procs):
                for shape in LENET:
                    res[f"torch_2proc:BM_Conv2d{shape}Step!error"] = (
                        "two conv_torch.py processes failed: " + outs[0][1].strip()[-200:])
                return
            rates = {}
            for out, _ in outs:
                for l in out.splitlines():
                    if l.startswith("{"):
                        d = json.loads(l)
                        rates.setdefault(d["name"], []).append(1.0 / d["ms_per_call"])
            for name, r in rates.items():
                if len(r) == 2:
                    res.setdefault(f"torch_2proc:{name}", []).append(1e6 / sum(r))

        for rep in range(self.reps):
            sides = (chanflow_side, torch_side)
            for side in sides if rep % 2 == 0 else sides[::-1]:
                side()

        # The best torch setting of each repetition (the runs' samples line up by repetition).
        winners = {}
        for best, runs in (("torch_best", [r[0] for r in TORCH_RUNS]),
                           ("torch_best1", [r[0] for r in TORCH_RUNS if r[1] == 1])):
            for shape in LENET:
                for kind in ("Forward", "Backward", "Step"):
                    name = f"BM_Conv2d{shape}{kind}"
                    have = [k for k in runs if f"{k}:{name}" in res]
                    if not have:
                        why = next((res[f"{k}:{name}!error"] for k in runs
                                    if f"{k}:{name}!error" in res), None)
                        if why:
                            res[f"{best}:{name}!error"] = why
                        continue
                    n = min(len(res[f"{k}:{name}"]) for k in have)
                    picks = [min(have, key=lambda k: res[f"{k}:{name}"][i]) for i in range(n)]
                    res[f"{best}:{name}"] = [res[f"{k}:{name}"][i] for i, k in enumerate(picks)]
                    if best == "torch_best" and kind == "Step":
                        winners[shape] = ", ".join(
                            f"{TORCH_LABELS[k]} {picks.count(k)}/{n}"
                            for k in sorted(set(picks), key=picks.count, reverse=True))
        if winners:
            self.versions["PyTorch's best setting per repetition (Step)"] = "; ".join(
                f"{shape}: {w}" for shape, w in winners.items())

        for rep in range(self.args.mem_reps):
            for shape in LENET:
                def cf_rss():
                    try:
                        out = run([conv, f"--rss={shape}"], env=blas1)
                        res.setdefault(f"cf_rss:{shape}", []).append(
                            json.loads(out.strip().splitlines()[-1])["kib"] * 1024.0)
                    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                        res[f"cf_rss:{shape}!error"] = str(e).splitlines()[0]

                def torch_rss():
                    for key, flags in (("torch_rss", ()), ("torch_rss_nodnnl", ("--no-mkldnn",))):
                        lines = torch_json("torch1", ["--rss", shape, *flags], {})
                        if isinstance(lines, str):
                            res[f"{key}:{shape}!error"] = lines
                        else:
                            res.setdefault(f"{key}:{shape}", []).append(lines[-1]["kib"] * 1024.0)
                sides = (cf_rss, torch_rss)
                for side in sides if rep % 2 == 0 else sides[::-1]:
                    side()
        return res

    def src_fluid_book(self):
        """The Fluid book models' training steps: python_bench.py fluid-book (chanflow.fluid,
        fluid.Executor.run; keys book_<m>_run, _feeder_run, _feeder, _native_run, _wrapper) against
        bench/peers/fluid_book_torch.py under each of BOOK_TORCH_RUNS (keys <run>:book_<m>), one
        repetition of each side in turn (chanflow first in even repetitions), OpenBLAS
        single-threaded on both sides; per repetition the best torch setting, torch_best:book_<m>.
        Values in ns per step."""
        blas1 = {"OPENBLAS_NUM_THREADS": "1"}
        res = {}

        def chanflow_side():
            out = self.python_bench("fluid-book", "--reps", 1, "--min-time",
                                    self.args.min_time * 2)
            for k, v in out.items():
                if isinstance(v, list):
                    res.setdefault(k, []).extend(v)
                else:
                    res[k] = v

        def torch_side():
            for key, threads, env, flags in BOOK_TORCH_RUNS:
                try:
                    out = run([PYTHON, TORCH_BOOK, "--threads", threads, "--min-time",
                               self.args.min_time * 2, *flags], env={**blas1, **env})
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    for m in BOOK_MODELS:
                        res[f"{key}:book_{m}!error"] = (
                            f"fluid_book_torch.py ({TORCH_LABELS[key]}) failed: "
                            + str(e).splitlines()[0])
                    continue
                for l in out.splitlines():
                    if l.startswith("{"):
                        d = json.loads(l)
                        res.setdefault(f"{key}:{d['name']}", []).append(d["ms_per_step"] * 1e6)

        for rep in range(self.reps):
            sides = (chanflow_side, torch_side)
            for side in sides if rep % 2 == 0 else sides[::-1]:
                side()
        winners = []
        for m in BOOK_MODELS:
            name = f"book_{m}"
            have = [k for k, *_ in BOOK_TORCH_RUNS if f"{k}:{name}" in res]
            if not have:
                res[f"torch_best:{name}!error"] = next(
                    (res[f"{k}:{name}!error"] for k, *_ in BOOK_TORCH_RUNS
                     if f"{k}:{name}!error" in res), "no PyTorch figure")
                continue
            n = min(len(res[f"{k}:{name}"]) for k in have)
            picks = [min(have, key=lambda k: res[f"{k}:{name}"][i]) for i in range(n)]
            res[f"torch_best:{name}"] = [res[f"{k}:{name}"][i] for i, k in enumerate(picks)]
            winners.append(f"{m}: " + ", ".join(
                f"{TORCH_LABELS[k]} {picks.count(k)}/{n}"
                for k in sorted(set(picks), key=picks.count, reverse=True)))
        if winners:
            self.versions["PyTorch's best setting per repetition (Fluid book)"] = "; ".join(winners)
        return res

    # --- the fashion area: whole training runs (examples/train_fashion, train_digits) -----------

    def build_examples(self):
        """Builds train_fashion and train_digits (release preset), each only when CMake has its
        target; returns {target: why it is missing} (empty when both are there)."""
        if "examples" in self.built:
            return self.built["examples"]
        missing = {}
        if not self.args.no_build:
            run(["cmake", "--preset", "release"], cwd=ROOT)
            help_out = run(["cmake", "--build", "--preset", "release", "--target", "help"],
                           cwd=ROOT)
            for t in ("train_fashion", "train_digits"):
                if not re.search(rf"^{t}:", help_out, re.M):
                    missing[t] = f"CMake has no target {t} (examples/{t} is not on this branch)"
                    continue
                try:
                    run(["cmake", "--build", "--preset", "release", "-j2", "--target", t], cwd=ROOT)
                except RuntimeError as e:
                    missing[t] = f"{t} did not build: {str(e).splitlines()[0]}"
        for t, exe in (("train_fashion", TRAIN_FASHION), ("train_digits", TRAIN_DIGITS)):
            if t not in missing and not exe.exists():
                missing[t] = f"{exe.relative_to(ROOT)} not built"
        self.built["examples"] = missing
        return missing

    def training_jobs(self, jobs, timeout=3600):
        """Runs the training processes `jobs` = [(name, cmd, env, metrics.json path)] all at once
        (one job: on its own) and returns their metrics, in order, as train_fashion's schema
        (train_digits' summary is mapped onto it). Raises RuntimeError naming the first failure."""
        run_dir = OUT / "fashion"
        run_dir.mkdir(parents=True, exist_ok=True)
        procs = []
        for name, cmd, env, path in jobs:
            Path(path).unlink(missing_ok=True)
            log(("$ " if len(jobs) == 1 else f"$ [{len(jobs)} at once] ")
                + " ".join(str(c) for c in cmd)
                + "   [" + " ".join(f"{k}={'(unset)' if v is None else v}"
                                    for k, v in env.items()) + "]")
            logs = (open(run_dir / f"{name}.stdout", "w"), open(run_dir / f"{name}.stderr", "w"))
            procs.append((name, subprocess.Popen([str(c) for c in cmd], env=merged_env(env),
                                                 stdout=logs[0], stderr=logs[1]), logs, path))
        out = []
        for name, p, logs, path in procs:
            try:
                rc = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                rc = "timeout"
            for f in logs:
                f.close()
            if rc != 0:
                err = (run_dir / f"{name}.stderr").read_text().strip().splitlines()
                raise RuntimeError(f"{name} failed ({rc}): {(err or [''])[-1][:300]}")
            try:
                m = json.loads(Path(path).read_text())
            except (OSError, ValueError) as e:
                raise RuntimeError(f"{name}: no readable metrics ({path}): {e}")
            if "summary" in m:  # train_digits' metrics.json
                s = m["summary"]
                m = dict(model="mlp", test_accuracy=s["test_accuracy"],
                         samples_per_s=s["samples_per_s"], seconds=s["train_seconds"],
                         wall_seconds=s["wall_seconds"], peak_rss_kib=None,
                         deadline_reached=s["deadline_reached"], per_epoch=m.get("epochs", []))
            out.append(m)
        return out

    def src_fashion(self):
        """The fashion area: Fashion-MNIST MLP and LeNet CNN trained by examples/train_fashion
        (keys cf...), the digits MLP by examples/train_digits (cf:digits:w2), against
        bench/peers/fashion_torch.py (keys torch...) under FASHION_TORCH_RUNS; samples/s from
        each run's metrics.json (training samples / training seconds, evaluation excluded).

        1. Throughput, fashion_reps repetitions (chanflow first in even ones, PyTorch first in odd
           ones): cf:<m>:w<K> (MLP: 1 epoch; CNN: 1 epoch of the first --fashion-cnn-rows images;
           digits: train_digits' defaults), torch:<m>:<run>, per repetition the best torch run,
           torch_best:<m>; peak RSS (VmHWM) cf_rss:<m> and torch_rss:<m> (the smallest of the
           repetition's torch runs), KiB.
        2. Time to accuracy, once: train_fashion and PyTorch's most frequent best setting train up
           to fashion_epochs; the training seconds at the end of the first epoch whose test
           accuracy reaches FASHION_TARGET_ACCURACY: cf_tta:<m>, torch_tta:<m> ('!notreached'
           when the run ended first); test accuracy after epoch 1, cf_acc1:<m>, torch_acc1:<m>.
        3. Contention, once per model: quiet first (cf_quiet:<m>, torch_quiet:<m> at its most
           frequent best setting), then under a busy loop on one core (HOG), cf_hog:<m> and
           torch_hog:<m> (best of 1 and 2 threads with the quiet winner's oneDNN choice); two
           processes at once, each chanflow at 2 workers (each PyTorch at its quiet best
           setting), the mean per process cf_pair:<m> / torch_pair:<m> and the slower one
           cf_pair_min:<m>."""
        a = self.args
        missing = self.build_examples()
        seed = 1
        res = {}
        notes = []
        run_dir = OUT / "fashion"

        def put(key, v):
            res.setdefault(key, []).append(v)

        def cf_job(name, model, workers, epochs, rows):
            path = run_dir / name / "metrics.json"
            if model == "digits":
                cmd = [TRAIN_DIGITS, "--workers", workers, "--seed", seed, "--no-trace",
                       "--out-dir", path.parent]
            else:
                cmd = [TRAIN_FASHION, "--model", model, "--epochs", epochs, "--workers", workers,
                       "--batch-size", 128, "--seed", seed, "--train-rows", rows,
                       "--out-dir", path.parent, "--no-trace", "--quiet"]
            # chanflow keeps OpenBLAS at 1 thread itself (tensor/blas.h) when the variable is unset.
            return (name, cmd, {"OPENBLAS_NUM_THREADS": None, "OMP_NUM_THREADS": None}, path)

        def torch_job(name, model, run_key, epochs, rows, stop_at=0.0):
            threads, flags = next((t, f) for k, t, f in FASHION_TORCH_RUNS[model] if k == run_key)
            path = run_dir / f"{name}.json"
            cmd = [PYTHON, TORCH_FASHION, "--threads", threads, "--seed", seed, "--out", path,
                   "--quiet", *flags]
            if model == "digits":
                cmd += ["--dataset", "digits"]
            else:
                cmd += ["--model", model, "--epochs", epochs, "--train-rows", rows,
                        "--target-accuracy", stop_at]
            env = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
                   "OMP_WAIT_POLICY": "PASSIVE" if threads > 1 else None}
            return (name, cmd, env, path)

        def cf_missing(model):
            return missing.get("train_digits" if model == "digits" else "train_fashion")

        def attempt(keys, jobs):
            """The metrics of `jobs` run at once, or None after filing why under each key."""
            try:
                return self.training_jobs(jobs)
            except (RuntimeError, OSError) as e:
                for k in keys:
                    res[k + "!error"] = str(e).splitlines()[0]
                return None

        # (model, epochs, training rows: 0 = all) of the throughput and contention runs.
        quiet = (("mlp", 1, 0), ("cnn", 1, a.fashion_cnn_rows), ("digits", None, None))

        def chanflow_side(rep):
            for model, epochs, rows in quiet:
                for w in ((2, 1) if model == "cnn" else (2,)):
                    key = f"cf:{model}:w{w}"
                    keys = [key] + [f"cf_rss:{model}"] * (w == 2)
                    if cf_missing(model):
                        for k in keys:
                            res[k + "!error"] = cf_missing(model)
                        continue
                    got = attempt(keys, [cf_job(f"cf_{model}_w{w}_r{rep}", model, w, epochs,
                                                rows)])
                    if got:
                        put(key, got[0]["samples_per_s"])
                        if w == 2 and got[0].get("peak_rss_kib"):
                            put(f"cf_rss:{model}", got[0]["peak_rss_kib"])

        def torch_side(rep):
            if not PYTHON.exists():
                for model, *_ in quiet:
                    res[f"torch_best:{model}!error"] = f"{PYTHON} does not exist"
                return
            for model, epochs, rows in quiet:
                rss = []
                for run_key, _, _ in FASHION_TORCH_RUNS[model]:
                    key = f"torch:{model}:{run_key}"
                    got = attempt([key], [torch_job(f"torch_{model}_{run_key}_r{rep}", model,
                                                    run_key, epochs, rows)])
                    if got:
                        put(key, got[0]["samples_per_s"])
                        rss.append(got[0]["peak_rss_kib"])
                        self.versions["PyTorch (fashion)"] = (
                            f"torch {got[0]['torch']} ({PYTHON}), OpenBLAS and OpenMP at the "
                            "torch thread count")
                if rss:
                    put(f"torch_rss:{model}", min(rss))

        for rep in range(a.fashion_reps):
            sides = (chanflow_side, torch_side)
            for side in sides if rep % 2 == 0 else sides[::-1]:
                side(rep)

        best_run = {}
        for model, *_ in quiet:
            runs = [k for k, _, _ in FASHION_TORCH_RUNS[model] if f"torch:{model}:{k}" in res]
            if not runs:
                res.setdefault(f"torch_best:{model}!error", next(
                    (res[f"torch:{model}:{k}!error"] for k, _, _ in FASHION_TORCH_RUNS[model]
                     if f"torch:{model}:{k}!error" in res), "no PyTorch figure"))
                continue
            n = min(len(res[f"torch:{model}:{k}"]) for k in runs)
            picks = [max(runs, key=lambda k: res[f"torch:{model}:{k}"][i]) for i in range(n)]
            res[f"torch_best:{model}"] = [res[f"torch:{model}:{k}"][i] for i, k in enumerate(picks)]
            best_run[model] = max(runs, key=lambda k: (picks.count(k), statistics.median(
                res[f"torch:{model}:{k}"])))
            notes.append(f"{model}: " + ", ".join(
                f"{fashion_label(model, k)} {picks.count(k)}/{n}"
                for k in sorted(set(picks), key=picks.count, reverse=True)))
        if notes:
            self.versions["PyTorch's best setting per repetition (fashion)"] = "; ".join(notes)

        # 2. Time to accuracy.
        reached = []
        for model, epochs in (("mlp", a.fashion_epochs[0]), ("cnn", a.fashion_epochs[1])):
            target = FASHION_TARGET_ACCURACY[model]
            sides = [("cf", "chanflow 2 workers", None if cf_missing(model) else
                      cf_job(f"cf_{model}_tta", model, 2, epochs, 0), cf_missing(model))]
            if model in best_run:
                sides.append(("torch", f"PyTorch {fashion_label(model, best_run[model])}",
                              torch_job(f"torch_{model}_tta", model, best_run[model], epochs, 0,
                                        stop_at=target), None))
            else:
                sides.append(("torch", "PyTorch", None, "no PyTorch setting measured"))
            for side, label, job, why in sides:
                keys = [f"{side}_tta:{model}", f"{side}_acc1:{model}"]
                if job is None:
                    for k in keys:
                        res[k + "!error"] = why
                    continue
                got = attempt(keys, [job])
                if not got:
                    continue
                eps = got[0]["per_epoch"]
                if eps:
                    put(f"{side}_acc1:{model}", eps[0]["test_accuracy"] * 100)
                hit = next((e for e in eps if e["test_accuracy"] >= target), None)
                if hit:
                    put(f"{side}_tta:{model}", hit["time_s"])
                    reached.append(f"{model} {target:.0%}: {label} at epoch {hit['epoch']} "
                                   f"({hit['test_accuracy']:.4f}, {hit['time_s']:.1f} s)")
                else:
                    top = max(eps, key=lambda e: e["test_accuracy"], default=None)
                    res[f"{side}_tta:{model}!notreached"] = (
                        f"{label} did not reach {target:.0%} test accuracy on the {model} in "
                        f"{len(eps)} epoch(s)" + (f" (best {top['test_accuracy']:.4f}, epoch "
                                                  f"{top['epoch']})" if top else ""))
                    reached.append(f"{model} {target:.0%}: {label} not reached in {len(eps)} "
                                   "epoch(s)")
        if reached:
            self.versions["time to accuracy (fashion)"] = "; ".join(reached)

        # 3. Contention.
        contention = []
        for model, epochs, rows in quiet[:2]:
            cf_ok = not cf_missing(model)
            flags = next((f for k, _, f in FASHION_TORCH_RUNS[model] if k == best_run.get(model)),
                         None)
            under_hog = [k for k, _, f in FASHION_TORCH_RUNS[model] if f == flags]
            # Fresh quiet figures first: the contention rows compare with the machine as it is now
            # (other jobs on a shared host drift over the minutes phase 1 took).
            if cf_ok:
                got = attempt([f"cf_quiet:{model}"], [cf_job(f"cf_{model}_quiet", model, 2,
                                                             epochs, rows)])
                if got:
                    put(f"cf_quiet:{model}", got[0]["samples_per_s"])
            else:
                res[f"cf_quiet:{model}!error"] = cf_missing(model)
            if model in best_run:
                got = attempt([f"torch_quiet:{model}"], [torch_job(
                    f"torch_{model}_quiet", model, best_run[model], epochs, rows)])
                if got:
                    put(f"torch_quiet:{model}", got[0]["samples_per_s"])
            hog = subprocess.Popen(list(HOG), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            log(f"busy loop started (pid {hog.pid}): {' '.join(HOG)}")
            try:
                if cf_ok:
                    got = attempt([f"cf_hog:{model}"], [cf_job(f"cf_{model}_hog", model, 2,
                                                               epochs, rows)])
                    if got:
                        put(f"cf_hog:{model}", got[0]["samples_per_s"])
                else:
                    res[f"cf_hog:{model}!error"] = cf_missing(model)
                rates = []
                for run_key in under_hog:
                    got = attempt([f"torch_hog:{model}"], [torch_job(
                        f"torch_{model}_{run_key}_hog", model, run_key, epochs, rows)])
                    if got:
                        rates.append(got[0]["samples_per_s"])
                if rates:
                    put(f"torch_hog:{model}", max(rates))
                    res.pop(f"torch_hog:{model}!error", None)
                elif not under_hog:
                    res[f"torch_hog:{model}!error"] = "no PyTorch setting measured"
            finally:
                hog.kill()
                hog.wait()
                log(f"busy loop {hog.pid} stopped")
            for side in ("cf", "torch"):
                keys = [f"{side}_pair:{model}", f"{side}_pair_min:{model}"]
                if side == "cf" and not cf_ok:
                    jobs, why = None, cf_missing(model)
                elif side == "torch" and model not in best_run:
                    jobs, why = None, "no PyTorch setting measured"
                elif side == "cf":
                    jobs = [cf_job(f"cf_{model}_pair{i}", model, 2, epochs, rows)
                            for i in range(2)]
                else:
                    jobs = [torch_job(f"torch_{model}_pair{i}", model, best_run[model], epochs,
                                      rows) for i in range(2)]
                if jobs is None:
                    for k in keys:
                        res[k + "!error"] = why
                    continue
                got = attempt(keys, jobs)
                if got:
                    r = [m["samples_per_s"] for m in got]
                    put(keys[0], statistics.mean(r))
                    put(keys[1], min(r))
            # PyTorch's own slow-down, for the notes (its rows compare chanflow with it).
            if all(f"torch_{k}:{model}" in res for k in ("quiet", "hog", "pair_min")):
                q = res[f"torch_quiet:{model}"][0]
                hog_x = res[f"torch_hog:{model}"][0] / q
                pair_x = res[f"torch_pair_min:{model}"][0] / q
                contention.append(f"{model}: with the busy loop {hog_x:.2f}x its quiet figure "
                                  f"(its best setting, just before), two processes (the slower "
                                  f"one) {pair_x:.2f}x")
        if contention:
            self.versions["PyTorch under contention (fashion)"] = "; ".join(contention)
        return res

    def src_tbb(self, threads):
        exe = self.build_peer("tbb_flow_peer")
        return self.parse_results(run([exe, "--reps", self.reps, "--threads", threads, "--nodes",
                                       100000]))


# ------------------------------------------------------------------------------------------------
# The table. A row compares chanflow's `cf` key with a peer's key; `target` is (op, bound) on
# ratio = chanflow / peer in the row's unit ('<=' for times, '>=' for rates), or None (reported
# for context, no target). `conv` converts a sample (ns per op, ...) to the row's display unit.

def per_s(ns):
    return 1e3 / ns  # ns per message -> M messages per second


def rows():
    r = []

    def add(area, shape, cf, peer, peer_name, unit, target=None, conv=None, note="",
            peer_conv="same"):
        r.append(dict(area=area, shape=shape, cf=cf, peer=peer, peer_name=peer_name, unit=unit,
                      target=target, conv=conv, peer_conv=conv if peer_conv == "same" else peer_conv,
                      note=note))

    for w in (1, 2):
        go = f"go:{w}"
        gname = f"Go GOMAXPROCS={w}"
        add("channels", f"unbuffered ping-pong round trip, {w} worker{'s' * (w > 1)}",
            ("cf_runtime", f"BM_PingPong/{w}"), (go, "pingpong"), gname, "ns",
            ("<=", 0.5) if w == 1 else None)
        add("channels", f"ping-pong with the pinging side on an OS thread, {w} worker{'s' * (w > 1)}",
            ("cf_runtime", f"BM_OsPingPong/{w}"), (go, "ospingpong"),
            f"{gname}, LockOSThread", "ns", ("<=", 1.0))
        add("channels", f"buffered(128) 1P->1C throughput, {w} worker{'s' * (w > 1)}",
            ("cf_runtime", f"BM_Buffered128/{w}"), (go, "buffered128"), gname, "M msg/s",
            (">=", 2.0), per_s)
    add("channels", "unbuffered ping-pong round trip, 1 worker", ("cf_runtime", "BM_PingPong/1"),
        ("boost", "pingpong"), "Boost.Fiber 1 thread", "ns")
    add("channels", "buffered(128) 1P->1C throughput, 1 worker", ("cf_runtime", "BM_Buffered128/1"),
        ("boost", "buffered128"), "Boost.Fiber 1 thread", "M msg/s", (">=", 1.0), per_s)
    for w in (1, 2):
        for b in ("ChanProdCons0", "ChanProdCons10", "ChanProdCons100", "ChanSem",
                  "ChanNonblocking"):
            add("channels", f"Go's {b}, {w} worker{'s' * (w > 1)}", ("cf_runtime", f"BM_{b}/{w}"),
                ("gotest", f"{b}/{w}"), f"go test runtime -cpu {w}", "ns/op", ("<=", 1.0))
    # Go's own BenchmarkSelectUncontended runs one such loop per P (RunParallel): same shape at -cpu 1.
    add("select", "2-case select, uncontended, 1 worker", ("cf_runtime", "BM_Select2Uncontended/1"),
        ("gotest", "SelectUncontended/1"), "go test runtime -cpu 1", "ns/op")
    for w in (1, 2):
        go = f"go:{w}"
        gname = f"Go GOMAXPROCS={w}"
        ws = f"{w} worker{'s' * (w > 1)}"
        add("select", f"2-case select, uncontended (cap-1 chans), {ws}",
            ("cf_runtime", f"BM_Select2Uncontended/{w}"), (go, "select2_uncontended"), gname, "ns",
            ("<=", 0.5))
        add("select", f"select + default on empty chan, {ws}",
            ("cf_runtime", f"BM_SelectDefault/{w}"), (go, "select_default"), gname, "ns",
            ("<=", 1.0))
        add("select", f"select over 2 chans fed by 2 producers, {ws}",
            ("cf_runtime", f"BM_Select2Producers/{w}"), (go, "select2_producers"), gname, "ns/msg")
    for w in (1, 2):
        go = f"go:{w}"
        gname = f"Go GOMAXPROCS={w}"
        ws = f"{w} worker{'s' * (w > 1)}"
        add("green threads", f"spawn 100k, each sends once, {ws}",
            ("cf_runtime", f"BM_Spawn100k/{w}"), (go, "spawn100k"), gname, "ns/thread",
            ("<=", 0.5))
        add("green threads", f"10k daisy chain pass, {ws}", ("cf_runtime", f"BM_Daisy10k/{w}"),
            (go, "daisy10k"), gname, "ms", ("<=", 0.5), lambda ns: ns / 1e6, peer_conv=None)
        add("green threads", f"skynet 1M leaves, {ws}", ("cf_runtime", f"BM_Skynet1M/{w}"),
            (go, "skynet1m"), gname, "ms", ("<=", 0.5) if w == 2 else None,
            lambda ns: ns / 1e6, peer_conv=None)
    add("green threads", "spawn 100k, each sends once, 1 worker", ("cf_runtime", "BM_Spawn100k/1"),
        ("boost", "spawn100k"), "Boost.Fiber 1 thread", "ns/thread")
    add("green threads", "10k daisy chain pass, 1 worker", ("cf_runtime", "BM_Daisy10k/1"),
        ("boost", "daisy10k"), "Boost.Fiber 1 thread", "ms", None, lambda ns: ns / 1e6,
        peer_conv=None)
    for w in (1, 2):
        add("green threads", f"resident memory per parked green thread at 100k, {w} worker"
            + "s" * (w > 1), ("cf_runtime", f"BM_ParkedMemory100k/{w}"),
            (f"go:{w}", "parked_mem100k"), f"Go GOMAXPROCS={w} (RSS)", "KiB",
            ("abs<=", 8.0), lambda b: b / 1024, "target is absolute: <= 8 KiB")
    # Scaling: chanflow's time ratio (more workers / fewer) against Go's for the same shape.
    for b in ("ChanProdCons0", "ChanProdCons10", "ChanProdCons100"):
        for lo, hi in ((1, 2), (2, 4)):
            add("scaling", f"{b}: time at {hi} workers / {lo}",
                ("scale", "cf_runtime", f"BM_{b}/{hi}", f"BM_{b}/{lo}"),
                ("scale", "gotest", f"{b}/{hi}", f"{b}/{lo}"), f"Go -cpu {lo}->{hi}", "x",
                ("<=", 1.0) if (lo, hi) == (1, 2) else None)
    add("scaling", "skynet 1M, 2 workers / 1",
        ("scale", "cf_runtime", "BM_Skynet1M/2", "BM_Skynet1M/1"),
        ("scale", "go_pair", "2", "skynet1m"), "Go GOMAXPROCS=1->2", "x")
    for w in (2, 4):
        add("scaling", f"unbuffered ping-pong, {w} workers / 1",
            ("scale", "cf_runtime", f"BM_PingPong/{w}", "BM_PingPong/1"),
            ("scale", "go_pair", f"{w}", "pingpong"), f"Go GOMAXPROCS=1->{w}", "x")
    # Objects (core).
    add("objects", "make_object + release", ("cf_core", "BM_MakeObject"), ("std", "BM_MakeShared"),
        "std::make_shared", "ns", ("<=", 1.0))
    add("objects", "is_instance, range fast path", ("cf_core", "BM_IsInstanceFast"),
        ("std", "BM_DynamicCastShallow"), "dynamic_cast", "ns", ("<=", 0.5))
    add("objects", "is_instance, overflow path (grandchild)", ("cf_core", "BM_IsInstanceOverflow"),
        ("std", "BM_DynamicCastDeep"), "dynamic_cast", "ns")
    add("objects", "ObjectPool make + release", ("cf_core", "BM_PoolMake"), ("std", "BM_NewDelete"),
        "new/delete", "ns")
    add("objects", "ObjectPool make + release", ("cf_core", "BM_PoolMake"),
        ("cf_core", "BM_MakeObject"), "chanflow make_object", "ns")
    add("objects", "Array<Int> push_back (1k)", ("cf_core", "BM_ArrayPushBack"),
        ("std", "BM_VectorPushBack"), "std::vector<int64_t>", "ns/elem")
    add("objects", "Array<Int> index (1k)", ("cf_core", "BM_ArrayIndex"),
        ("std", "BM_VectorIndex"), "std::vector<int64_t>", "ns/elem")
    # find() borrows the stored value (no reference-count traffic), the contract of
    # unordered_map::find, so it carries the target; get() returns an owning handle.
    add("objects", "Map<Int,Int> find, 1k int keys", ("cf_core", "BM_MapFind"),
        ("std", "BM_UnorderedMapLookup"), "std::unordered_map", "ns", ("<=", 1.2))
    add("objects", "Map<Int,Int> get (owning handle), 1k int keys", ("cf_core", "BM_MapLookup"),
        ("std", "BM_UnorderedMapLookup"), "std::unordered_map", "ns")
    add("objects", "Map<Int,Int> lookup by boxed Int key", ("cf_core", "BM_MapLookupBoxedKey"),
        ("std", "BM_UnorderedMapLookup"), "std::unordered_map", "ns")
    # The FFI: one call of a function whose body returns its Int argument, through each layer,
    # against a direct (not inlined) C++ call of the same body, in the same binary. Recorded
    # without targets (docs/core.md, "Functions and the C ABI", says what each layer adds).
    for shape, key in (("std::function", "BM_StdFunctionCall"),
                       ("Function handle (C++)", "BM_FunctionCall"),
                       ("registry lookup by name + call (C++)", "BM_RegistryLookupCall"),
                       ("C ABI chanflow_func_call, by handle", "BM_CApiCallHandle"),
                       ("C ABI chanflow_func_call_by_name", "BM_CApiCallByName")):
        add("objects", f"function call: {shape}", ("cf_core", key), ("cf_core", "BM_DirectCall"),
            "direct C++ call, same body", "ns")
    # Tensor: chanflow's side is bench/tensor_bench.cc (built as bench/tensor/chanflow_tensor_bench).
    # Its bytes_per_second counts memory traffic (add: 2 reads + 1 write; memcpy: 1 read + 1 write),
    # so the memcpy it runs in the same process is the bandwidth peer.
    for op in ("Add", "Mul"):
        add("tensor", f"elementwise {op.lower()}, 64 MiB float32",
            ("cf_tensor", f"BM_{op}/67108864#bytes_per_second"),
            ("cf_tensor", "BM_Memcpy/67108864#bytes_per_second"), "memcpy 64 MiB (same process)",
            "GB/s", (">=", 0.8), lambda b: b / 1e9)
    # Reductions and a strided elementwise shape against the same memcpy, for context (they have
    # no target). Their bytes_per_second counts bytes read (reductions) or all traffic
    # (transposed add: 2 reads + 1 write), next to memcpy's read + write.
    for shape, key in (("max over all elements, 64 MiB float32", "BM_MaxAll"),
                       ("argmax along the last axis, 4096^2 float32", "BM_ArgmaxLastAxis"),
                       ("sum over the first axis, 4096^2 float32", "BM_SumFirstAxis"),
                       ("add, transposed view + contiguous, 4096^2 float32",
                        "BM_TransposedAdd/4096")):
        add("tensor", shape, ("cf_tensor", f"{key}#bytes_per_second"),
            ("cf_tensor", "BM_Memcpy/67108864#bytes_per_second"), "memcpy 64 MiB (same process)",
            "GB/s", None, lambda b: b / 1e9)
    add("tensor", "matmul 1024^2 float32", ("cf_tensor", "BM_Matmul/1024#flops"),
        ("blas", "BM_SgemmDirect/1024#flops"), "OpenBLAS sgemm direct", "GFLOP/s", (">=", 0.95),
        lambda f: f / 1e9)
    # Training (bench/conv_bench.cc, bench/nn_bench.cc; PyTorch peer bench/peers/conv_torch.py):
    # conv2d forward + input and filter gradients on the LeNet shapes at batch 64, in steps per
    # second (ratio = torch's time / chanflow's). chanflow's kernels are single-threaded: it
    # trains on 2 cores with two workers on a batch each, so its 2-thread figure is the time per
    # batch of two threads stepping at once (BM_Conv2dLeNet*Step/threads:2); torch's is its best
    # setting of that repetition (1 or 2 threads, oneDNN on or off, TORCH_RUNS). Target >= 1.
    def steps(ns):
        return 1e9 / ns

    for n, what in ((1, "LeNet1 1->20 5x5 on 28x28"), (2, "LeNet2 20->50 5x5 on 12x12")):
        step = f"conv2d fwd + grad input + grad filter, {what}, batch 64"
        cf_step = f"cf:BM_Conv2dLeNet{n}Step/real_time/threads:"
        torch_step = f"BM_Conv2dLeNet{n}Step"
        add("training", f"{step}: chanflow 2 threads, per batch",
            ("training", cf_step + "2"), ("training", f"torch_best:{torch_step}"),
            "PyTorch best of 1/2 threads, oneDNN on/off", "steps/s", (">=", 1.0), steps)
        add("training", f"{step}: 1 thread", ("training", cf_step + "1"),
            ("training", f"torch_best1:{torch_step}"), "PyTorch 1 thread, best of oneDNN on/off",
            "steps/s", (">=", 1.0), steps)
        for key in ("torch2", "torch2_nodnnl", "torch2_spin", "torch_2proc"):
            add("training", f"{step}: chanflow 2 threads, per batch", ("training", cf_step + "2"),
                ("training", f"{key}:{torch_step}"), f"PyTorch {TORCH_LABELS[key]}", "steps/s",
                None, steps)
        for kind, label in (("Forward", "conv2d forward"),
                            ("Backward", "conv2d grad input + grad filter")):
            add("training", f"{label}, {what}, batch 64: 1 thread",
                ("training", f"cf:BM_Conv2dLeNet{n}{kind}"),
                ("training", f"torch_best1:BM_Conv2dLeNet{n}{kind}"),
                "PyTorch 1 thread, best of oneDNN on/off", "calls/s", None, steps)
    # The Fluid book models (Paddle's test_recognize_digits.py: the MLP and the CNN with
    # batch_norm), one Adam training step at batch 64 through fluid.Executor.run from Python
    # (python_bench.py fluid-book), against the same models, loss, optimizer and initialisation
    # in PyTorch (bench/peers/fluid_book_torch.py) at its best of 1/2 threads, oneDNN on/off, per
    # repetition. Target >= 1 x PyTorch for the step with a prepared feed; the step with
    # DataFeeder.feed, the feeder alone and the Fluid wrapper's cost are reported for context.
    def samples_per_s(ns):
        return 64e9 / ns

    def us(ns):
        return ns / 1e3

    for m, what in (("mlp", "MLP 784-200-200-10"), ("cnn", "CNN conv-pool 20, batch_norm, "
                                                            "conv-pool 50, fc 10")):
        best = ("fluid_book", f"torch_best:book_{m}")
        label = "PyTorch best of 1/2 threads, oneDNN on/off"
        add("training", f"Fluid book {what}, Adam step, batch 64: fluid.Executor.run, "
            "prepared NumPy feed", ("fluid_book", f"book_{m}_run"), best, label, "samples/s",
            (">=", 1.0), samples_per_s)
        add("training", f"Fluid book {what}, Adam step, batch 64: DataFeeder.feed + "
            "fluid.Executor.run", ("fluid_book", f"book_{m}_feeder_run"), best, label,
            "samples/s", None, samples_per_s)
        for key in ("torch1", "torch2"):
            add("training", f"Fluid book {what}, Adam step, batch 64: fluid.Executor.run, "
                "prepared NumPy feed", ("fluid_book", f"book_{m}_run"),
                ("fluid_book", f"{key}:book_{m}"), f"PyTorch {TORCH_LABELS[key]}", "samples/s",
                None, samples_per_s)
        add("training", f"Fluid book {what}, batch 64: per-batch Python overhead, DataFeeder.feed "
            "of 64 samples", ("fluid_book", f"book_{m}_feeder"), ("none",), "—", "us", None, us)
        add("training", f"Fluid book {what}, batch 64: per-batch Python overhead, "
            "fluid.Executor.run's own (native run stubbed out)", ("fluid_book", f"book_{m}_wrapper"),
            ("none",), "—", "us", None, us)
        add("training", f"Fluid book {what}, Adam step, batch 64: native chanflow.Executor.run",
            ("fluid_book", f"book_{m}_native_run"), best, label, "samples/s", None,
            samples_per_s)
    # Peak memory: how much the peak RSS grows over five forward + backward passes at batch 64
    # after a warm-up pass at batch 16, one process per figure (conv_bench --rss=, conv_torch.py
    # --rss). Target: chanflow <= torch (default settings: oneDNN).
    for shape in LENET:
        for key, label, target in (("torch_rss", "PyTorch 1 thread, oneDNN", ("<=", 1.0)),
                                   ("torch_rss_nodnnl", "PyTorch 1 thread, no oneDNN", None)):
            add("training", f"peak RSS growth, conv2d fwd + bwd, {shape}, batch 64",
                ("training", f"cf_rss:{shape}"), ("training", f"{key}:{shape}"), label, "KiB",
                target, lambda b: b / 1024)
    # The memory-bound kernels of nn.h on 32 MiB float32 against memcpy of 32 MiB in the same
    # process (bench/nn_bench.cc): bytes_per_second counts the traffic each kernel must do at
    # least (see that file). Target >= 0.8 x memcpy's bandwidth.
    for key, label in (("LeakyRelu", "leaky_relu"), ("ReluGrad", "relu_grad"),
                       ("SigmoidGrad", "sigmoid_grad"), ("LeakyReluGrad", "leaky_relu_grad"),
                       ("DropoutTrain", "dropout (training: output + mask)"),
                       ("DropoutGrad", "dropout_grad"),
                       ("BatchNormInferNCHW", "batch_norm_infer NCHW"),
                       ("BatchNormTrainNCHW", "batch_norm_train NCHW"),
                       ("BatchNormTrainNHWC", "batch_norm_train NHWC"),
                       ("ConcatAxis1", "concat of two halves, axis 1"),
                       ("SplitAxis1", "split in two, axis 1")):
        add("training", f"{label}, 32 MiB float32", ("training", f"nn:BM_{key}#bytes_per_second"),
            ("training", "nn:BM_Memcpy#bytes_per_second"), "memcpy 32 MiB (same process)", "GB/s",
            (">=", 0.8), lambda b: b / 1e9)
    # Fashion (scripts/bench.py src_fashion): whole training runs, samples/s from each run's
    # metrics.json (training samples / training seconds; evaluation excluded), against the same
    # model, data, loss, initialisation and Adam in PyTorch (bench/peers/fashion_torch.py) at its
    # best setting of the repetition. chanflow runs its pipeline at 2 workers (examples/
    # train_fashion --workers 2; train_digits at its defaults).
    fashion = {"mlp": "Fashion-MNIST MLP 784-256-10, Adam, batch 128",
               "cnn": "Fashion-MNIST LeNet CNN (conv 20, pool, conv 50, pool, fc 500, fc 10), "
                      "Adam, batch 128",
               "digits": "digits MLP 64-256-10 (train_digits' defaults: Adam 5e-3, batch 512, "
                         "40 epochs)"}
    run_what = {"mlp": "1 epoch", "cnn": "1 epoch of the first --fashion-cnn-rows images "
                                         "(default 15000)",
                "digits": "train_digits vs the same MLP in PyTorch"}
    best_label = {"mlp": "PyTorch best of 1/2 threads",
                  "cnn": "PyTorch best of 1/2 threads, oneDNN on/off",
                  "digits": "PyTorch best of 1/2 threads"}
    for m, target in (("mlp", 2.0), ("cnn", 1.2), ("digits", 2.5)):
        add("fashion", f"{fashion[m]}, {run_what[m]}: chanflow 2 workers",
            ("fashion", f"cf:{m}:w2"), ("fashion", f"torch_best:{m}"), best_label[m],
            "samples/s", (">=", target))
        for key, _, _ in FASHION_TORCH_RUNS[m]:
            add("fashion", f"{fashion[m]}, {run_what[m]}: chanflow 2 workers",
                ("fashion", f"cf:{m}:w2"), ("fashion", f"torch:{m}:{key}"),
                f"PyTorch {fashion_label(m, key)}", "samples/s")
    add("fashion", f"{fashion['cnn']}, {run_what['cnn']}: 2 workers / 1 worker",
        ("fashion", "cf:cnn:w2"), ("fashion", "cf:cnn:w1"), "chanflow 1 worker", "samples/s",
        (">=", 1.7))
    for m in ("mlp", "cnn"):
        pct = f"{FASHION_TARGET_ACCURACY[m]:.0%}"
        add("fashion", f"{fashion[m]}: training seconds to {pct} test accuracy (end of the first "
            "epoch that reaches it), chanflow 2 workers", ("fashion", f"cf_tta:{m}"),
            ("fashion", f"torch_tta:{m}"), "PyTorch, its most frequent best setting", "s",
            ("<=", 1.0))
        add("fashion", f"{fashion[m]}: test accuracy after epoch 1", ("fashion", f"cf_acc1:{m}"),
            ("fashion", f"torch_acc1:{m}"), "PyTorch, same run", "%")
    for m, target in (("cnn", ("<=", 1.0)), ("mlp", None)):
        add("fashion", f"{fashion[m]}: peak RSS (VmHWM) of the training process, "
            f"{run_what[m]}", ("fashion", f"cf_rss:{m}"), ("fashion", f"torch_rss:{m}"),
            "PyTorch, smallest of its settings (interpreter and libtorch included)", "KiB",
            target)
    for m in ("mlp", "cnn"):
        add("fashion", f"{fashion[m]}, {run_what[m]}: chanflow 2 workers with a busy loop on "
            "one core / quiet", ("fashion", f"cf_hog:{m}"), ("fashion", f"cf_quiet:{m}"),
            "chanflow 2 workers, quiet, just before", "samples/s", (">=", 0.4))
        add("fashion", f"{fashion[m]}, {run_what[m]}: chanflow 2 workers with a busy loop on "
            "one core", ("fashion", f"cf_hog:{m}"), ("fashion", f"torch_hog:{m}"),
            "PyTorch best of 1/2 threads, same busy loop", "samples/s", (">=", 1.0))
        add("fashion", f"{fashion[m]}, {run_what[m]}: two processes at once, per process "
            "(mean)", ("fashion", f"cf_pair:{m}"), ("fashion", f"torch_pair:{m}"),
            "two PyTorch processes, its best setting", "samples/s", (">=", 1.0))
        add("fashion", f"{fashion[m]}, {run_what[m]}: two processes at once, the slower one / "
            "quiet", ("fashion", f"cf_pair_min:{m}"), ("fashion", f"cf_quiet:{m}"),
            "chanflow 2 workers, quiet, just before", "samples/s", (">=", 0.4))
    # GoMachine (graph layer, bench/graph/) against oneTBB flow graph: per-node run time, 100k
    # empty nodes; and against its own TapeMachine (speed-up = Tape time / GoMachine time).
    for t in (1, 2):
        for shape, cf_key, key in (("linear chain", "BM_GoChain", "graph_chain_run"),
                                   ("fan-out", "BM_GoFanout", "graph_fanout_run")):
            add("graph", f"per-node overhead, 100k-node {shape}, {t} worker{'s' * (t > 1)}",
                ("cf_layer:graph", f"{cf_key}/100000/{t}"), (f"tbb:{t}", key),
                f"oneTBB flow graph {t} thread{'s' * (t > 1)}", "ns/node", ("<=", 1.5))
    add("graph", "wide ensemble with tensor work, 2 workers: speed-up over TapeMachine",
        ("cf_layer:graph", "BM_EnsembleGo/2"), ("cf_layer:graph", "BM_EnsembleTape"),
        "chanflow TapeMachine", "runs/s", (">=", 1.7), lambda ns: 1e9 / ns)
    add("graph", "deep chain, 2 workers: speed vs TapeMachine (never < 1/1.15)",
        ("cf_layer:graph", "BM_DeepChainGo/2"), ("cf_layer:graph", "BM_DeepChainTape"),
        "chanflow TapeMachine", "runs/s", (">=", 1 / 1.15), lambda ns: 1e9 / ns)
    for extra in (0, 4):
        add("executor", f"per-op dispatch, 1M-iteration while loop, {2 + extra} trivial ops/iter",
            ("cf_layer:exec", f"BM_WhileLoopDispatch/1000000/{extra}"), ("none",), "—", "ns/op",
            ("abs<=", 200.0), lambda sec: sec * 1e9)  # its "ns_per_op" is an inverted rate: s/op
    # Python (bench/python/python_bench.py): Executor.run of one 10-op program (its text is
    # bench/exec/ten_ops.pbtxt), warm, from Python against the same call from C++, measured in
    # turns; target <= 1.2 x the C++ call + 10 us.
    for api, key in (("chanflow.Executor.run (native API)", "py_native_run10"),
                     ("fluid.Executor.run (Fluid API, NumPy results)", "py_fluid_run10")):
        add("python", f"{api}: 10-op program, feed + fetch float32[4], warm",
            ("py_exec", key), ("py_exec", "cpp_run10"), "C++ cf::Executor::run, same program",
            "us", ("affine<=", 1.2, 10.0), lambda ns: ns / 1e3)
    # GoMachine.run + result of a 10-op graph (input x float32[4], a constant, nine adds) built
    # the same way in C++ (BM_GoMachineRunTenOps) and from Python (python_bench.py graph), warm, on
    # the default scheduler, measured in turns; target <= 1.2 x the C++ call + 10 us.
    add("python", "chanflow.GoMachine.run + result (native API): 10-op graph, bind + read "
        "float32[4], warm", ("py_graph", "py_graph_run10"), ("py_graph", "cpp_graph_run10"),
        "C++ cf::GoMachine::run + result, same graph", "us", ("affine<=", 1.2, 10.0),
        lambda ns: ns / 1e3)
    # The same on a TapeMachine (no thread hand-off): the binding's own cost, for context.
    add("python", "chanflow.TapeMachine.run + result (native API): 10-op graph, bind + read "
        "float32[4], warm", ("py_graph", "py_tape_run10"), ("py_graph", "cpp_tape_run10"),
        "C++ cf::TapeMachine::run + result, same graph", "us", None, lambda ns: ns / 1e3)
    # A round trip between two Python threads (one sends, the other receives and sends back, the
    # first receives) over two chanflow channels against the same ping-pong over two
    # queue.Queue; the first thread is Python's main thread (where blocking channel calls also
    # listen for Ctrl-C) or both are threading threads. Target: <= 1 x queue.Queue.
    for where, who in (("main", "main thread <-> thread"), ("threads", "thread <-> thread")):
        for kind, what in (("cf0", "unbuffered"), ("cf1", "capacity 1")):
            add("python", f"channel round trip, {who}, {what} chanflow channels",
                ("py_chan", f"chan_pingpong_{kind}_{where}"),
                ("py_chan", f"chan_pingpong_queue_{where}"), "queue.Queue, same threads", "us",
                ("<=", 1.0), lambda ns: ns / 1e3)
    # The DLPack hand-off is zero-copy, so its time must not grow with the array's size: the
    # target is the time at 256 MiB / the time at 1 KiB <= 2 (a copy of 256 MiB would take
    # ~10^4 x a hand-off); each size's time is shown next to PyTorch's own
    # torch.from_dlpack(ndarray), the peer, whose growth ratio is the growth rows' peer figure.
    sizes = ((1 << 10, "1 KiB"), (1 << 16, "64 KiB"), (1 << 22, "4 MiB"), (1 << 28, "256 MiB"))
    peer_key, peer_name = "dlpack_torch_from_np", "torch.from_dlpack(ndarray)"
    for key, what in (("dlpack_cf_from_np", "chanflow.from_dlpack(ndarray)"),
                      ("dlpack_np_from_cf", "np.from_dlpack(chanflow.Tensor)"),
                      ("dlpack_torch_from_cf", "torch.from_dlpack(chanflow.Tensor)")):
        for n, label in sizes:
            add("python", f"{what}, float32 {label}", ("py_dlpack", f"{key}/{n}"),
                ("py_dlpack", f"{peer_key}/{n}"), peer_name, "ns")
        hi, lo = sizes[-1][0], sizes[0][0]
        add("python", f"{what}: time at 256 MiB / at 1 KiB",
            ("scale", "py_dlpack", f"{key}/{hi}", f"{key}/{lo}"),
            ("scale", "py_dlpack", f"{peer_key}/{hi}", f"{peer_key}/{lo}"),
            f"{peer_name}, same sizes", "x", ("abs<=", 2.0))
    return r


def samples(sources, spec, conv):
    """Samples for one side of a row, converted; or an Unavailable explaining why not."""
    kind = spec[0]
    if kind == "none":  # no peer: the target is absolute or against chanflow itself
        return Unavailable("")
    if kind == "na":
        return Unavailable(spec[1])
    if kind == "scale":
        _, src, hi, lo = spec
        if src == "go_pair":  # ("scale", "go_pair", procs, key): Go at GOMAXPROCS=procs / at 1
            a, b = sources.get(f"go:{hi}"), sources.get("go:1")
            hi = lo
        else:  # ("scale", source, key_hi, key_lo): both keys from one source
            a = b = sources.get(src)
        for s in (a, b):
            if isinstance(s, Unavailable):
                return s
        if hi not in a or lo not in b:
            why = a.get(hi + "!error") or b.get(lo + "!error")
            return Unavailable(why or f"{src}: missing {hi} or {lo}")
        return [statistics.median(a[hi]) / statistics.median(b[lo])]
    if kind == "tensor_match":
        _, pattern, counter = spec
        data = sources.get("cf_tensor")
        if isinstance(data, Unavailable):
            return data
        names = [k for k in data if k.endswith("#" + counter) and re.search(pattern, k)]
        if not names:
            return Unavailable(f"bench/tensor reports no benchmark matching {pattern} with {counter}")
        # Several sizes may match: take the largest (the 64 MiB / 1024^2 case of the target).
        best = max(names, key=lambda k: max([int(x) for x in re.findall(r"\d+", k)] or [0]))
        vals = data[best]
        return [conv(v) if conv else v for v in vals]
    data = sources.get(kind)
    if isinstance(data, Unavailable):
        return data
    if spec[1] + "!notreached" in data:
        return NotReached(data[spec[1] + "!notreached"])
    if spec[1] not in data:
        err = data.get(spec[1].split("#")[0] + "!error")
        return Unavailable(err or f"{kind} did not report {spec[1]}")
    return [conv(v) if conv else v for v in data[spec[1]]]


def spread(vals):
    if len(vals) < 2:
        return 0.0
    med = statistics.median(vals)
    return 100.0 * (max(vals) - min(vals)) / med if med else 0.0


def evaluate(sources, only):
    table = []
    for row in rows():
        if only and row["area"] != only:
            continue
        cf = samples(sources, row["cf"], row["conv"])
        peer = samples(sources, row["peer"], row["peer_conv"])
        entry = dict(area=row["area"], shape=row["shape"], peer=row["peer_name"], unit=row["unit"],
                     note=row["note"])
        for side, s in (("chanflow", cf), ("peer_value", peer)):
            if isinstance(s, Unavailable):
                entry[side] = None
                entry[side + "_why"] = str(s)
            else:
                entry[side] = statistics.median(s)
                entry[side + "_samples"] = s
                entry[side + "_spread_pct"] = spread(s)
        target = row["target"]
        entry["target"] = None if target is None else f"{target[0]} {target[1]:g}"
        if target and target[0] == "affine<=":  # chanflow <= a x peer + b (b in the row's unit)
            _, a, b = target
            entry["target"] = f"<= {a:g}x + {b:g} {row['unit']}"
            entry["ratio"] = (entry["chanflow"] / entry["peer_value"]
                              if entry["chanflow"] is not None and entry["peer_value"] else None)
            if entry["chanflow"] is None or entry["peer_value"] is None:
                entry["met"] = None
            else:
                entry["bound"] = a * entry["peer_value"] + b
                entry["met"] = entry["chanflow"] <= entry["bound"]
        elif target and target[0] == "abs<=":
            entry["ratio"] = (entry["chanflow"] / entry["peer_value"]
                              if entry["chanflow"] is not None and entry["peer_value"] else None)
            entry["target"] = f"<= {target[1]:g} {row['unit']}"
            entry["met"] = None if entry["chanflow"] is None else entry["chanflow"] <= target[1]
        else:
            if entry["chanflow"] is not None and entry["peer_value"] not in (None, 0):
                entry["ratio"] = entry["chanflow"] / entry["peer_value"]
            else:
                entry["ratio"] = None
            if target is None or entry["ratio"] is None:
                entry["met"] = None
            elif target[0] == "<=":
                entry["met"] = entry["ratio"] <= target[1]
            else:
                entry["met"] = entry["ratio"] >= target[1]
            if target is not None:
                entry["target"] = f"{target[0]} {target[1]:g}x"
        # A time to accuracy that one side never reached: the other side's reaching it decides.
        if target and entry["met"] is None:
            if isinstance(cf, NotReached) and not isinstance(peer, Unavailable):
                entry["met"] = False
            elif isinstance(peer, NotReached) and not isinstance(cf, Unavailable):
                entry["met"] = True
        table.append(entry)
    return table


# ------------------------------------------------------------------------------------------------
# Output

def fmt(v):
    if v is None:
        return "n/a"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}" if abs(v) < 1 else f"{v:.2f}"


def cell(entry, side):
    v = entry[side]
    if v is None:
        return "n/a"
    sp = entry.get(side + "_spread_pct", 0.0)
    n = len(entry.get(side + "_samples", []))
    return f"{fmt(v)} ±{sp:.0f}%" if n > 1 else fmt(v)


def verdict(entry):
    if entry["met"] is None:
        if entry["target"] is None:
            return "(no target)"
        return "n/a"
    return "met" if entry["met"] else "NOT met"


def render_table(table, markdown):
    head = ["area", "shape", "chanflow", "peer", "peer (which)", "unit", "ratio", "target",
            "result"]
    lines = []
    for e in table:
        lines.append([e["area"], e["shape"], cell(e, "chanflow"), cell(e, "peer_value"), e["peer"],
                      e["unit"], "n/a" if e["ratio"] is None else f"{e['ratio']:.2f}x",
                      e["target"] or "—", verdict(e)])
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(l) + " |" for l in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h)
              for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(l, widths)) for l in lines]
    return "\n".join(out)


def reasons(table):
    seen = []
    for e in table:
        for side in ("chanflow_why", "peer_value_why"):
            if e.get(side) and e[side] not in seen:
                seen.append(e[side])
    return seen


def chart(table, path):
    """Bar chart of ratio / target bound per row that has both (1.0 = exactly on target;
    below 1 is good for '<=' rows, so '>=' rows are inverted to read the same way)."""
    if shutil.which("gnuplot") is None:
        log("gnuplot not found: no chart")
        return None
    pts = []
    for e in table:
        if e["ratio"] is None or e["target"] is None or e["met"] is None:
            continue
        bound = float(re.search(r"[\d.]+", e["target"]).group())
        if "bound" in e:  # affine target: its bound depends on the peer's figure
            score = e["chanflow"] / e["bound"]
        elif e["target"].startswith("<= ") and not e["target"].endswith("x"):
            score = e["chanflow"] / bound  # absolute target
        elif e["target"].startswith(">="):
            score = bound / e["ratio"] if e["ratio"] > 0 else 100.0
        else:
            score = e["ratio"] / bound
        label = f"{e['shape']} vs {e['peer']}".replace('"', "'")
        pts.append((label, score, e["met"]))
    if not pts:
        return None
    dat = path.with_suffix(".dat")
    with open(dat, "w") as f:
        for i, (label, score, met) in enumerate(pts):
            f.write(f'{i} {score:.6g} {1 if met else 0} "{label}"\n')
    probe = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
    term = "pngcairo" if re.search(r"^\s*pngcairo\b", probe.stdout + probe.stderr, re.M) else "png"
    height = max(400, 22 * len(pts) + 120)
    # One horizontal bar per row from 1 (on target) to its score, on a log axis: green = met.
    script = f"""
set terminal {term} size 1600,{height} noenhanced
set output '{path}'
set title 'chanflow / peer, relative to target (left of 1 = met)'
set style fill solid 0.8
set logscale x 2
set xrange [0.03:32]
set yrange [-1:{len(pts)}]
set ytics scale 0 font ',8'
set grid xtics
set arrow from 1, graph 0 to 1, graph 1 nohead lw 2 lc rgb 'black'
unset key
plot '{dat}' using 2:1:($2 < 1 ? $2 : 1):($2 < 1 ? 1 : $2):($1 - 0.35):($1 + 0.35):($3 == 1 ? 0x2e7d32 : 0xc62828):ytic(4) with boxxy lc rgb variable
"""
    gp = path.with_suffix(".gp")
    gp.write_text(script)
    p = subprocess.run(["gnuplot", str(gp)], capture_output=True, text=True)
    if p.returncode != 0:
        log(f"gnuplot failed: {p.stderr}")
        return None
    return path


def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return dict(nproc=os.cpu_count(), cpu=cpu, kernel=platform.release(),
                compiler=subprocess.run(["c++", "--version"], capture_output=True,
                                        text=True).stdout.splitlines()[0])


def commit():
    p = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                       text=True)
    sha = p.stdout.strip() or "?"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return sha + ("-dirty" if dirty else "")


HISTORY_HEADER = """# chanflow benchmarks: history

Every run of `python3 scripts/bench.py`, appended as a dated section and never edited by hand, with
the notes recorded by hand beside them. The newest figures of each table are in
[benchmarks.md](benchmarks.md), "Current results".
"""

CURRENT = "## Current results"


def run_lines(meta):
    """The bullet lines describing a run: machine, load, peers, repetitions, targets."""
    m = meta["machine"]
    load = meta.get("load")
    lines = [f"- Machine: {m['nproc']} CPUs, {m['cpu']}, Linux {m['kernel']}; {m['compiler']}"]
    if load:
        lines.append(f"- Load: 1-minute load average {load['start']:.2f} at the start, "
                     f"{load['end']:.2f} at the end")
    lines += [
        f"- Peers: {'; '.join(f'{k}: {v}' for k, v in meta['versions'].items())}",
        f"- Repetitions per figure: {meta['reps']} (runtime shapes: each repetition = one warm-up"
        f" + {meta['iters']} timed run(s))" + (f", counts scaled by {meta['scale']}" if
                                               meta['scale'] != 1 else "")
        + (f"; only area '{meta['only']}'" if meta["only"] else ""),
    ]
    return lines


def not_met_line(rows):
    not_met = [e for e in rows if e["met"] is False]
    if not not_met:
        return None
    return "Not met: " + "; ".join(
        f"{e['shape']} vs {e['peer']} ({e['ratio']:.2f}x, target {e['target']})"
        if e["ratio"] is not None else
        f"{e['shape']} ({e['chanflow_why']})" if e["chanflow"] is None else
        f"{e['shape']} ({fmt(e['chanflow'])} {e['unit']})"
        for e in not_met) + "."


def dated_section(table, meta, png):
    """The run as a dated section of docs/benchmarks_history.md."""
    met = sum(1 for e in table if e["met"] is True)
    not_met = sum(1 for e in table if e["met"] is False)
    na = sum(1 for e in table if e["met"] is None and e["target"] is not None)
    parts = [
        "",
        f"## {meta['date']} — commit {meta['commit']}" + (" (quick run)" if meta["quick"] else ""),
        "",
        *run_lines(meta),
        *(fashion_line(meta) if any(e["area"] == "fashion" for e in table) else []),
        f"- Targets: {met} met, {not_met} not met, {na} not measurable yet.",
        "",
        render_table(table, markdown=True),
        "",
    ]
    if not_met_line(table):
        parts += [not_met_line(table), ""]
    why = reasons(table)
    if why:
        parts.append("Missing numbers: " + "; ".join(why) + ".")
        parts.append("")
    if png:
        parts.append(f"Chart: `{png.relative_to(ROOT)}` (build artefact, regenerated by each run).")
        parts.append("")
    return "\n".join(parts)


def fashion_line(meta):
    """The fashion area's own run sizes (its runs are whole trainings: not meta['reps'])."""
    f = meta.get("fashion")
    if not f:
        return []
    return [f"- Fashion area: {f['reps']} repetition(s) of the throughput runs (CNN: "
            f"{f['cnn_rows']} images), time to accuracy over up to {f['epochs'][0]} (MLP) / "
            f"{f['epochs'][1]} (CNN) epochs, one run each; contention runs once"]


def area_section(area, table, meta):
    """One area's rows of the run, as its section of docs/benchmarks.md's current results."""
    rows = [e for e in table if e["area"] == area]
    parts = [
        f"### {area}",
        "",
        f"Run of {meta['date']}, commit {meta['commit']}" + (" (quick run)" if meta["quick"] else "")
        + "; its dated section is in [benchmarks_history.md](benchmarks_history.md).",
        "",
        *run_lines(meta),
        *(fashion_line(meta) if area == "fashion" else []),
        "",
        render_table(rows, markdown=True),
        "",
    ]
    if not_met_line(rows):
        parts += [not_met_line(rows), ""]
    return "\n".join(parts)


def replace_area(doc, area, section):
    """doc with the current-results section of `area` replaced by `section` (added in AREAS order
    when the page has none yet). The page must have a "## Current results" section."""
    lines = doc.split("\n")
    try:
        top = lines.index(CURRENT)
    except ValueError:
        sys.exit(f"bench: {DOC} has no '{CURRENT}' section to update")
    end = next((i for i in range(top + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    heads = {lines[i][4:]: i for i in range(top + 1, end) if lines[i].startswith("### ")}
    new = section.rstrip("\n").split("\n") + [""]
    if area in heads:
        start = heads[area]
        stop = next((i for i in range(start + 1, end) if lines[i].startswith("### ")), end)
        return "\n".join(lines[:start] + new + lines[stop:])
    later = [heads[a] for a in AREAS[AREAS.index(area) + 1:] if a in heads]
    at = min(later) if later else end
    return "\n".join(lines[:at] + new + lines[at:])


def record_doc(table, meta, png):
    """Appends the run to docs/benchmarks_history.md and makes its figures the current results of
    their areas in docs/benchmarks.md."""
    HISTORY.parent.mkdir(parents=True, exist_ok=True)
    if not HISTORY.exists():
        HISTORY.write_text(HISTORY_HEADER)
    with open(HISTORY, "a") as f:
        f.write(dated_section(table, meta, png))
    doc = DOC.read_text()
    for area in AREAS:
        if any(e["area"] == area for e in table):
            doc = replace_area(doc, area, area_section(area, table, meta))
    DOC.write_text(doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 3 repetitions, 1/5 counts")
    ap.add_argument("--only", choices=AREAS, help="run only one area's rows")
    ap.add_argument("--reps", type=int, help="repetitions per figure (default 5; quick: 3)")
    ap.add_argument("--iters", type=int,
                    help="timed runs of each runtime shape per repetition (default 3; quick: 1)")
    ap.add_argument("--no-build", action="store_true", help="use the binaries already built")
    ap.add_argument("--no-doc", action="store_true",
                    help="do not record the run in docs/benchmarks.md and benchmarks_history.md")
    ap.add_argument("--fashion-reps", type=int,
                    help="repetitions of the fashion area's throughput runs (default 3; quick: 1)")
    ap.add_argument("--fashion-epochs", default=None,
                    help="MLP,CNN: epochs of the fashion area's time-to-accuracy runs (default "
                         "10,6; quick: 3,2)")
    ap.add_argument("--fashion-cnn-rows", type=int,
                    help="training images of the fashion area's CNN throughput and contention "
                         "runs (default 15000; quick: 10000)")
    ap.add_argument("--go-all", action="store_true",
                    help="run all of Go's 'Chan|Select' runtime benchmarks (slow), not only "
                         "those in the table")
    args = ap.parse_args()
    args.reps = args.reps or (3 if args.quick else 5)
    args.iters = args.iters or (1 if args.quick else 3)
    args.scale = 0.2 if args.quick else 1.0
    args.mem_reps = 2 if args.quick else 3
    args.min_time = 0.1 if args.quick else 0.5
    args.fashion_reps = args.fashion_reps or (1 if args.quick else 3)
    args.fashion_epochs = tuple(int(x) for x in (args.fashion_epochs or
                                                 ("3,2" if args.quick else "10,6")).split(","))
    if len(args.fashion_epochs) != 2 or min(args.fashion_epochs) < 1:
        ap.error("--fashion-epochs takes MLP,CNN: two positive integers")
    args.fashion_cnn_rows = args.fashion_cnn_rows or (10000 if args.quick else 15000)

    # The peers and gnuplot are in bootstrap's --dev set (the README's set has none of them).
    subprocess.run([str(ROOT / "scripts" / "bootstrap.sh"), "--dev"], check=True)
    OUT.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()[0]
    sources = Sources(args)
    table = evaluate(sources, args.only)
    load_end = os.getloadavg()[0]
    print(render_table(table, markdown=False))
    why = reasons(table)
    if why:
        print("\nn/a because: " + "\n  ".join([""] + why))
    met = sum(1 for e in table if e["met"] is True)
    not_met = sum(1 for e in table if e["met"] is False)
    print(f"\ntargets: {met} met, {not_met} not met, "
          f"{sum(1 for e in table if e['met'] is None and e['target'])} not measurable")

    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                commit=commit(), machine=machine(), versions=sources.versions, reps=args.reps,
                iters=args.iters,
                scale=args.scale, quick=args.quick, only=args.only,
                load=dict(start=load_start, end=load_end),
                fashion=None if args.only not in (None, "fashion") else dict(
                    reps=args.fashion_reps, epochs=args.fashion_epochs,
                    cnn_rows=args.fashion_cnn_rows))
    (OUT / "results.json").write_text(json.dumps(dict(meta=meta, rows=table), indent=1))
    png = chart(table, OUT / "results.png")
    log(f"wrote {OUT / 'results.json'}" + (f" and {png}" if png else ""))
    if not args.no_doc:
        record_doc(table, meta, png)
        log(f"recorded in {DOC} (current results) and {HISTORY}")


if __name__ == "__main__":
    main()
