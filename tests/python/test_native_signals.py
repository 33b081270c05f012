"""Signals other than SIGINT (SIGTERM, SIGALRM, SIGUSR1 ...) while Python's main thread is
blocked in a chanflow call, in a child process: as for Python's own blocking calls (PEP 475), the
Python handler runs within a second; an exception it raises leaves the call, which took nothing
(no value lost or duplicated) and stopped its run; a handler that returns lets the call go on to
its real result. The parent waits for the child's "ready" line and then for its main thread to
sleep in the call (child_process.Child.wait_blocked) before it sends the signal; a value the call
is to receive afterwards is sent only once the parent saw the handler's own line, so a handler
that ran only when the call returned fails the test (no line within the limit)."""
import os
import signal
import textwrap
import time

import pytest

import child_process

HERE = os.path.dirname(os.path.abspath(__file__))
# Sanitizer builds run everything several times slower.
BOUND = 4.0 if os.environ.get("CHANFLOW_ASAN") else 1.0
LIMIT = 20.0  # a line the child must print: far more than it needs, far less than a hang

PRELUDE = f"""
import os, signal, sys, threading, time
sys.path.insert(0, {HERE!r})
import numpy as np
import chanflow as cf
from conftest import VT, assign_program, block, chvar, forever_program, op, tvar
ex = cf.Executor(workers=2)
def say(*a):
    print(*a, flush=True)
class Stop(Exception):
    pass
def raising(signo, frame):
    raise Stop(signo)
def returning(signo, frame):
    say("handled", signo)
def on_go(fn):
    # Calls fn() on another thread once the parent writes a line to stdin.
    def wait():
        sys.stdin.readline()
        fn()
    threading.Thread(target=wait, daemon=True).start()
def recv_program():
    # y = the value received from the bound channel `in`; prints `ready` first.
    return cf.Program.from_blocks([block(0, -1, [
        chvar("in"), tvar("y", VT.INT64, [1]), tvar("status", VT.BOOL), tvar("c", VT.BOOL, [1])], [
        op("fill_constant", outputs=[("Out", ["c"])],
           attrs=[("shape", [1]), ("dtype", VT.BOOL), ("value", 1.0)]),
        op("print", inputs=[("In", ["c"])],
           attrs=[("message", "ready"), ("print_tensor_name", False)]),
        op("channel_recv", inputs=[("Channel", ["in"])],
           outputs=[("Out", ["y"]), ("Status", ["status"])]),
    ])])
"""


def Child(body):
    return child_process.Child(PRELUDE + textwrap.dedent(body))


def line(child):
    return child.line(limit=LIMIT)


def signal_blocked(child, signo):
    """Waits for the ready line and for the main thread to block, then sends `signo`."""
    child.wait_for("ready")
    child.wait_blocked(limit=LIMIT)
    return child.signal(signo)


def expect_handler_ran_while_blocked(child, signo):
    """Sends `signo` to the blocked call; its handler must say so while the call still waits.
    Then lets the call's partner go on (stdin)."""
    sent = signal_blocked(child, signo)
    assert line(child) == f"handled {int(signo)}"
    assert time.monotonic() - sent < BOUND
    child.write("go\n")


def expect_raised(child, signo, what):
    sent = signal_blocked(child, signo)
    assert line(child) == f"{what} raised Stop({int(signo)})"
    assert time.monotonic() - sent < BOUND


SIGNALS = [signal.SIGALRM, signal.SIGUSR1, signal.SIGTERM]


# ---- Channel.recv / Channel.send / select ------------------------------------------------------

