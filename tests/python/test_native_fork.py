"""fork() after chanflow ran: the child works. Every parent state (nothing ran, a program ran, a
green thread called Python, a GoMachine ran, channels were used) times every child action
(Executor.run with a timeout that must fire, call_in_green_thread, GoMachine.run with a Python op,
channels with green threads), an Executor and a GoMachine made in the parent and used in the child,
fork while a trace records, and a multiprocessing Pool (fork) whose workers run programs. Each case
runs in a fresh interpreter; the parent waits for its child with a deadline, so a regression fails
instead of hanging."""
import os
import subprocess
import sys
import textwrap

import pytest

# GCC 12's AddressSanitizer runtime does not intercept fork(): its allocator's locks are not taken
# around it, so a child forked while any other thread of the parent (a scheduler's worker, a
# Python-callback thread, CPython's own) is inside malloc or free waits forever on that lock in
# its first allocation. The runtime's own fork handling is checked under ASan by the C++ fork test
# (tests/runtime/fork_test.cc), whose parent forks with its threads idle.
pytestmark = pytest.mark.skipif(
    os.environ.get("CHANFLOW_ASAN") == "1",
    reason="GCC 12's ASan runtime does not make malloc safe across fork() in a threaded parent")

HERE = os.path.dirname(os.path.abspath(__file__))

PRELUDE = textwrap.dedent("""
    import os, select, sys, time
    import numpy as np
    sys.path.insert(0, %r)
    from conftest import VT, block, chvar, op, tvar, forever_program
    import chanflow as cf

    call = cf.get_global_func("runtime.call_in_green_thread")

    def go_program():
        # A go block sends x + x on a channel; block 0 receives it into y.
        b0 = block(0, -1, [chvar("ch"), tvar("x", VT.INT64, [1]), tvar("y", VT.INT64, [1]),
                           tvar("status", VT.BOOL)], [
            op("channel_create", outputs=[("Out", ["ch"])],
               attrs=[("data_type", VT.INT64), ("capacity", 0)]),
            op("go", inputs=[("X", ["ch", "x"])], attrs=[("sub_block", cf.BlockRef(1))]),
            op("channel_recv", inputs=[("Channel", ["ch"])],
               outputs=[("Out", ["y"]), ("Status", ["status"])]),
        ])
        b1 = block(1, 0, [tvar("s", VT.INT64, [1])], [
            op("elementwise_add", [("X", ["x"]), ("Y", ["x"])], [("Out", ["s"])]),
            op("channel_send", [("Channel", ["ch"]), ("X", ["s"])]),
        ])
        return cf.Program.from_blocks([b0, b1])

    def run_program(ex=None):
        ex = ex or cf.Executor()
        (y,) = ex.run(go_program(), feed={"x": np.array([21])}, fetch=["y"], timeout=30)
        assert y.numpy().tolist() == [42], y

    def run_machine(m=None):
        g = cf.Graph()
        x = g.input("x", "float64", ())
        y = g.apply(lambda a: np.asarray(a) * 2, [x], (), "float64") + 1.0
        m = m or cf.GoMachine(g, workers=2)
        m.run({x: np.float64(20)}, timeout=30)
        assert m.result(y).numpy().item() == 41.0

    def use_channels():
        # Green threads send on a buffered channel; an unbuffered one between a Python thread's
        # green thread and this thread; a select with a timeout.
        import threading
        buf, unbuf = cf.make_chan(3), cf.make_chan(0)
        cf.get_global_func("runtime.map_in_green_threads")(lambda v: buf.send(v), [1, 2, 3])
        assert sorted(buf.recv(timeout=30)[0] for _ in range(3)) == [1, 2, 3]
        t = threading.Thread(target=lambda: call(lambda: unbuf.send(7, timeout=30)))
        t.start()
        assert unbuf.recv(timeout=30) == (7, True)
        t.join()
        try:
            buf.recv(timeout=0.05)
        except cf.DeadlineExceededError:
            pass
        else:
            raise AssertionError("recv on an empty channel did not time out")

    def timeout_fires():
        t = time.monotonic()
        try:
            cf.Executor().run(forever_program("started"), timeout=0.3)
        except cf.DeadlineExceededError:
            pass
        else:
            raise AssertionError("the run did not time out")
        assert time.monotonic() - t < 20

    PARENT = {
        "nothing": lambda: None,
        "executor": run_program,
        "call": lambda: call(lambda: 1) == 1 or sys.exit("call"),
        "gomachine": run_machine,
        "channels": use_channels,
    }
    CHILD = {
        "executor_timeout": lambda: (timeout_fires(), run_program()),
        "call": lambda: (call(lambda: 42) == 42 or sys.exit("call"),
                         call(lambda: call(lambda: 5)) == 5 or sys.exit("nested")),
        "gomachine": run_machine,
        "channels": use_channels,
    }

    def in_child(action, limit=60):
        # Runs action() in a fork()ed child; fails (killing it) when it takes longer than limit.
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            status = 1
            try:
                action()
                os.write(w, b"ok")
                status = 0
            except BaseException as e:
                os.write(w, repr(e).encode()[:4000])
            finally:
                os._exit(status)
        os.close(w)
        ready, _, _ = select.select([r], [], [], limit)
        if not ready:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError("the child hung")
        out = b""
        while True:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            out += chunk
        os.close(r)
        _, status = os.waitpid(pid, 0)
        assert out == b"ok" and status == 0, (out, status)
""") % HERE


