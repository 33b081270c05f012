#!/usr/bin/python3
"""chanflow's Python side for scripts/bench.py: per-call times of the Python API, printed as
RESULT lines (``RESULT <key> ns <one value per repetition>``) like the peers' programs.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python/python_bench.py exec \\
        --reps 5 --min-time 0.5
    ... python_bench.py dlpack --reps 5 --min-time 0.1
    ... python_bench.py graph --reps 5 --min-time 0.5
    ... python_bench.py chan --reps 5 --min-time 0.5
    ... python_bench.py fluid-book --reps 5 --min-time 0.5
    ... python_bench.py write-program bench/exec/ten_ops.pbtxt

``exec``: ``Executor.run`` of the 10-op program bench/exec/ten_ops.pbtxt (fill_constant and nine
elementwise_adds on float32[4]; feed ``x``, fetch ``z8``), warm, through the native API
(``chanflow.Executor.run`` on the program loaded from that file) and through the Fluid API
(``fluid.Executor.run`` on the same program built with ``chanflow.fluid``, which converts it to
its native form once and reuses it). The C++ side is ``BM_RunTenOps`` in bench/exec/exec_bench.cc,
the same file, feed and fetch. Keys ``py_native_run10`` and ``py_fluid_run10``.

``dlpack``: the DLPack hand-off, for array sizes 1 KiB to 256 MiB: ``chanflow.from_dlpack`` of a
NumPy array, ``np.from_dlpack`` and ``torch.from_dlpack`` of a chanflow tensor (one the executor
allocated), and PyTorch's own ``torch.from_dlpack`` of a NumPy array as the peer. Keys
``dlpack_<what>/<bytes>``. Without PyTorch the torch keys are reported as ``UNAVAILABLE <key>
<reason>``.

``graph``: ``GoMachine.run`` + ``result`` of a 10-op graph, warm, through the native API: input
``x`` (float32[4]), a constant ``one`` (float32[4]) and nine adds ``z_k = z_{k-1} + one``, built
by chanflow's graph op functions exactly as ``BM_GoMachineRunTenOps`` (bench/graph/graph_bench.cc)
builds it in C++; bind ``x`` = 0, read ``z8`` (= 9), on the process's default scheduler. Key
``py_graph_run10``; ``py_tape_run10`` is the same on a ``TapeMachine`` (no thread hand-off: with
``BM_TapeMachineRunTenOps``, the binding's own cost).

``chan``: a round trip between two Python threads: one sends a value on a channel, the other
receives it and sends it back on a second channel, and the first receives it (a ping-pong), over
two chanflow channels (unbuffered and of capacity 1) and over two ``queue.Queue`` (the peer: the
same ping-pong with ``put``/``get``). Measured with the first thread being Python's main thread
(where chanflow's blocking calls also listen for Ctrl-C) and with both threads started by
``threading``. Keys ``chan_pingpong_<cf0|cf1|queue>_<main|threads>``.

``fluid-book``: training steps of the models of Paddle's book test test_recognize_digits.py, built
with ``chanflow.fluid`` and run by ``fluid.Executor.run``: ``mlp`` (784 -> fc 200 tanh -> fc 200
tanh -> fc 10 softmax) and ``cnn`` (simple_img_conv_pool 20 5x5, pool 2, relu -> batch_norm ->
simple_img_conv_pool 50 5x5, pool 2, relu -> fc 10 softmax), each with cross_entropy, mean and
Adam (learning rate 0.001; the book's LARS weight decay and accuracy op left out, as in the
PyTorch peer bench/peers/fluid_book_torch.py), at batch 64 on synthetic Fashion-MNIST-shaped
data (float32 1x28x28 in [0, 1), int64 labels), fetching nothing. Per model and repetition:
``book_<m>_run``, one ``Executor.run`` with a prepared ``{name: ndarray}`` feed;
``book_<m>_feeder_run``, ``DataFeeder.feed`` of 64 (784-float32 array, int label) samples, as
paddle.dataset readers yield them, then that run; ``book_<m>_feeder``, ``DataFeeder.feed``
alone; ``book_<m>_native_run``, the same program through the native ``chanflow.Executor.run``
(the program ``fluid`` converted, its scope, the same feed); ``book_<m>_wrapper``, the Fluid
wrapper's own Python cost per ``fluid.Executor.run`` (its argument checks, feed conversion and
scope lookup), timed directly with the native executor replaced by a stub that runs nothing (the
difference of the two runs' times is smaller than their noise). Each value is the mean over at least ``--min-time`` seconds
and 20 steps, after 5 warm-up steps; the four are interleaved, and the loss must fall over the
warm-up and timed steps (else the program exits with an error).

``write-program``: writes the 10-op program as chanflow.fluid builds it (how ten_ops.pbtxt was
made; ``exec`` checks that the file and the Fluid program are still the same program).

Every value is the mean time of one call over a repetition of at least ``--min-time`` seconds
(the statistic Google Benchmark reports for the C++ side); repetitions, and within one the
shapes measured, are interleaved so that a busy machine's load falls on all of them alike.
"""

