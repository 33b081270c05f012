"""The Python-callback threads (python/src/callback.cc): a Python function called from a green
thread runs on one of them; when every one is blocked in chanflow (a callable that calls, from a
green thread, another Python function; one that runs a GoMachine with a Python op), queued calls go
to another one, so nested calls work. A genuine deadlock inside a callable is still DeadlockError,
and leaves the process usable: the next call returns, and the interpreter exits. Scripts that
could hang run in a child interpreter with a time limit."""
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import chanflow as cf

call = cf.get_global_func("runtime.call_in_green_thread")


def run_child(body, limit=60):
    """Runs `body` in a fresh interpreter; it must print 'done' and exit with status 0 within
    `limit` seconds (an exit that hangs fails)."""
    script = textwrap.dedent("""
        import threading
        import numpy as np
        import chanflow as cf
        call = cf.get_global_func("runtime.call_in_green_thread")
    """) + textwrap.dedent(body) + "\nprint('done', flush=True)\n"
    try:
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=limit)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the child hung (stdout {e.stdout!r}); stderr: {e.stderr!r}")
    assert proc.returncode == 0 and proc.stdout.decode().strip().endswith("done"), \
        proc.stderr.decode()[-4000:]
    return proc.stdout.decode()


def test_a_nested_call_runs_on_another_callback_thread():
    """docs/python.md's example: call(lambda: call(lambda: 5)) is 5, at any depth."""
    run_child("""
        assert call(lambda: call(lambda: 5)) == 5
        assert call(lambda: call(lambda: call(lambda: call(lambda: 7)))) == 7
        outer, inner = call(lambda: (threading.get_ident(), call(threading.get_ident)))
        assert outer != inner and threading.get_ident() not in (outer, inner)
        assert call(lambda: 42) == 42
    """)


def test_calls_that_do_not_block_share_one_callback_thread():
    """The pool grows only when every callback thread is blocked in chanflow: green threads
    calling Python functions that return at once are served by one thread."""
    idents = cf.get_global_func("runtime.map_in_green_threads")(
        lambda _: threading.get_ident(), list(range(64)))
    assert len(set(idents)) == 1 and threading.get_ident() not in idents


def test_a_callback_runs_a_go_machine_with_a_python_op():
    run_child("""
        g = cf.Graph()
        x = g.input("x", "float64", ())
        y = g.apply(lambda a: np.asarray(a) + 1, [x], (), "float64") * 2.0
        m = cf.GoMachine(g, workers=2)

        def run(v):
            m.run({x: np.float64(v)}, timeout=30)
            return float(m.result(y).numpy())

        for v in range(5):
            assert call(run, v) == (v + 1) * 2.0
        assert call(lambda: 42) == 42
    """)


def test_a_python_op_runs_a_go_machine_with_python_ops():
    """A Python op whose callable runs another GoMachine with Python ops (the op's thread is
    blocked in that run; the inner ops run on another callback thread)."""
    run_child("""
        inner = cf.Graph()
        ix = inner.input("x", "float64", ())
        iy = inner.apply(lambda a: np.asarray(a) * 10, [ix], (), "float64")
        im = cf.GoMachine(inner)

        def op(a):
            im.run({ix: np.asarray(a)}, timeout=30)
            return im.result(iy).numpy() + 1

        g = cf.Graph()
        x = g.input("x", "float64", ())
        y = g.apply(op, [x], (), "float64")
        m = cf.GoMachine(g, workers=2)
        m.run({x: np.float64(3)}, timeout=30)
        assert m.result(y).numpy().item() == 31.0
    """)


def test_a_deadlock_inside_a_callback_is_reported_and_the_process_stays_usable():
    """A callable that waits for what never comes (a receive nobody answers) is a deadlock,
    reported as DeadlockError whichever of the waits detection cancels; the callback thread that
    may be left waiting does not hold up the next calls, Python ops, or the interpreter's exit."""
    run_child("""
        ch = cf.make_chan(0)
        g = cf.Graph()
        x = g.input("x", "float64", ())
        y = g.apply(lambda a: np.asarray(a) + 1, [x], (), "float64")
        m = cf.GoMachine(g, workers=2)
        for _ in range(4):
            try:
                call(lambda: ch.recv())
            except cf.DeadlockError:
                pass
            else:
                raise AssertionError("no DeadlockError")
            assert call(lambda: 42) == 42
            m.run({x: np.float64(1)})  # no timeout: a pending deadline would hold up detection
            assert m.result(y).numpy().item() == 2.0
    """)
