"""Python callables as graph ops (Graph.apply): correct results on a GoMachine with 1, 2 and 4
workers and on a TapeMachine; several Python ops in parallel branches; they run on one OS thread
that is not the caller's while the node's green thread parks (its worker runs the other nodes
meanwhile); an exception in one fails the run with MachineError whose __cause__ is that exception;
results of the wrong shape, dtype or type; the run's context; Ctrl-C; the callable released with
its graph."""
import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import weakref

import numpy as np
import pytest

import chanflow as cf

WORKERS = [1, 2, 4]


def machines():
    return [("go%d" % w, lambda g, w=w: cf.GoMachine(g, workers=w)) for w in WORKERS] + [
        ("tape", cf.TapeMachine)]


@pytest.mark.parametrize("workers", WORKERS)
def test_python_ops_in_parallel_branches(workers):
    g = cf.Graph()
    x = g.input("x", "float64", (8,))
    y = g.input("y", "float64", (8,))
    threads, calls = [], []

    def branch(k):
        def fn(a, b):
            threads.append(threading.get_ident())
            calls.append(k)
            return np.asarray(a) * k + np.sin(np.asarray(b))
        return fn

    branches = [g.apply(branch(k), [x, y], (8,), "float64", name="branch%d" % k) for k in range(6)]
    total = branches[0]
    for b in branches[1:]:
        total = total + cf.tanh(b)
    listy = g.apply(lambda a: [1, 2, 3, 4, 5, 6, 7, 8], [x], (8,), "float64", name="listy")
    with cf.GoMachine(g, workers=workers) as m:
        for run in range(4):
            a, b = np.random.default_rng(run).standard_normal((2, 8))
            m.run({x: a, y: b})
            want = a * 0 + np.sin(b)
            for k in range(1, 6):
                want = want + np.tanh(a * k + np.sin(b))
            np.testing.assert_allclose(m.result(total).numpy(), want, rtol=1e-12)
            np.testing.assert_array_equal(m.result(listy).numpy(), np.arange(1, 9))
    assert sorted(calls) == sorted(list(range(6)) * 4)
    # Every Python op ran on the one Python-callback thread, never on the caller's.
    assert len(set(threads)) == 1 and threads[0] != threading.get_ident()


def test_the_callback_thread_is_one_for_all_machines_and_the_tape_runs_inline():
    g = cf.Graph()
    x = g.input("x", "float64", ())
    seen = {}

    def where(a):
        seen.setdefault(kind, set()).add(threading.get_ident())
        return a

    p = g.apply(where, [x], (), "float64")
    for kind, make in machines():
        m = make(g)
        m.run({x: np.float64(1)})
        assert m.result(p).numpy().item() == 1.0
    go_threads = set().union(*(seen["go%d" % w] for w in WORKERS))
    assert len(go_threads) == 1 and threading.get_ident() not in go_threads
    assert seen["tape"] == {threading.get_ident()}  # a TapeMachine calls it on its own thread


PARKS_SCRIPT = """
import threading, time
import numpy as np
import chanflow as cf

# Two machines on the process's shared scheduler, which has one worker here (CHANFLOW_WORKERS=1).
a = cf.Graph()
ax = a.input("x", "float64", (4,))
started, release = threading.Event(), threading.Event()

def wait_for_b(v):
    started.set()
    if not release.wait(30):  # only machine B's run, on the same single worker, sets it
        raise RuntimeError("the worker was not free while this Python op ran")
    return np.asarray(v) * 2

ay = a.apply(wait_for_b, [ax], (4,), "float64")
b = cf.Graph()
bx = b.input("x", "float64", (4,))
by = cf.tanh(bx) + 1.0
ma, mb = cf.GoMachine(a), cf.GoMachine(b)

def run_b():
    assert started.wait(30)
    mb.run({bx: np.zeros(4)})  # needs the worker that A's parked green thread is not holding
    assert mb.result(by).numpy().tolist() == [1.0] * 4
    release.set()

t = threading.Thread(target=run_b)
t.start()
ma.run({ax: np.arange(4.0)})
t.join()
assert ma.result(ay).numpy().tolist() == [0.0, 2.0, 4.0, 6.0]
print("ok", flush=True)
"""


