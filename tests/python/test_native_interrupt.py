"""Ctrl-C (SIGINT) during Executor.run on the main thread, in a child process: the run stops and
Python's handler decides what happens (KeyboardInterrupt by default), within a second; the
process stays usable. The parent waits for the child's "ready" line, printed by the program
itself once it runs, before it sends the signal."""
import os
import signal
import textwrap
import time

import child_process

HERE = os.path.dirname(os.path.abspath(__file__))
# Sanitizer builds run everything several times slower.
BOUND = 4.0 if os.environ.get("CHANFLOW_ASAN") else 1.0

PRELUDE = f"""
import signal, sys, time
sys.path.insert(0, {HERE!r})
import numpy as np
import chanflow as cf
from conftest import VT, assign_program, forever_program
ex = cf.Executor(workers=2)
def say(*a):
    print(*a, flush=True)
"""


def Child(body):
    """A child process running PRELUDE + body (child_process.Child)."""
    return child_process.Child(PRELUDE + textwrap.dedent(body))


def test_ctrl_c_raises_keyboard_interrupt_and_the_process_stays_usable():
    child = Child("""
        for round in range(2):
            try:
                ex.run(forever_program(f"ready{round}"))
                say("finished?!")
            except KeyboardInterrupt:
                say(f"interrupted{round}")
            (y,) = ex.run(assign_program(VT.INT64), feed={"x": np.int64([round])}, fetch=["y"])
            say(f"second run {int(y.numpy()[0])}")
        # Python's own handling is back: SIGINT outside a run is a KeyboardInterrupt as usual.
        try:
            say("idle")
            time.sleep(60)
        except KeyboardInterrupt:
            say("idle interrupted")
    """)
    for round in range(2):
        child.wait_for(f"ready{round}")
        sent = child.interrupt()
        assert child.line() == f"interrupted{round}"
        assert time.monotonic() - sent < BOUND
        assert child.line() == f"second run {round}"
    child.wait_for("idle")
    child.interrupt()
    assert child.line() == "idle interrupted"
    child.finish()


def test_a_handler_that_does_not_raise_sees_the_signal_and_the_run_is_canceled():
    child = Child("""
        calls = []
        signal.signal(signal.SIGINT, lambda signo, frame: calls.append(signo))
        try:
            ex.run(forever_program("ready"))
        except cf.CanceledError as e:
            say(f"canceled {calls} {'still running' in str(e)}")
    """)
    child.wait_for("ready")
    sent = child.interrupt()
    assert child.line() == f"canceled [{int(signal.SIGINT)}] True"
    assert time.monotonic() - sent < BOUND
    child.finish()


def test_an_ignored_sigint_leaves_the_run_alone():
    child = Child("""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            ex.run(forever_program("ready"), timeout=1.0)
        except cf.DeadlineExceededError:
            say("deadline")
    """)
    child.wait_for("ready")
    child.interrupt()
    assert child.line() == "deadline"  # not stopped by the signal: it ran to its deadline
    child.finish()


def test_a_run_on_another_thread_is_not_stopped_by_sigint():
    # SIGINT goes to the main thread (KeyboardInterrupt there); the worker thread's run goes on
    # until its deadline.
    child = Child("""
        import threading
        result = []
        done = threading.Event()
        def work():
            try:
                ex.run(forever_program("ready"), timeout=1.5)
            except cf.DeadlineExceededError:
                result.append("deadline")
            done.set()
        try:
            threading.Thread(target=work).start()
            say("main waiting")
            done.wait()
        except KeyboardInterrupt:
            say("main interrupted")
        done.wait(60)
        say(result)
    """)
    assert sorted(child.line().split()[0] for _ in range(2)) == ["main", "ready"]
    child.interrupt()
    assert child.line() == "main interrupted"
    assert child.line() == "['deadline']"
    child.finish()


def test_ctrl_c_stops_a_tapemachine_run_whose_python_op_waits_in_recv():
    # The op runs on the main thread itself, blocked in Channel.recv: Ctrl-C cancels the run, the
    # op's recv raises the run's CanceledError (the SIGINT is not the op's), and the run raises
    # KeyboardInterrupt.
    child = Child("""
        import threading
        threading.Thread(target=threading.Event().wait, daemon=True).start()  # no deadlock
        g = cf.Graph()
        x = g.input("x", "int64", (1,))
        feed = cf.make_chan(0, elem="Tensor(int64)")
        def wait_for_feed(a):
            say("ready")
            try:
                return np.asarray(a) + np.asarray(feed.recv()[0])
            except cf.CanceledError as e:
                say("op canceled", e)
                raise
        g.apply(wait_for_feed, [x], (1,), "int64")
        try:
            cf.TapeMachine(g).run({x: np.int64([1])})
            say("finished?!")
        except KeyboardInterrupt:
            say("interrupted")
    """)
    child.wait_for("ready")
    child.wait_blocked()
    sent = child.interrupt()
    assert child.line() == "op canceled context canceled"
    assert child.line() == "interrupted"
    assert time.monotonic() - sent < BOUND
    child.finish()
