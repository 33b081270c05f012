"""chanflow channels and select from Python: Go's semantics (buffered and unbuffered, close,
iteration, try_*, select with and without default, fair random choice), values of every kind,
element types, timeouts, Executor.run(channels=...) and channel fetches, stress between Python
threads and the green threads of running programs, Ctrl-C on the main thread and bad input.
Every outcome is checked exactly (sums, counts, no loss, no duplication); threads synchronise
through the channels themselves, never through sleeps."""
import json
import os
import re
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import chanflow as cf
import chanflow.fluid as fluid
from chanflow._native import Object
from chanflow.fluid import core, unique_name
from chanflow.fluid.layers import assign, elementwise_add, fill_constant
import child_process
from conftest import VT, block, chvar, op, tvar

FVT = core.VarDesc.VarType
HERE = os.path.dirname(os.path.abspath(__file__))
# Sanitizer builds run everything several times slower.
BOUND = 4.0 if os.environ.get("CHANFLOW_ASAN") else 1.0


def run_threads(*targets):
    """Starts one thread per callable, joins them all, and re-raises the first exception any of
    them raised (a failing assertion in a thread fails the test)."""
    errors = []

    def wrap(fn):
        def body():
            try:
                fn()
            except BaseException as e:  # noqa: B902 - reported to the test below
                errors.append(e)
        return body

    threads = [threading.Thread(target=wrap(fn)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


# ---- basic semantics ----------------------------------------------------------------------------

def test_buffered_channel_is_fifo_with_len_and_capacity():
    ch = cf.make_chan(3)
    assert (len(ch), ch.capacity, ch.closed, ch.elem) == (0, 3, False, "Object")
    for v in (1, 2, 3):
        ch.send(v)
    assert len(ch) == 3
    assert not ch.try_send(4)  # full
    assert [ch.recv() for _ in range(3)] == [(1, True), (2, True), (3, True)]
    assert ch.try_recv() == (None, False) and not ch.closed  # empty, not closed


def test_unbuffered_send_is_a_rendezvous():
    ch = cf.make_chan()
    assert ch.capacity == 0
    assert not ch.try_send(1)  # nobody receives
    got = []
    run_threads(lambda: got.append(ch.recv()), lambda: ch.send("hello"))
    assert got == [("hello", True)]
    assert len(ch) == 0


def test_close_drains_the_buffer_then_reports_closed():
    ch = cf.make_chan(2)
    ch.send(1.5)
    ch.send(True)
    ch.close()
    assert ch.closed
    assert ch.recv() == (1.5, True)
    assert ch.try_recv() == (True, True)
    assert ch.recv() == (None, False)
    assert ch.try_recv() == (None, False)
    assert list(ch) == []


def test_close_wakes_every_blocked_receiver():
    ch = cf.make_chan()
    results = []
    lock = threading.Lock()

    def receiver():
        r = ch.recv()
        with lock:
            results.append(r)

    run_threads(*([receiver] * 5), ch.close)
    assert results == [(None, False)] * 5


def test_send_on_closed_channel_and_double_close_raise():
    ch = cf.make_chan(1)
    ch.close()
    with pytest.raises(cf.ChannelClosedError):
        ch.send(1)
    with pytest.raises(cf.ChannelClosedError):
        ch.try_send(1)
    with pytest.raises(cf.ChannelClosedError):
        ch.close()


def test_close_wakes_a_blocked_sender_with_channel_closed_error():
    ch = cf.make_chan()
    raised = []

    def sender():
        try:
            ch.send(1)
        except cf.ChannelClosedError:
            raised.append(True)

    run_threads(sender, ch.close)
    assert raised == [True]


def test_iteration_receives_until_closed_and_drained():
    ch = cf.make_chan(4)

    def producer():
        for i in range(100):
            ch.send(i)
        ch.close()

    got = []
    run_threads(producer, lambda: got.extend(ch))
    assert got == list(range(100))
    assert iter(ch) is ch


def test_values_of_every_kind_round_trip():
    ch = cf.make_chan(16)
    values = [0, -(2**63), 2**63 - 1, 2.5, float("inf"), True, False, "", "héllo ✓", None]
    for v in values:
        ch.send(v)
    got = [ch.recv() for _ in values]
    assert got == [(v, True) for v in values]
    for v, (g, _) in zip(values, got):
        assert type(g) is type(v)  # bool stays bool, int stays int


def test_a_sent_array_arrives_as_a_tensor_sharing_its_memory():
    ch = cf.make_chan(1)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    ch.send(a)
    t, ok = ch.recv()
    assert ok and isinstance(t, cf.Tensor) and t.shape == (3, 4)
    b = t.numpy()
    assert b.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    np.testing.assert_array_equal(b, a)


def test_lists_and_dicts_travel_as_objects():
    ch = cf.make_chan(2)
    ch.send([1, "two", 3.0])
    ch.send({"k": 1})
    for _ in range(2):
        v, ok = ch.recv()
        assert ok and isinstance(v, Object)


def test_channels_travel_over_channels():
    outer, inner = cf.make_chan(1, elem="Channel"), cf.make_chan(1)
    outer.send(inner)
    got, ok = outer.recv()
    assert ok and isinstance(got, cf.Channel) and got == inner and hash(got) == hash(inner)
    got.send(7)
    assert inner.recv() == (7, True)
    with pytest.raises(cf.TypeError, match="carries Channel, got Int"):
        outer.send(1)


def test_element_types_check_what_is_sent():
    t32 = cf.make_chan(2, elem="Tensor(float32)")
    assert t32.elem == "Tensor(float32)"
    t32.send(np.ones(2, np.float32))
    with pytest.raises(cf.TypeError, match=r"carries Tensor\(float32\)"):
        t32.send(np.ones(2, np.float64))
    tensors = cf.make_chan(2, elem="Tensor")
    tensors.send(np.ones(2, np.int8))
    with pytest.raises(cf.TypeError, match="carries Tensor, got Int"):
        tensors.send(3)
    strings = cf.make_chan(1, elem="String")
    strings.send("ok")
    with pytest.raises(cf.TypeError, match="carries String, got Float"):
        strings.try_send(1.0)
    for elem in ("Object", "Int", "Float", "Bool", "Array", "Map", "Tensor(int64)",
                 "Tensor(bool)", "Tensor(float16)"):
        assert cf.make_chan(0, elem).elem == elem
    assert cf.Channel(5, "Int").capacity == 5  # the constructor is make_chan


def test_a_named_channel_is_named_in_traces():
    jobs = cf.make_chan(2, name="jobs")
    assert jobs.name == "jobs" and cf.make_chan(1).name == ""
    assert cf.Channel(0, "Int", name="ticks").name == "ticks"
    cf.trace_start()
    try:
        jobs.send(1)
        jobs.send(2)
        assert jobs.recv() == (1, True)
    finally:
        cf.trace_stop()
    doc = json.loads(cf.trace_json())
    # Its buffer's length, as a counter track named after it: 1, 2, then 1.
    lens = [e["args"]["len"] for e in doc["traceEvents"] if e.get("name") == "chan jobs"]
    assert lens == [1, 2, 1]


def test_repr_equality_and_hash():
    a, b = cf.make_chan(2, "Int"), cf.make_chan(2, "Int")
    a.send(1)
    assert repr(a).startswith("<chanflow.Channel of Int, 1/2 buffered at ")
    a.close()
    assert ", closed at " in repr(a)
    assert a == a and a != b and a != 1
    assert len({a, b, a}) == 2
    assert isinstance(a, Object) and a.type_key == "Channel"


# ---- select -------------------------------------------------------------------------------------

def test_select_performs_the_ready_case():
    a, b = cf.make_chan(1), cf.make_chan(1)
    a.send("x")
    assert cf.select([cf.recv_case(b), cf.recv_case(a)]) == (1, "x", True)
    # b is empty, a has room: only the send can proceed.
    assert cf.select([cf.recv_case(b), cf.send_case(a, 42)]) == (1, None, True)
    assert a.recv() == (42, True)


def test_select_default_runs_only_when_nothing_is_ready():
    a, b = cf.make_chan(), cf.make_chan(1)
    b.send(1)  # b full: a send to it cannot proceed
    cases = [cf.recv_case(a), cf.send_case(a, 1), cf.send_case(b, 2)]
    assert cf.select(cases, default=True) == (None, None, False)
    assert cf.select([], default=True) == (None, None, False)
    assert cf.select([cf.recv_case(b)], default=True) == (0, 1, True)


def test_select_on_closed_channels():
    a, b = cf.make_chan(), cf.make_chan(1)
    b.send("last")
    a.close()
    b.close()
    # A closed channel is ready for receiving: drained values first, then (None, False).
    # Both cases are ready (random choice): select until b's value came (2^-200 to fail).
    seen = []
    while (1, "last", True) not in seen and len(seen) < 200:
        seen.append(cf.select([cf.recv_case(a), cf.recv_case(b)]))
    assert seen[-1] == (1, "last", True)
    assert set(seen[:-1]) <= {(0, None, False)}
    assert cf.select([cf.recv_case(b)]) == (0, None, False)
    with pytest.raises(cf.ChannelClosedError):
        cf.select([cf.send_case(a, 1)])
    with pytest.raises(cf.ChannelClosedError):
        cf.select([cf.send_case(a, 1)], default=True)


def test_select_nil_cases_never_fire():
    ch = cf.make_chan(1)
    ch.send(5)
    for _ in range(50):
        assert cf.select([cf.recv_case(None), cf.send_case(None, 1), cf.recv_case(ch),
                          cf.send_case(ch, 5)]) in ((2, 5, True), (3, None, True))
        assert cf.select([cf.recv_case(None)], default=True) == (None, None, False)
    assert cf.recv_case(None).channel is None


def test_select_blocks_until_another_thread_makes_a_case_ready():
    a, b = cf.make_chan(), cf.make_chan()
    got = []
    run_threads(lambda: got.append(cf.select([cf.recv_case(a), cf.recv_case(b)])),
                lambda: b.send(9))
    assert got == [(1, 9, True)]
    # And a blocked send case.
    run_threads(lambda: got.append(cf.select([cf.send_case(a, "v"), cf.recv_case(b)])),
                lambda: got.append(a.recv()))
    assert sorted(map(repr, got[1:])) == sorted(map(repr, [(0, None, True), ("v", True)]))


def test_close_wakes_a_blocked_select():
    a, b = cf.make_chan(), cf.make_chan()
    got = []
    run_threads(lambda: got.append(cf.select([cf.recv_case(a), cf.recv_case(b)])), a.close)
    assert got == [(0, None, False)]


def test_select_chooses_uniformly_among_ready_cases():
    # 3 always-ready cases, 6000 selects: each count is binomial(6000, 1/3), sd 36.5; the bounds
    # are 8 sd away (a false failure about once in 10^15 runs), and a select always taking the
    # first ready case (or never one of them) fails them.
    chans = [cf.make_chan(1) for _ in range(3)]
    for c in chans:
        c.send(0)
    counts = [0, 0, 0]
    recv_cases = [cf.recv_case(c) for c in chans]
    for _ in range(6000):
        i, v, ok = cf.select(recv_cases)
        assert (v, ok) == (0, True)
        counts[i] += 1
        chans[i].send(0)
    assert all(1708 <= n <= 2292 for n in counts), counts


def test_cases_are_reusable_and_describe_themselves():
    ch = cf.make_chan(10)
    send = cf.send_case(ch, 3)
    assert (send.kind, send.value, send.channel) == ("send", 3, ch)
    assert repr(send).startswith("send_case(<chanflow.Channel of Object") and repr(send).endswith(
        ", 3)")
    for _ in range(5):
        assert cf.select([send]) == (0, None, True)
    assert [ch.recv()[0] for _ in range(5)] == [3] * 5
    recv = cf.recv_case(ch)
    assert (recv.kind, recv.value) == ("recv", None)
    assert repr(cf.recv_case(None)) == "recv_case(None)"


def test_send_case_checks_the_element_type_when_made():
    with pytest.raises(cf.TypeError, match="carries Tensor"):
        cf.send_case(cf.make_chan(1, "Tensor"), "text")


# ---- timeouts -----------------------------------------------------------------------------------

@pytest.mark.parametrize("call", ["recv", "send", "select"])
def test_timeouts_raise_deadline_exceeded(call):
    ch = cf.make_chan()  # unbuffered, nobody on the other side
    ops = {"recv": lambda: ch.recv(timeout=0.05), "send": lambda: ch.send(1, timeout=0.05),
           "select": lambda: cf.select([cf.recv_case(ch)], timeout=0.05)}
    start = time.monotonic()
    with pytest.raises(cf.DeadlineExceededError, match="timed out after") as info:
        ops[call]()
    assert time.monotonic() - start >= 0.05
    assert isinstance(info.value, TimeoutError)


def test_a_timeout_does_not_stop_an_operation_that_can_proceed():
    ch = cf.make_chan(1)
    ch.send(1, timeout=0)
    assert ch.recv(timeout=0) == (1, True)
    got = []
    run_threads(lambda: got.append(ch.recv(timeout=60)), lambda: ch.send(2, timeout=60))
    assert got == [(2, True)]


# ---- errors from bad input ----------------------------------------------------------------------

@pytest.mark.parametrize("args, error, message", [
    (("4",), cf.TypeError, "capacity must be an int, got 'str'"),
    ((True,), cf.TypeError, "capacity must be an int, got 'bool'"),
    ((-1,), ValueError, "capacity must be between 0 and"),
    ((2**70,), ValueError, "capacity must be between 0 and"),
    ((0, 5), cf.TypeError, "elem must be a type key str"),
    ((0, "Tensor(float128)"), ValueError, r"elem must be 'Object'.*got 'Tensor\(float128\)'"),
    ((0, "tensor"), ValueError, "got 'tensor'"),
    ((0, None, 7), cf.TypeError, "name must be a str or None, got 'int'"),
])
def test_make_chan_rejects_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        cf.make_chan(*args)


def test_bad_values_timeouts_and_cases_raise_typed_errors():
    ch = cf.make_chan(1)
    with pytest.raises(cf.TypeError,
                       match=r"Channel.send: value: cannot convert a Python 'object'"):
        ch.send(object())
    with pytest.raises(cf.TypeError, match="Channel.try_send: value"):
        ch.try_send({1, 2})
    with pytest.raises(cf.TypeError, match="does not fit in int64"):
        ch.send(2**64)
    with pytest.raises(cf.TypeError,
                       match="timeout must be a number of seconds or None, got 'str'"):
        ch.recv(timeout="1s")
    with pytest.raises(ValueError, match="timeout must be >= 0 seconds, got -1"):
        ch.send(1, timeout=-1)
    with pytest.raises(ValueError, match="timeout must be >= 0"):
        cf.select([cf.recv_case(ch)], timeout=float("nan"))
    with pytest.raises(cf.TypeError, match=r"select: cases\[1\] must be a recv_case\(\) or "
                                           r"send_case\(\), got '.*Channel'"):
        cf.select([cf.recv_case(ch), ch])
    with pytest.raises(cf.TypeError, match="select: cases must be a list"):
        cf.select(cf.recv_case(ch))
    with pytest.raises(cf.TypeError, match="recv_case: channel must be a chanflow.Channel or None"):
        cf.recv_case(3)
    with pytest.raises(cf.TypeError, match="send_case: channel must be"):
        cf.send_case("ch", 3)
    with pytest.raises(cf.TypeError, match="send_case: value: cannot convert"):
        cf.send_case(ch, object())
    with pytest.raises(ValueError, match="no cases and no default"):
        cf.select([])
    assert len(ch) == 0  # nothing was sent by the failed calls


# ---- programs: Executor.run(channels=...) and channel fetches -----------------------------------

def worker_program(workers):
    """`workers` go blocks, each looping: receive v from channel `in`, select-send v + 1 to
    `out_a` or `out_b` (whichever is ready; random when both), until `in` is closed and drained.
    The three channel variables are declared without channel_create: the caller binds them."""
    program = fluid.Program()
    with fluid.program_guard(program):
        b0 = program.current_block()
        inp = b0.create_var(name="in", type=FVT.CHANNEL)
        outs = [b0.create_var(name=n, type=FVT.CHANNEL) for n in ("out_a", "out_b")]
        for _ in range(workers):
            with fluid.Go():
                blk = fluid.default_main_program().current_block()
                v = blk.create_var(name=unique_name.generate("v"), type=FVT.LOD_TENSOR,
                                   dtype=FVT.INT64)
                one = fill_constant(shape=[1], dtype="int64", value=1)
                v, ok = fluid.channel_recv(inp, v)
                loop = fluid.layers.While(cond=ok)
                with loop.block():
                    w = elementwise_add(v, one)
                    with fluid.Select() as select:
                        with select.case(fluid.channel_send, outs[0], w):
                            pass
                        with select.case(fluid.channel_send, outs[1], w):
                            pass
                    _, status = fluid.channel_recv(inp, v)
                    assign(status, ok)
    return cf.Program.from_binary(program.desc.serialize_to_string())


@pytest.fixture(scope="module")
def ex():
    return cf.Executor(workers=2)


@pytest.fixture(scope="module")
def workers4():
    return worker_program(4)


def test_python_threads_and_green_threads_under_stress(ex, workers4):
    # 3 Python producers send 2,000 int64 tensors each to 4 green threads of a running program,
    # which answer v + 1 on two channels; 2 Python consumers select over both. Every answer
    # arrives exactly once.
    producers, per_producer = 3, 2000
    inp = cf.make_chan(16, elem="Tensor")
    out_a, out_b = cf.make_chan(0, elem="Tensor"), cf.make_chan(8, elem="Tensor(int64)")
    received = [[], []]
    chosen = [[0, 0], [0, 0]]
    run_error = []

    def run():
        try:
            ex.run(workers4, channels={"in": inp, "out_a": out_a, "out_b": out_b})
        except BaseException as e:  # noqa: B902
            run_error.append(e)
        finally:
            out_a.close()
            out_b.close()

    remaining = [producers]
    lock = threading.Lock()

    def producer(p):
        def body():
            for k in range(per_producer):
                inp.send(np.array([p * per_producer + k], np.int64))
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                inp.close()  # the last producer says "no more values"
        return body

    def consumer(c):
        def body():
            cases = [cf.recv_case(out_a), cf.recv_case(out_b)]
            live = 2
            while live:
                i, v, ok = cf.select(cases)
                if not ok:
                    cases[i] = cf.recv_case(None)  # closed: switch the case off, as Go does
                    live -= 1
                    continue
                chosen[c][i] += 1
                received[c].append(int(v.numpy()[0]))
        return body

    run_threads(run, *[producer(p) for p in range(producers)], consumer(0), consumer(1))
    assert run_error == []
    total = producers * per_producer
    got = sorted(received[0] + received[1])
    assert got == list(range(1, total + 1))  # no loss, no duplication
    assert sum(map(sum, chosen)) == total


def test_stress_ordering_of_close(ex, workers4):
    # The same pipeline, with `in` closed by the last producer to finish: the run ends, its
    # thread closes the outputs, the consumers' iteration ends. Repeated on one executor.
    for rnd in range(3):
        inp = cf.make_chan(4, "Tensor")
        out_a, out_b = cf.make_chan(2, "Tensor"), cf.make_chan(0, "Tensor")
        remaining = [4]
        lock = threading.Lock()
        sums = []

        def producer(p):
            def body():
                for k in range(500):
                    inp.send(np.array([p * 1000 + k], np.int64))
                with lock:
                    remaining[0] -= 1
                    last = remaining[0] == 0
                if last:
                    inp.close()
            return body

        def run():
            try:
                ex.run(workers4, channels={"in": inp, "out_a": out_a, "out_b": out_b})
            finally:
                out_a.close()
                out_b.close()

        def drain(ch):
            def body():
                s = n = 0
                for t in ch:
                    s += int(t.numpy()[0])
                    n += 1
                with lock:
                    sums.append((s, n))
            return body

        run_threads(*[producer(p) for p in range(4)], run, drain(out_a), drain(out_b))
        expected = sum(p * 1000 + k + 1 for p in range(4) for k in range(500))
        assert sum(s for s, _ in sums) == expected, rnd
        assert sum(n for _, n in sums) == 2000, rnd


def test_python_thread_ping_pong_with_selects():
    # Two Python threads, two unbuffered channels, 3,000 round trips; the echo side selects
    # between the ping channel and a quit channel.
    ping, pong, quit_ = cf.make_chan(), cf.make_chan(), cf.make_chan()
    echoed = []

    def echo():
        cases = [cf.recv_case(ping), cf.recv_case(quit_)]
        while True:
            i, v, ok = cf.select(cases)
            if i == 1:
                return
            echoed.append(v)
            pong.send(v * 2)

    def driver():
        total = 0
        for k in range(3000):
            ping.send(k)
            v, ok = pong.recv()
            assert ok
            total += v
        quit_.close()
        assert total == 2 * sum(range(3000))

    run_threads(echo, driver)
    assert echoed == list(range(3000))


def test_many_python_producers_and_consumers():
    producers, consumers, per = 4, 3, 2500
    ch = cf.make_chan(8)
    done = cf.make_chan(producers)
    got = [[] for _ in range(consumers)]

    def producer(p):
        def body():
            for k in range(per):
                ch.send(p * per + k)
            done.send(p)
        return body

    def closer():
        assert sorted(done.recv()[0] for _ in range(producers)) == list(range(producers))
        ch.close()

    def consumer(c):
        return lambda: got[c].extend(ch)

    run_threads(*[producer(p) for p in range(producers)], closer,
                *[consumer(c) for c in range(consumers)])
    assert sorted(v for g in got for v in g) == list(range(producers * per))


def test_values_dropped_by_green_threads_release_their_arrays(ex, workers4):
    # The arrays sent to the program are held by tensors that its green threads drop (without
    # the GIL): their Python references are released by the time run() returns.
    a = np.array([5], np.int64)
    base = sys.getrefcount(a)
    inp, out_a, out_b = cf.make_chan(64, "Tensor"), cf.make_chan(64), cf.make_chan(64)
    for _ in range(50):
        inp.send(a)
    assert sys.getrefcount(a) > base  # the buffered tensors hold it
    inp.close()
    ex.run(workers4, channels={"in": inp, "out_a": out_a, "out_b": out_b})
    assert len(out_a) + len(out_b) == 50
    assert sys.getrefcount(a) == base


def test_program_channels_fit_their_declarations(ex):
    p = cf.Program.from_blocks([
        block(0, -1, [chvar("c", VT.INT64), tvar("v", VT.INT64, [1]), tvar("s", VT.BOOL)], [
            op("channel_recv", [("Channel", ["c"])], [("Out", ["v"]), ("Status", ["s"])])])])
    for elem in ("Tensor", "Tensor(int64)"):
        ch = cf.make_chan(1, elem)
        ch.send(np.array([3], np.int64))
        v, s = ex.run(p, fetch=["v", "s"], channels={"c": ch})
        assert v.numpy().tolist() == [3] and s.numpy().tolist() == [True]
    for elem in ("Object", "Tensor(float32)", "Int"):
        with pytest.raises(cf.TypeError, match=re.escape(
                "channel feed 'c': the variable is a channel of INT64, the fed channel carries "
                + elem)):
            ex.run(p, channels={"c": cf.make_chan(1, elem)})


def test_binding_a_channel_the_program_creates_is_refused(ex):
    # The program makes `c` itself and then receives from it. The caller's channel, bound to
    # `c`, used to be replaced by the channel_create without a word, so the receive waited on
    # the program's own empty channel (timeout= makes a regression fail instead of hang).
    p = cf.Program.from_blocks([
        block(0, -1, [chvar("c", VT.INT64, 1), tvar("v", VT.INT64, [1]), tvar("s", VT.BOOL)], [
            op("channel_create", outputs=[("Out", ["c"])],
               attrs=[("data_type", VT.INT64), ("capacity", 1)]),
            op("channel_recv", [("Channel", ["c"])], [("Out", ["v"]), ("Status", ["s"])])])])
    mine = cf.make_chan(1, "Tensor")
    mine.send(np.array([7], np.int64))
    with pytest.raises(cf.ProgramError, match=re.escape(
            "channel feed 'c': block 0, op 0 ('channel_create') makes this variable, so a bound "
            "channel would be replaced; bind a channel variable the program only declares")) as e:
        ex.run(p, fetch=["v"], channels={"c": mine}, timeout=10)
    assert (e.value.block, e.value.op, e.value.op_type) == (0, 0, "channel_create")
    assert len(mine) == 1  # nothing ran
    # The same with Fluid: a variable of fluid.make_channel cannot be bound; one the program only
    # declares (create_var) can.
    program = fluid.Program()
    with fluid.program_guard(program):
        made = fluid.make_channel(dtype=FVT.LOD_TENSOR, capacity=1)
        declared = program.global_block().create_var(name="declared", type=FVT.CHANNEL)
        out = program.global_block().create_var(name="out", dtype="int64")
        fluid.channel_recv(declared, out)
    native = cf.Program.from_binary(program.desc.serialize_to_string())
    with pytest.raises(cf.ProgramError, match="channel feed '%s': block 0, op 0" % made.name):
        ex.run(native, channels={made.name: cf.make_chan(1, "Tensor")}, timeout=10)
    (got,) = ex.run(native, fetch=["out"], channels={"declared": mine}, timeout=10)
    assert got.numpy().tolist() == [7]


def test_a_fetched_channel_variable_is_a_channel(ex):
    p = cf.Program.from_blocks([
        block(0, -1, [chvar("c", VT.FP32, capacity=2), tvar("x", VT.FP32, [2])], [
            op("channel_create", outputs=[("Out", ["c"])],
               attrs=[("data_type", VT.FP32), ("capacity", 2)]),
            op("fill_constant", outputs=[("Out", ["x"])],
               attrs=[("shape", [2]), ("dtype", VT.FP32), ("value", 1.5)]),
            op("channel_send", [("Channel", ["c"]), ("X", ["x"])])])])
    ch, x = ex.run(p, fetch=["c", "x"])
    assert isinstance(ch, cf.Channel) and isinstance(x, cf.Tensor)
    assert (ch.elem, ch.capacity, len(ch)) == ("Tensor(float32)", 2, 1)
    v, ok = ch.recv()
    assert ok and v.numpy().tolist() == [1.5, 1.5]
    ch.close()  # the run is over; the channel lives on in Python


def test_fluid_fetch_of_a_channel_variable():
    program = fluid.Program()
    with fluid.program_guard(program):
        ch = fluid.make_channel(dtype=FVT.LOD_TENSOR, capacity=1)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(cf.TypeError, match=r"fetch_list\[0\] \('channel_\d+'\) is a channel"):
        exe.run(program, fetch_list=[ch])
    (got,) = exe.run(program, fetch_list=[ch], return_numpy=False)
    assert isinstance(got, cf.Channel) and got.capacity == 1


@pytest.mark.parametrize("channels, error, message", [
    ([("in", None)], cf.TypeError, "channels must be a dict of variable name -> chanflow.Channel"),
    ({1: None}, cf.TypeError, "channels keys must be str variable names, got 'int' 1"),
    ({"in": np.zeros(1)}, cf.TypeError,
     r"channels\['in'\] must be a chanflow.Channel \(made by make_chan\), got 'numpy.ndarray'"),
    ({"nope": "make"}, cf.Error, "channel feed 'nope': block 0 declares no variable"),
    ({"v": "make"}, cf.TypeError, "channel feed 'v': the variable is a LOD_TENSOR, not a channel"),
])
def test_executor_run_rejects_bad_channels(ex, channels, error, message):
    p = cf.Program.from_blocks([block(0, -1, [chvar("in"), tvar("v", VT.INT64)], [])])
    if isinstance(channels, dict):
        channels = {k: (cf.make_chan() if isinstance(v, str) else v) for k, v in channels.items()}
    with pytest.raises(error, match=message):
        ex.run(p, channels=channels)


def test_fetch_errors_are_unchanged(ex):
    p = cf.Program.from_blocks([block(0, -1, [tvar("v", VT.INT64)], [])])
    with pytest.raises(cf.Error, match="fetch 'nope': block 0 declares no such variable"):
        ex.run(p, fetch=["nope"])
    with pytest.raises(cf.Error, match="fetch 'v': the program never wrote the variable"):
        ex.run(p, fetch=["v"])


# ---- deadlock and Ctrl-C, in child processes ----------------------------------------------------

PRELUDE = f"""
import signal, sys, threading, time
sys.path.insert(0, {HERE!r})
import numpy as np
import chanflow as cf
def say(*a):
    print(*a, flush=True)
"""


def Child(*body, prelude=PRELUDE):
    """A child process running PRELUDE + body (child_process.Child)."""
    return child_process.Child(prelude + "".join(textwrap.dedent(part) for part in body))


def test_a_recv_nothing_can_answer_raises_deadlock_error():
    child = Child("""
        ch = cf.make_chan()
        try:
            ch.recv()
        except cf.DeadlockError as e:
            say("deadlock", "recv chan" in str(e))
        try:
            cf.select([cf.recv_case(ch), cf.send_case(ch, 1)])
        except cf.DeadlockError:
            say("deadlock in select")
    """)
    assert child.line() == "deadlock True"
    assert child.line() == "deadlock in select"
    child.finish()


def test_a_thread_started_before_import_may_still_send():
    # Threads alive when chanflow is loaded are taken for helpers that never wake a waiter (BLAS
    # threads); the module tells the runtime which of them are the script's own, so main's
    # receive waits for this one instead of reporting a deadlock.
    child = Child("""
        import queue, sys, threading, time
        go = queue.Queue()
        box = []
        def helper():
            go.get()
            time.sleep(0.2)  # the scenario: a slow thread, busy elsewhere while main waits
            box[0].send("late")
        t = threading.Thread(target=helper)
        t.start()
        import chanflow as cf
        ch = cf.make_chan()
        box.append(ch)
        go.put(1)
        print(ch.recv(), flush=True)
        t.join()
    """, prelude="")
    assert child.line() == "('late', True)"
    child.finish()


# The child's stdin thread is a plain thread that can still send: deadlock detection waits for it.
STDIN_SENDER = """
    ch = cf.make_chan()
    def feed():
        for text in sys.stdin:
            ch.send(int(text))
    threading.Thread(target=feed, daemon=True).start()
"""


def test_ctrl_c_interrupts_blocked_recv_send_and_select_on_the_main_thread():
    child = Child(STDIN_SENDER, """
        other = cf.make_chan()
        ops = [("recv", ch.recv), ("send", lambda: other.send(1)),
               ("select", lambda: cf.select([cf.recv_case(ch), cf.recv_case(other)])),
               ("timed recv", lambda: ch.recv(timeout=120))]
        for name, fn in ops:
            try:
                say("ready", name)
                fn()
                say("returned?!")
            except KeyboardInterrupt:
                say("interrupted", name)
        # The channel still works, and Python's own SIGINT handling is back.
        say("got", ch.recv())
        try:
            say("idle")
            time.sleep(60)
        except KeyboardInterrupt:
            say("idle interrupted")
    """)
    for name in ("recv", "send", "select", "timed recv"):
        assert child.line() == f"ready {name}"
        sent = child.interrupt()
        assert child.line() == f"interrupted {name}"
        assert time.monotonic() - sent < BOUND
    child.write("7\n")
    assert child.line() == "got (7, True)"
    assert child.line() == "idle"
    child.interrupt()
    assert child.line() == "idle interrupted"
    child.finish()


def test_a_handler_that_returns_lets_the_blocked_recv_go_on():
    # Python's rule for interrupted system calls (PEP 475): the handler runs, and when it does
    # not raise the call resumes.
    child = Child(STDIN_SENDER, """
        def handler(signo, frame):
            say("handled")
        signal.signal(signal.SIGINT, handler)
        say("ready")
        say("got", ch.recv())
    """)
    assert child.line() == "ready"
    child.interrupt()
    assert child.line() == "handled"
    child.write("42\n")
    assert child.line() == "got (42, True)"
    child.finish()


@pytest.mark.parametrize("op", ["recv", "send"])
def test_a_thread_released_while_python_exits_does_not_abort_the_process(op):
    # A daemon thread blocked in a channel operation is released by a finalizer that runs while
    # the interpreter finalizes. CPython then no longer lets the thread take the GIL back; the
    # process must still exit cleanly (not abort in the binding's GIL handling). Several children,
    # since each exit is one chance for the thread to wake before the process is gone.
    blocked, wake = (("ch.recv()", "ch.try_send(1)") if op == "recv" else
                     ("ch.send(7)", "ch.try_recv()[1]"))
    for _ in range(4):
        child = Child(f"""
            import os
            ch = cf.make_chan()
            started = threading.Event()
            def blocked():
                started.set()
                {blocked}
            class WakeAtExit:
                def __init__(self, ch):
                    self.ch = ch
                def __del__(self):
                    # The thread is parked (or about to be): wait for it, within a bound.
                    deadline = time.monotonic() + 30
                    while not {wake.replace("ch.", "self.ch.")}:
                        if time.monotonic() > deadline:
                            os.write(1, b"missed\\n")
                            return
                        time.sleep(0.001)
                    os.write(1, b"woke\\n")
            threading.Thread(target=blocked, daemon=True).start()
            started.wait()
            # Held by a module of its own: the daemon thread's frame keeps __main__'s globals
            # alive for good, so an object there is never finalized; this module is cleared
            # while the interpreter finalizes, which runs the __del__ then.
            import types
            sys.modules["wake_at_exit"] = types.ModuleType("wake_at_exit")
            sys.modules["wake_at_exit"].waker = WakeAtExit(ch)
            say("exiting")
        """)
        assert child.line() == "exiting"
        assert child.line() == "woke"
        child.finish()