def test_the_green_thread_parks_while_python_runs():
    """While a Python op runs (on the callback thread), its green thread is parked, not holding
    its worker: with a single worker, a second machine runs to completion on that worker while
    the op waits for it (the op would wait in vain if the worker were blocked). In a child process
    whose shared scheduler has one worker."""
    env = dict(os.environ, CHANFLOW_WORKERS="1")
    out = subprocess.run([sys.executable, "-c", PARKS_SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("kind,make", machines())
def test_an_exception_in_a_python_op_is_the_machine_errors_cause(kind, make):
    g = cf.Graph()
    x = g.input("x", "float64", (3,))
    raised = []

    def picky(a):
        a = np.asarray(a)
        if (a < 0).any():
            e = ValueError("negative input %r" % a.tolist())
            raised.append(e)
            raise e
        return np.sqrt(a)

    p = g.apply(picky, [x], (3,), "float64", name="picky")
    other = cf.exp(x)
    y = p + other
    m = make(g)
    with pytest.raises(cf.MachineError) as info:
        m.run({x: np.array([1.0, -1.0, 4.0])})
    e = info.value
    assert e.__cause__ is raised[-1]
    assert e.machine == ("TapeMachine" if kind == "tape" else "GoMachine")
    assert str(e).startswith(e.machine + ": 1 node(s) failed")
    [(node_id, name, message)] = e.failures
    assert (node_id, name) == (p.id, "picky")
    assert "ValueError: negative input [1.0, -1.0, 4.0]" in message and "in picky" in message
    m.run({x: np.array([1.0, 0.0, 4.0])})  # the machine is reusable
    np.testing.assert_allclose(m.result(y).numpy(), np.sqrt([1, 0, 4]) + np.exp([1, 0, 4]))


@pytest.mark.parametrize("kind,make", machines())
def test_a_python_op_result_must_have_the_declared_shape_dtype_and_type(kind, make):
    g = cf.Graph()
    x = g.input("x", "float32", (2,))
    cases = [(lambda a: np.zeros(3, np.float32), cf.ShapeError.__name__, "shape"),
             (lambda a: np.zeros(2, np.float64), cf.TypeError.__name__, "float64"),
             (lambda a: "abc", cf.TypeError.__name__, "is not numeric"),
             (lambda a: None, cf.TypeError.__name__, "got None"),
             (lambda a: [0.5, 1.5j], cf.TypeError.__name__, "is not numeric")]
    for k, (fn, _, needle) in enumerate(cases):
        p = g.apply(fn, [x], (2,), "float32", name="bad%d" % k)
        mg = cf.Graph()  # one failing op per graph
        mx = mg.input("x", "float32", (2,))
        q = mg.apply(fn, [mx], (2,), "float32", name="bad")
        m = make(mg)
        with pytest.raises(cf.MachineError) as info:
            m.run({mx: np.ones(2, np.float32)})
        [(node_id, name, message)] = info.value.failures
        assert (node_id, name) == (q.id, "bad") and needle in message, message
        assert info.value.__cause__ is None
        assert p.name == "bad%d" % k
    ok = cf.Graph()
    ox = ok.input("x", "float32", (2,))
    same = ok.apply(lambda a: a, [ox], (2,), "float32")  # an operand Tensor back as it is
    ints = ok.apply(lambda a: [1, 2], [ox], (2,), "float32")  # a list takes the declared dtype
    m = make(ok)
    m.run({ox: np.array([3, 4], np.float32)})
    np.testing.assert_array_equal(m.result(same).numpy(), [3, 4])
    assert m.result(ints).dtype == np.float32


@pytest.mark.parametrize("kind,make", machines())
def test_a_python_op_sees_its_runs_context(kind, make):
    g = cf.Graph()
    x = g.input("x", "float64", ())
    seen = []

    def op(ctx, a):
        seen.append((type(ctx).__name__, ctx.cancelled, ctx.check()))
        return a

    p = g.apply(op, [x], (), "float64", context=True)
    m = make(g)
    m.run({x: np.float64(2)}, timeout=60)
    assert seen == [("OpContext", False, None)] and m.result(p).numpy().item() == 2.0


def test_the_python_callable_is_released_with_its_graph():
    class Op:
        def __call__(self, a):
            return a

    op = Op()
    ref = weakref.ref(op)
    g = cf.Graph()
    x = g.input("x", "float64", ())
    y = g.apply(op, [x], (), "float64")
    for m in (cf.GoMachine(g, workers=2), cf.TapeMachine(g)):
        m.run({x: np.float64(1)})
        m.close()
    del op, m, g, x, y
    gc.collect()
    assert ref() is None


def test_ctrl_c_stops_a_run_waiting_for_a_python_op():
    """SIGINT while a GoMachine (the op on the callback thread) or a TapeMachine (the op on the
    main thread itself) waits in a Python op: the run stops, KeyboardInterrupt is raised, and the
    process stays usable. In a child process; it says "ready" once the op runs."""
    script = textwrap.dedent("""
        import sys, time
        import numpy as np
        import chanflow as cf
        g = cf.Graph()
        x = g.input("x", "float64", ())
        def wait(ctx, a):
            print("ready", flush=True)
            end = time.monotonic() + 60
            while not ctx.cancelled and time.monotonic() < end:
                time.sleep(0.002)
            ctx.check()
            return a
        y = g.apply(wait, [x], (), "float64", context=True)
        z = x + 1.0
        for m in (cf.GoMachine(g, workers=2), cf.TapeMachine(g)):
            start = time.monotonic()
            try:
                m.run({x: np.float64(1)})
                print("finished?!", flush=True)
            except KeyboardInterrupt:
                print("interrupted %.3f" % (time.monotonic() - start), flush=True)
        quick = cf.GoMachine(cf.Graph())
        quick.run()
        print("usable", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    lines = []
    try:
        for _ in range(2):
            line = proc.stdout.readline().strip()
            assert line == "ready", (line, proc.stderr.read() if not line else "")
            proc.send_signal(signal.SIGINT)
            line = proc.stdout.readline().strip()
            lines.append(line)
            assert line.startswith("interrupted"), (line, lines)
        assert proc.stdout.readline().strip() == "usable"
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert all(float(line.split()[1]) < 30 for line in lines)


def test_a_python_op_may_run_machines_even_a_go_machine_with_python_ops():
    """Inside a Python op that a GoMachine runs (on a callback thread): a GoMachine without
    Python ops, a TapeMachine with them, and a GoMachine with them (its ops run on another
    callback thread while this one is blocked in the inner run) all work."""
    plain = cf.Graph()
    px = plain.input("x", "float64", ())
    py_ = px * 3.0
    with_py = cf.Graph()
    wx = with_py.input("x", "float64", ())
    wy = with_py.apply(lambda a: np.asarray(a) + 1, [wx], (), "float64")
    inner_plain, inner_tape, inner_go = cf.GoMachine(plain), cf.TapeMachine(with_py), \
        cf.GoMachine(with_py)

    def nested(a):
        v = np.asarray(a)
        inner_plain.run({px: v})
        inner_tape.run({wx: v})
        inner_go.run({wx: v + 10}, timeout=60)
        return (inner_plain.result(py_).numpy() + inner_tape.result(wy).numpy() +
                inner_go.result(wy).numpy())

    g = cf.Graph()
    x = g.input("x", "float64", ())
    ok = g.apply(nested, [x], (), "float64")
    m = cf.GoMachine(g, workers=2)
    m.run({x: np.float64(2)}, timeout=60)
    assert m.result(ok).numpy().item() == 2 * 3 + (2 + 1) + (12 + 1)
    inner_go.run({wx: np.float64(1)})  # from this thread too
    assert inner_go.result(wy).numpy().item() == 2.0