def run_script(body, limit=120):
    script = PRELUDE + textwrap.dedent(body) + "\nprint('done', flush=True)\n"
    try:
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=limit,
                              cwd=HERE)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the parent hung; stderr: {e.stderr}")
    assert proc.returncode == 0 and proc.stdout.decode().strip().endswith("done"), \
        proc.stderr.decode()[-4000:]


PARENTS = ["nothing", "executor", "call", "gomachine", "channels"]
CHILDREN = ["executor_timeout", "call", "gomachine", "channels"]


@pytest.mark.parametrize("child", CHILDREN)
@pytest.mark.parametrize("parent", PARENTS)
def test_the_child_of_a_fork_works(parent, child):
    run_script(f"""
        PARENT[{parent!r}]()
        in_child(CHILD[{child!r}])
        CHILD[{child!r}]()  # the parent still works too
    """)


def test_an_executor_and_a_machine_made_in_the_parent_work_in_the_child():
    """Their own schedulers' workers do not exist in the child: the schedulers start new ones."""
    run_script("""
        ex = cf.Executor(workers=2)
        run_program(ex)
        g = cf.Graph()
        x = g.input("x", "float64", ())
        y = g.apply(lambda a: np.asarray(a) * 2, [x], (), "float64") + 1.0
        m = cf.GoMachine(g, workers=2)
        m.run({x: np.float64(20)}, timeout=30)

        def child():
            run_program(ex)
            m.run({x: np.float64(1)}, timeout=30)
            assert m.result(y).numpy().item() == 3.0
            del globals()["ex"]  # destroying the parent's executor in the child returns

        in_child(child)
        in_child(lambda: in_child(child))  # a fork of a fork
        run_program(ex)
    """)


def test_fork_while_green_threads_are_parked_and_a_run_waits_on_another_thread():
    """The parent's parked green threads, its run in progress on another thread and its pending
    timers are dropped in the child, which still runs programs and times out."""
    run_script("""
        import threading
        started = threading.Event()
        def forever():
            started.set()
            try:
                cf.Executor(workers=2).run(forever_program("parked"), timeout=5)
            except cf.DeadlineExceededError:
                pass
        t = threading.Thread(target=forever)
        t.start()
        assert started.wait(30)
        time.sleep(0.2)  # not synchronisation: only makes it likely the run is parked by now
        in_child(lambda: (timeout_fires(), run_program(), use_channels()))
        t.join()
    """)


def test_fork_while_a_trace_records():
    """The child does not continue the parent's recording (and writes nothing into its file);
    it may record its own."""
    run_script("""
        import json, tempfile
        d = tempfile.mkdtemp()
        parent_path, child_path = os.path.join(d, "parent.json"), os.path.join(d, "child.json")
        cf.trace_start(parent_path)
        run_program()

        def child():
            run_program()
            cf.trace_stop()  # nothing recording here: writes nothing into the parent's file
            cf.trace_start(child_path)
            run_program()
            cf.trace_stop()
            json.load(open(child_path))

        in_child(child)
        run_program()
        cf.trace_stop()
        doc = json.load(open(parent_path))
        assert doc["otherData"]["complete"] is True
        json.load(open(child_path))
    """)


def test_a_multiprocessing_pool_of_forked_workers_runs_programs():
    run_script("""
        import multiprocessing

        def work(v):
            ex = cf.Executor()
            (y,) = ex.run(go_program(), feed={"x": np.array([v])}, fetch=["y"], timeout=30)
            return int(y.numpy()[0]) + int(call(lambda: 0))

        run_program()
        call(lambda: 1)
        with multiprocessing.get_context("fork").Pool(2) as pool:
            r = pool.map_async(work, range(8))
            assert r.get(timeout=60) == [2 * v for v in range(8)]
    """, limit=180)


def test_after_a_fork_the_parent_still_counts_its_python_threads():
    """NumPy's OpenBLAS ends its helper threads around every fork() (its own fork handler); they
    were in deadlock detection's baseline of helpers, so afterwards they hid a Python thread, and
    a receive that thread was about to answer was reported as a deadlock."""
    run_script("""
        import threading
        in_child(lambda: None)
        ch = cf.make_chan(0)
        # The thread sleeps (a plain thread, not in a chanflow call) while this one waits: not
        # synchronisation, the state under test.
        t = threading.Thread(target=lambda: (time.sleep(0.3), ch.send(1)))
        t.start()
        assert ch.recv() == (1, True)  # no timeout: a pending deadline would suspend detection
        t.join()
    """)