@pytest.mark.parametrize("signo", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_recv_handler_raises_and_the_value_stays_in_the_channel(signo):
    child = Child(f"""
        signal.signal({int(signo)}, raising)
        ch = cf.make_chan(0, elem="Int")
        on_go(lambda: ch.send(7))           # (a thread that may send: no deadlock)
        say("ready")
        try:
            ch.recv()
        except Stop as e:
            say("recv raised", repr(e))
        say("again")
        say("received", ch.recv())   # the value sent after the cancel: nothing was taken
    """)
    expect_raised(child, signo, "recv")
    assert line(child) == "again"
    child.write("go\n")
    assert line(child) == "received (7, True)"
    child.finish()


def test_recv_handler_returns_and_recv_receives_the_value_sent_later():
    child = Child("""
        signal.signal(signal.SIGUSR1, returning)
        ch = cf.make_chan(0, elem="Int")
        on_go(lambda: ch.send(42))
        say("ready")
        say("received", ch.recv())
    """)
    expect_handler_ran_while_blocked(child, signal.SIGUSR1)
    assert line(child) == "received (42, True)"
    child.finish()


def test_recv_with_a_timeout_handler_returns_and_the_call_goes_on():
    child = Child("""
        signal.signal(signal.SIGTERM, returning)
        ch = cf.make_chan(0, elem="Int")
        on_go(lambda: ch.send(5))
        say("ready")
        say("received", ch.recv(timeout=600))
    """)
    expect_handler_ran_while_blocked(child, signal.SIGTERM)
    assert line(child) == "received (5, True)"
    child.finish()


def test_send_handler_raises_and_nothing_was_sent():
    child = Child("""
        signal.signal(signal.SIGALRM, raising)
        ch = cf.make_chan(1, elem="Int")
        ch.send(1)                          # full: the next send blocks
        on_go(lambda: None)                 # a thread that may receive: no deadlock
        say("ready")
        try:
            ch.send(2)
        except Stop as e:
            say("send raised", repr(e))
        say("left", ch.try_recv(), ch.try_recv())
    """)
    expect_raised(child, signal.SIGALRM, "send")
    assert line(child) == "left (1, True) (None, False)"
    child.finish()


def test_send_handler_returns_and_the_value_is_sent_once():
    child = Child("""
        signal.signal(signal.SIGUSR1, returning)
        ch = cf.make_chan(1, elem="Int")
        ch.send(1)
        got = []
        on_go(lambda: got.append(ch.recv()))
        say("ready")
        ch.send(2)                          # completes once the other thread took the 1
        say("sent", got, ch.try_recv(), ch.try_recv())
    """)
    expect_handler_ran_while_blocked(child, signal.SIGUSR1)
    assert line(child) == "sent [(1, True)] (2, True) (None, False)"
    child.finish()


def test_select_handler_raises_then_returns():
    child = Child("""
        a, b = cf.make_chan(0, elem="Int"), cf.make_chan(0, elem="Int")
        cases = [cf.recv_case(a), cf.recv_case(b)]
        signal.signal(signal.SIGTERM, raising)
        on_go(lambda: b.send(9))
        say("ready")
        try:
            cf.select(cases)
        except Stop as e:
            say("select raised", repr(e))
        signal.signal(signal.SIGTERM, returning)
        say("ready")
        say("selected", cf.select(cases))
    """)
    expect_raised(child, signal.SIGTERM, "select")
    expect_handler_ran_while_blocked(child, signal.SIGTERM)
    assert line(child) == "selected (1, 9, True)"
    child.finish()


def test_a_wakeup_fd_set_before_the_call_still_gets_the_signal():
    # An event loop's set_wakeup_fd (asyncio's) still learns of a signal that came during a call.
    child = Child("""
        r, w = os.pipe()
        os.set_blocking(w, False)
        signal.set_wakeup_fd(w)
        signal.signal(signal.SIGUSR1, returning)
        ch = cf.make_chan(0, elem="Int")
        on_go(lambda: ch.send(3))
        say("ready")
        say("received", ch.recv())
        say("wakeup fd", list(os.read(r, 16)), signal.set_wakeup_fd(-1) == w)
    """)
    expect_handler_ran_while_blocked(child, signal.SIGUSR1)
    assert line(child) == "received (3, True)"
    assert line(child) == f"wakeup fd [{int(signal.SIGUSR1)}] True"
    child.finish()


# ---- Executor.run -------------------------------------------------------------------------------

@pytest.mark.parametrize("signo", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_executor_run_handler_raises_the_run_stops_and_the_process_stays_usable(signo):
    child = Child(f"""
        signal.signal({int(signo)}, raising)
        try:
            ex.run(forever_program("ready"))
        except Stop as e:
            say("run raised", repr(e))
        (y,) = ex.run(assign_program(VT.INT64), feed={{"x": np.int64([4])}}, fetch=["y"])
        say("second run", int(y.numpy()[0]))
    """)
    expect_raised(child, signo, "run")
    assert line(child) == "second run 4"
    child.finish()


def test_executor_run_handler_returns_and_the_run_returns_its_fetch():
    child = Child("""
        signal.signal(signal.SIGALRM, returning)
        inp = cf.make_chan(0, elem="Tensor(int64)")
        on_go(lambda: inp.send(np.int64([11])))
        (y,) = ex.run(recv_program(), channels={"in": inp}, fetch=["y"])
        say("fetched", int(y.numpy()[0]))
    """)
    expect_handler_ran_while_blocked(child, signal.SIGALRM)
    assert line(child) == "fetched 11"
    child.finish()


def test_executor_run_many_signals_and_ctrl_c_still_stops_it():
    # Several handled signals during one run, then Ctrl-C: KeyboardInterrupt, the run stopped.
    child = Child("""
        signal.signal(signal.SIGUSR1, returning)
        try:
            ex.run(forever_program("ready"))
        except KeyboardInterrupt:
            say("interrupted")
    """)
    child.wait_for("ready")
    for _ in range(3):
        child.wait_blocked(limit=LIMIT)
        child.signal(signal.SIGUSR1)
        assert line(child) == f"handled {int(signal.SIGUSR1)}"
    child.wait_blocked(limit=LIMIT)
    sent = child.interrupt()
    assert line(child) == "interrupted"
    assert time.monotonic() - sent < BOUND
    child.finish()


def test_executor_run_deadlock_is_still_reported_while_a_handler_is_installed():
    # The run goes to a helper thread while the main thread waits for signals: deadlock detection
    # still sees every thread accounted for.
    child = Child("""
        signal.signal(signal.SIGTERM, returning)
        inp = cf.make_chan(0, elem="Tensor(int64)")
        try:
            ex.run(recv_program(), channels={"in": inp}, fetch=["y"])
        except cf.DeadlockError:
            say("deadlock")
    """)
    child.wait_for("ready")
    assert line(child) == "deadlock"
    child.finish()


# ---- GoMachine.run ------------------------------------------------------------------------------

GRAPH = """
        g = cf.Graph()
        x = g.input("x", "int64", (1,))
        feed = cf.make_chan(0, elem="Tensor(int64)")
        def wait_for_feed(a):           # on chanflow's callback thread
            say("ready")
            v, ok = feed.recv()
            return np.asarray(a) + (np.asarray(v) if ok else 0)
        out = g.apply(wait_for_feed, [x], (1,), "int64", name="wait_for_feed")
        m = cf.GoMachine(g, workers=2)
"""


def test_gomachine_run_handler_raises_and_the_run_stops():
    child = Child(GRAPH + """
        signal.signal(signal.SIGUSR1, raising)
        on_go(lambda: None)                 # a thread that may send: no deadlock
        try:
            m.run({x: np.int64([1])})
        except Stop as e:
            say("run raised", repr(e))
        feed.close()                # the second run's op finds it closed
        m.run({x: np.int64([2])})
        say("second run", int(m.result(out).numpy()[0]))
        m.close()
    """)
    expect_raised(child, signal.SIGUSR1, "run")
    assert line(child) == "ready"  # the second run's op, which finds the feed closed
    assert line(child) == "second run 2"
    child.finish()


def test_gomachine_run_handler_returns_and_the_run_completes():
    child = Child(GRAPH + """
        signal.signal(signal.SIGTERM, returning)
        on_go(lambda: feed.send(np.int64([30])))
        m.run({x: np.int64([1])})
        say("result", int(m.result(out).numpy()[0]))
        m.close()
    """)
    expect_handler_ran_while_blocked(child, signal.SIGTERM)
    assert line(child) == "result 31"
    child.finish()


# ---- TapeMachine.run / stream -------------------------------------------------------------------
# A TapeMachine calls its Python ops inline: with a handler for a signal other than SIGINT the run
# (and so the op) is on a helper thread while the main thread runs handlers. A run canceled there
# ends only once its op returns, so the op's blocking call must end with the run: it raises the
# run's CanceledError, which the op reports here before the run's call raises.

TAPE = """
        g = cf.Graph()
        x = g.input("x", "int64", (1,))
        feed = cf.make_chan(0, elem="Tensor(int64)")
        def wait_for_feed(a):           # on the thread that runs the machine
            say("ready")
            try:
                v, ok = feed.recv()
            except cf.CanceledError as e:
                say("op canceled", e)
                raise
            return np.asarray(a) + (np.asarray(v) if ok else 0)
        out = g.apply(wait_for_feed, [x], (1,), "int64", name="wait_for_feed")
        m = cf.TapeMachine(g)
        def call(kind, value):
            # run or stream; the value of `out` it computed.
            if kind == "run":
                m.run({x: np.int64([value])})
                return int(m.result(out).numpy()[0])
            (row,) = m.stream([{x: np.int64([value])}], [out])
            return int(row[0].numpy()[0])
"""


@pytest.mark.parametrize("kind", ["run", "stream"])
@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGALRM],
                         ids=lambda s: signal.Signals(s).name)