import argparse
import platform
import queue
import sys
import threading
import time

import numpy as np

import chanflow
from chanflow import fluid
from chanflow.fluid import executor as fluid_executor
from chanflow.fluid import layers

SIZES = (1 << 10, 1 << 16, 1 << 22, 1 << 28)  # bytes: 1 KiB, 64 KiB, 4 MiB, 256 MiB
FEED_SHAPE = (4,)
FETCH = "z8"
EXPECTED = 9.0  # x = 0 plus nine additions of one
PROGRAM_HEADER = """\
# The 10-op program of the Python-vs-C++ Executor.run benchmark: feed x (float32[4]), fetch z8.
# Written by `bench/python/python_bench.py write-program` from its chanflow.fluid code; read by
# BM_RunTenOps (bench/exec/exec_bench.cc) and python_bench.py exec, which checks it is still the
# program that code builds.
"""


def ten_op_program():
    """The 10-op program as Fluid code writes it: a fed variable, a constant, nine additions."""
    program = fluid.Program()
    with fluid.program_guard(program):
        block = program.global_block()
        x = block.create_var(name="x", shape=list(FEED_SHAPE), dtype="float32")
        one = block.create_var(name="one", shape=list(FEED_SHAPE), dtype="float32")
        layers.fill_constant(shape=list(FEED_SHAPE), dtype="float32", value=1.0, out=one)
        z = x
        for k in range(9):
            z = layers.elementwise_add(z, one, name="z%d" % k)
    assert len(block.ops) == 10 and z.name == FETCH
    return program, z


def timed(batch, min_time):
    """Mean seconds per call of ``batch(n)`` (which makes n calls), over at least min_time."""
    n, calls, start = 64, 0, time.perf_counter()
    while True:
        batch(n)
        calls += n
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return elapsed / calls
        n = min(n * 2, 4096)


def result(key, values):
    print("RESULT %s ns %s" % (key, " ".join("%.2f" % (v * 1e9) for v in values)), flush=True)


def bench_exec(args):
    native_program = chanflow.Program.load(args.program)
    fluid_program, z = ten_op_program()
    if fluid_program._native_program() != native_program:
        sys.exit("python_bench: %s is not the program chanflow.fluid builds (regenerate it with "
                 "'python_bench.py write-program %s')" % (args.program, args.program))
    x = np.zeros(FEED_SHAPE, dtype=np.float32)
    ex = chanflow.Executor()
    fluid_exe = fluid.Executor(fluid.CPUPlace())
    native_feed, native_fetch = {"x": x}, [FETCH]
    fluid_feed, fluid_fetch = {"x": x}, [z]

    def native(n):
        run = ex.run
        for _ in range(n):
            run(native_program, native_feed, native_fetch)

    def fluid_api(n):
        run = fluid_exe.run
        for _ in range(n):
            run(fluid_program, feed=fluid_feed, fetch_list=fluid_fetch)

    got_native = ex.run(native_program, native_feed, native_fetch)[0].numpy()
    got_fluid = fluid_exe.run(fluid_program, feed=fluid_feed, fetch_list=fluid_fetch)[0]
    for what, got in (("chanflow.Executor", got_native), ("fluid.Executor", got_fluid)):
        if got.tolist() != [EXPECTED] * FEED_SHAPE[0]:
            sys.exit("python_bench: %s.run fetched %r, expected %r" % (what, got, EXPECTED))
    for fn in (native, fluid_api):  # warm: the first runs prepare the program
        timed(fn, args.min_time / 5)
    samples = {"py_native_run10": [], "py_fluid_run10": []}
    for _ in range(args.reps):
        samples["py_native_run10"].append(timed(native, args.min_time))
        samples["py_fluid_run10"].append(timed(fluid_api, args.min_time))
    for key, values in samples.items():
        result(key, values)