def test_tapemachine_handler_raises_while_its_op_waits_and_the_run_stops(kind, signo):
    child = Child(TAPE + f"""
        signal.signal({int(signo)}, raising)
        on_go(lambda: None)                 # a thread that may send: no deadlock
        try:
            call({kind!r}, 1)
            say("returned?!")
        except Stop as e:
            say("{kind} raised", repr(e))
        feed.close()                # the next run's op finds it closed
        say("next", call({kind!r}, 2))
    """)
    sent = signal_blocked(child, signo)
    assert line(child) == "op canceled context canceled"
    assert line(child) == f"{kind} raised Stop({int(signo)})"
    assert time.monotonic() - sent < BOUND
    assert line(child) == "ready"
    assert line(child) == "next 2"
    child.finish()


@pytest.mark.parametrize("kind", ["run", "stream"])
def test_tapemachine_ctrl_c_with_a_handler_installed_stops_the_run_its_op_waits_in(kind):
    child = Child(TAPE + f"""
        signal.signal(signal.SIGTERM, raising)
        on_go(lambda: None)
        try:
            call({kind!r}, 1)
            say("returned?!")
        except KeyboardInterrupt:
            say("interrupted")
    """)
    child.wait_for("ready")
    child.wait_blocked(limit=LIMIT)
    sent = child.interrupt()
    assert line(child) == "op canceled context canceled"
    assert line(child) == "interrupted"
    assert time.monotonic() - sent < BOUND
    child.finish()