def ten_op_graph():
    """The 10-op graph of BM_GoMachineRunTenOps: x, a constant one, nine additions."""
    g = chanflow.Graph()
    x = g.input("x", "float32", FEED_SHAPE)
    one = g.constant(np.ones(FEED_SHAPE, np.float32), name="one")
    z = x
    for _ in range(9):
        z = z + one
    assert len(g) == 11 and z.op == "add"
    return g, x, z


def bench_graph(args):
    g, x, z = ten_op_graph()
    bindings = {x: np.zeros(FEED_SHAPE, dtype=np.float32)}
    machines = {"py_graph_run10": chanflow.GoMachine(g), "py_tape_run10": chanflow.TapeMachine(g)}

    def loop(machine):
        def batch(n):
            run, result = machine.run, machine.result
            for _ in range(n):
                run(bindings)
                result(z)
        return batch

    for key, machine in machines.items():
        machine.run(bindings)
        got = machine.result(z).numpy()
        if got.tolist() != [EXPECTED] * FEED_SHAPE[0]:
            sys.exit("python_bench: %s gave %r, expected %r" % (key, got, EXPECTED))
    batches = {key: loop(machine) for key, machine in machines.items()}
    for batch in batches.values():  # warm
        timed(batch, args.min_time / 5)
    samples = {key: [] for key in batches}
    for _ in range(args.reps):
        for key, batch in batches.items():
            samples[key].append(timed(batch, args.min_time))
    for key, values in samples.items():
        result(key, values)


def chanflow_tensor(nbytes):
    """A float32 chanflow tensor of nbytes that chanflow's executor allocated (fill_constant)."""
    program = fluid.Program()
    with fluid.program_guard(program):
        t = layers.fill_constant(shape=[nbytes // 4], dtype="float32", value=1.0)
    (out,) = fluid.Executor(fluid.CPUPlace()).run(program, fetch_list=[t], return_numpy=False)
    return out


def bench_dlpack(args):
    try:
        import torch
    except ImportError as e:
        torch = None
        torch_missing = "PyTorch is not installed (python3-torch): %s" % e
    shapes = {}  # key prefix -> (batch function factory)
    arrays = {n: np.ones(n // 4, dtype=np.float32) for n in SIZES}
    tensors = {n: chanflow_tensor(n) for n in SIZES}

    def loop(fn, obj):
        def batch(n):
            for _ in range(n):
                fn(obj)
        return batch

    shapes["dlpack_cf_from_np"] = lambda n: loop(chanflow.from_dlpack, arrays[n])
    shapes["dlpack_np_from_cf"] = lambda n: loop(np.from_dlpack, tensors[n])
    if torch is not None:
        shapes["dlpack_torch_from_cf"] = lambda n: loop(torch.from_dlpack, tensors[n])
        shapes["dlpack_torch_from_np"] = lambda n: loop(torch.from_dlpack, arrays[n])
    # Zero-copy means shared memory: check each hand-off once before timing it.
    for n in SIZES:
        a, t = arrays[n], tensors[n]
        checks = [("chanflow.from_dlpack(ndarray)", chanflow.from_dlpack(a).numpy(), a),
                  ("np.from_dlpack(chanflow.Tensor)", np.from_dlpack(t), t.numpy())]
        if torch is not None:
            checks += [("torch.from_dlpack(chanflow.Tensor)", torch.from_dlpack(t).numpy(),
                        t.numpy()),
                       ("torch.from_dlpack(ndarray)", torch.from_dlpack(a).numpy(), a)]
        for what, got, source in checks:
            if got.ctypes.data != source.ctypes.data or got.nbytes != n:
                sys.exit("python_bench: %s of %d bytes did not share the source's memory"
                         % (what, n))
    batches = {(key, n): make(n) for key, make in shapes.items() for n in SIZES}
    for batch in batches.values():  # warm
        timed(batch, args.min_time / 10)
    samples = {key: [] for key in batches}
    for r in range(args.reps):
        order = list(batches) if r % 2 == 0 else list(reversed(batches))
        for key in order:
            samples[key].append(timed(batches[key], args.min_time))
    for (key, n), values in samples.items():
        result("%s/%d" % (key, n), values)
    if torch is None:
        for key in ("dlpack_torch_from_cf", "dlpack_torch_from_np"):
            for n in SIZES:
                print("UNAVAILABLE %s/%d %s" % (key, n, torch_missing), flush=True)


PINGPONG_SIDES = {
    # name -> (make the two channels, send, receive, stop the echo thread)
    "cf0": (lambda: (chanflow.make_chan(0), chanflow.make_chan(0)),
            lambda ch, v: ch.send(v), lambda ch: ch.recv()[0], lambda ch: ch.close()),
    "cf1": (lambda: (chanflow.make_chan(1), chanflow.make_chan(1)),
            lambda ch, v: ch.send(v), lambda ch: ch.recv()[0], lambda ch: ch.close()),
    "queue": (lambda: (queue.Queue(), queue.Queue()),
              lambda q, v: q.put(v), lambda q: q.get(), lambda q: q.put(None)),
}


def pingpong(kind):
    """(batch(n): n round trips from the calling thread, stop()) for one kind of channel. The
    batch uses the bound methods directly, as a program would write the loop."""
    make, _, _, stop = PINGPONG_SIDES[kind]
    ping, pong = make()
    if kind == "queue":
        def echo():
            get, put = ping.get, pong.put
            while True:
                v = get()
                if v is None:
                    return
                put(v)

        def batch(n):
            put, get = ping.put, pong.get
            for i in range(n):
                put(i)
                if get() != i:
                    sys.exit("python_bench: queue ping-pong lost a message")
    else:
        def echo():
            send = pong.send
            for v in ping:
                send(v)

        def batch(n):
            send, recv = ping.send, pong.recv
            for i in range(n):
                send(i)
                if recv()[0] != i:
                    sys.exit("python_bench: channel ping-pong lost a message")
    thread = threading.Thread(target=echo, daemon=True)
    thread.start()

    def finish():
        stop(ping)
        thread.join()
    return batch, finish


def bench_chan(args):
    keys = ["chan_pingpong_%s_%s" % (kind, where) for where in ("main", "threads")
            for kind in PINGPONG_SIDES]
    samples = {key: [] for key in keys}

    def measure(key, min_time):
        kind, where = key.split("_")[2:]
        batch, finish = pingpong(kind)
        try:
            if where == "main":
                return timed(batch, min_time)
            out = []
            t = threading.Thread(target=lambda: out.append(timed(batch, min_time)))
            t.start()
            t.join()
            return out[0]
        finally:
            finish()

    for key in keys:  # warm
        measure(key, args.min_time / 10)
    for r in range(args.reps):
        for key in (keys if r % 2 == 0 else list(reversed(keys))):
            samples[key].append(measure(key, args.min_time))
    for key, values in samples.items():
        result(key, values)


BOOK_BATCH = 64


class _NoRun:
    """A native executor that runs nothing: fluid.Executor.run's own cost, alone."""

    @staticmethod
    def run(program, feed=None, fetch=None, timeout=None, scope=None):
        return []


def book_program(kind):
    """The book model ``kind`` ("mlp" or "cnn") with its Adam step: (main, startup, loss)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        img = layers.data(name="img", shape=[1, 28, 28], dtype="float32")
        label = layers.data(name="label", shape=[1], dtype="int64")
        if kind == "mlp":
            hidden = layers.fc(input=img, size=200, act="tanh")
            hidden = layers.fc(input=hidden, size=200, act="tanh")
        else:
            hidden = fluid.nets.simple_img_conv_pool(
                input=img, filter_size=5, num_filters=20, pool_size=2, pool_stride=2, act="relu")
            hidden = layers.batch_norm(hidden)
            hidden = fluid.nets.simple_img_conv_pool(
                input=hidden, filter_size=5, num_filters=50, pool_size=2, pool_stride=2,
                act="relu")
        prediction = layers.fc(input=hidden, size=10, act="softmax")
        loss = layers.mean(layers.cross_entropy(input=prediction, label=label))
        fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)
    return main, startup, img, label, loss


def bench_fluid_book(args):
    rng = np.random.default_rng(0)
    images = rng.random((BOOK_BATCH, 784), dtype=np.float32)
    labels = rng.integers(0, 10, BOOK_BATCH)
    samples = [(images[i], int(labels[i])) for i in range(BOOK_BATCH)]
    feed = {"img": images.reshape(BOOK_BATCH, 1, 28, 28),
            "label": labels.astype(np.int64).reshape(BOOK_BATCH, 1)}
    models = {}
    for kind in ("mlp", "cnn"):
        main, startup, img, label, loss = book_program(kind)
        exe = fluid.Executor(fluid.CPUPlace())
        scope = fluid.core.Scope()
        exe.run(startup, scope=scope)
        feeder = fluid.DataFeeder(feed_list=[img, label], place=fluid.CPUPlace(), program=main)
        first = float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0])
        native_program, native_scope = main._native_program(), scope.native
        native_exe = chanflow.Executor()

        def run(n, exe=exe, main=main, scope=scope):
            for _ in range(n):
                exe.run(main, feed=feed, scope=scope)

        def feeder_run(n, exe=exe, main=main, scope=scope, feeder=feeder):
            for _ in range(n):
                exe.run(main, feed=feeder.feed(samples), scope=scope)

        def feeder_only(n, feeder=feeder):
            for _ in range(n):
                feeder.feed(samples)

        def native_run(n, native_exe=native_exe, program=native_program, scope=native_scope):
            for _ in range(n):
                native_exe.run(program, feed=feed, fetch=[], scope=scope)

        def wrapper(n, exe=exe, main=main, scope=scope):
            real = fluid_executor._native_executor
            fluid_executor._native_executor = lambda: _NoRun
            try:
                for _ in range(n):
                    exe.run(main, feed=feed, scope=scope)
            finally:
                fluid_executor._native_executor = real

        models[kind] = dict(fns=(("run", run), ("feeder_run", feeder_run),
                                 ("feeder", feeder_only), ("native_run", native_run),
                                 ("wrapper", wrapper)),
                            first=first, loss=loss, exe=exe, main=main, scope=scope)

    def steps(fn, min_time):
        fn(5)
        n, t0 = 0, time.perf_counter()
        while True:
            fn(4)
            n += 4
            elapsed = time.perf_counter() - t0
            if elapsed >= min_time and n >= 20:
                return elapsed / n

    values = {}
    for _ in range(args.reps):
        for kind, m in models.items():
            for what, fn in m["fns"]:
                values.setdefault("book_%s_%s" % (kind, what), []).append(
                    steps(fn, args.min_time))
    for kind, m in models.items():
        last = float(m["exe"].run(m["main"], feed=feed, fetch_list=[m["loss"]],
                                  scope=m["scope"])[0])
        if not last < m["first"]:
            sys.exit("python_bench: fluid-book %s: the loss did not fall (%g -> %g)"
                     % (kind, m["first"], last))
        print("# %s loss %.4f -> %.4f" % (kind, m["first"], last), flush=True)
    for key, v in values.items():
        result(key, v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("exec", "dlpack", "graph", "chan", "fluid-book",
                                         "write-program"))
    ap.add_argument("path", nargs="?", help="write-program: the file to write")
    ap.add_argument("--reps", type=int, default=5, help="repetitions (one value each)")
    ap.add_argument("--min-time", type=float, default=0.5,
                    help="seconds each repetition of each shape runs at least")
    ap.add_argument("--program", help="exec: the 10-op program file (bench/exec/ten_ops.pbtxt)")
    args = ap.parse_args()
    if args.mode == "write-program":
        if not args.path:
            ap.error("write-program needs the path to write")
        with open(args.path, "w") as f:
            f.write(PROGRAM_HEADER + ten_op_program()[0].to_string())
        return
    if args.mode == "exec" and not args.program:
        ap.error("exec needs --program")
    if args.reps < 1 or args.min_time <= 0:
        ap.error("--reps must be >= 1 and --min-time > 0")
    versions = "%s, numpy %s" % (platform.python_version(), np.__version__)
    if args.mode == "dlpack":
        try:
            import torch
            versions += ", torch %s" % torch.__version__
        except ImportError:
            versions += ", no torch"
    print("# python3 %s" % versions, flush=True)
    {"exec": bench_exec, "dlpack": bench_dlpack, "graph": bench_graph, "chan": bench_chan,
     "fluid-book": bench_fluid_book}[
        args.mode](args)


if __name__ == "__main__":
    main()