@pytest.mark.parametrize("kind", ["run", "stream"])
def test_tapemachine_handler_returns_and_the_run_completes_with_the_value_sent_later(kind):
    child = Child(TAPE + f"""
        signal.signal(signal.SIGUSR1, returning)
        on_go(lambda: feed.send(np.int64([40])))
        say("result", call({kind!r}, 2))
    """)
    expect_handler_ran_while_blocked(child, signal.SIGUSR1)
    assert line(child) == "result 42"
    child.finish()


@pytest.mark.parametrize("handler", [False, True], ids=["inline", "helper"])
def test_tapemachine_run_timeout_stops_its_op_waiting_in_recv(handler):
    # The run's deadline ends the op's recv (on the main thread, or on the helper while a SIGTERM
    # handler is installed): DeadlineExceededError at the timeout.
    child = Child(TAPE.replace("cf.CanceledError", "cf.DeadlineExceededError") + f"""
        if {handler}:
            signal.signal(signal.SIGTERM, returning)
        on_go(lambda: None)
        start = time.monotonic()
        try:
            m.run({{x: np.int64([1])}}, timeout=0.5)
            say("returned?!")
        except cf.DeadlineExceededError:
            say("deadline %.3f" % (time.monotonic() - start))
    """)
    assert line(child) == "ready"
    assert line(child) == "op canceled context deadline exceeded"
    took = float(line(child).split()[1])
    assert 0.5 <= took < 0.5 + BOUND
    child.finish()


def test_a_run_inside_a_tapemachine_op_stops_with_the_outer_run():
    # The outer op runs an inner TapeMachine whose op waits in recv: the inner run's context is
    # a child of the outer run's, so the handler's cancel of the outer run ends both.
    child = Child(TAPE + """
        outer = cf.Graph()
        ox = outer.input("x", "int64", (1,))
        def run_inner(a):
            try:
                m.run({x: np.asarray(a)})
            except cf.CanceledError as e:
                say("inner run canceled", e)
                raise
            return m.result(out)
        outer.apply(run_inner, [ox], (1,), "int64")
        signal.signal(signal.SIGTERM, raising)
        on_go(lambda: None)
        try:
            cf.TapeMachine(outer).run({ox: np.int64([1])})
            say("returned?!")
        except Stop as e:
            say("run raised", repr(e))
    """)
    sent = signal_blocked(child, signal.SIGTERM)
    assert line(child) == "op canceled context canceled"
    assert line(child) == "inner run canceled context canceled"
    assert line(child) == f"run raised Stop({int(signal.SIGTERM)})"
    assert time.monotonic() - sent < BOUND
    child.finish()


def test_a_gomachine_op_abandoned_by_its_run_stops_waiting():
    # A GoMachine returns at its deadline and leaves the op running; the op's recv ends with the
    # run (it used to wait on its callback thread for a value that never came).
    child = Child(TAPE.replace("cf.TapeMachine(g)", "cf.GoMachine(g, workers=2)")
                      .replace("cf.CanceledError", "cf.DeadlineExceededError") + """
        on_go(lambda: None)
        try:
            m.run({x: np.int64([1])}, timeout=0.5)
        except cf.DeadlineExceededError as e:
            raised = type(e).__name__
        m.close()                   # waits for the abandoned run: the op must have returned
        say("closed after", raised)
    """)
    assert line(child) == "ready"
    assert line(child) == "op canceled context deadline exceeded"
    assert line(child) == "closed after DeadlineExceededError"
    child.finish()


# ---- what is left alone -------------------------------------------------------------------------

def test_a_call_on_another_thread_is_not_interrupted():
    # Python runs handlers on the main thread only: the worker's recv goes on and receives.
    child = Child("""
        signal.signal(signal.SIGUSR1, returning)
        ch = cf.make_chan(0, elem="Int")
        got = []
        t = threading.Thread(target=lambda: got.append(ch.recv()))
        t.start()
        on_go(lambda: ch.send(8))
        say("ready")
        t.join()                    # the main thread runs the handler here (PEP 475)
        say("worker got", got)
    """)
    expect_handler_ran_while_blocked(child, signal.SIGUSR1)
    assert line(child) == "worker got [(8, True)]"
    child.finish()
