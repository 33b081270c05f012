"""chanflow.Executor.run: feeds and fetches of every dtype, each error kind from a real cause,
bad arguments, timeouts, runs from several Python threads."""
import pickle
import threading
import time
import traceback

import numpy as np
import pytest

import chanflow as cf
from conftest import DTYPE_VT, VT, assign_program, block, chvar, forever_program, op, tvar


def addr(a):
    return a.__array_interface__["data"][0]


@pytest.fixture(scope="module")
def ex():
    return cf.Executor(workers=2)


@pytest.mark.parametrize("dtype", sorted(DTYPE_VT))
def test_every_dtype_round_trips_through_feed_and_fetch(ex, dtype):
    p = assign_program(DTYPE_VT[dtype])
    a = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
    (y,) = ex.run(p, feed={"x": a}, fetch=["y"])
    assert isinstance(y, cf.Tensor) and y.dtype == np.dtype(dtype) and y.shape == (3, 4)
    np.testing.assert_array_equal(y.numpy(), a)


def test_fetch_order_and_feed_conversion(ex):
    p = cf.Program.from_blocks([block(0, -1, [tvar("x", VT.INT64), tvar("y", VT.INT64),
                                              tvar("z", VT.INT64)],
                                      [op("assign", [("X", ["x"])], [("Out", ["y"])]),
                                       op("elementwise_add", [("X", ["x"]), ("Y", ["y"])],
                                          [("Out", ["z"])])])])
    z, y, x = ex.run(p, feed={"x": [1, 2, 3]}, fetch=("z", "y", "x"))
    np.testing.assert_array_equal(z.numpy(), [2, 4, 6])
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3])
    assert ex.run(p, feed={"x": [1]}) == []


def test_feed_is_not_copied(ex):
    a = np.arange(1 << 16, dtype=np.float32)
    (y,) = ex.run(assign_program(VT.FP32), feed={"x": a}, fetch=["y"])
    assert addr(y.numpy()) == addr(a)  # assign shares the (immutable) storage


def test_shape_error_from_mismatched_elementwise_add(ex):
    p = cf.Program.from_blocks([block(0, -1, [tvar("x"), tvar("y"), tvar("z")],
                                      [op("elementwise_add", [("X", ["x"]), ("Y", ["y"])],
                                          [("Out", ["z"])])])])
    with pytest.raises(cf.ShapeError, match=r"\(2, 3\) and \(4,\)") as info:
        ex.run(p, feed={"x": np.ones((2, 3), np.float32), "y": np.ones(4, np.float32)},
               fetch=["z"])
    e = info.value
    assert isinstance(e, cf.ProgramError) and isinstance(e, ValueError)
    assert (e.block, e.op, e.op_type) == (0, 0, "elementwise_add")


def test_deadlock_error_names_the_parked_green_threads(ex):
    p = cf.Program.from_blocks([
        block(0, -1, [chvar("a"), chvar("b"), tvar("v", VT.INT64), tvar("s", VT.BOOL)], [
            op("channel_create", outputs=[("Out", ["a"])], attrs=[("data_type", VT.INT64)]),
            op("channel_create", outputs=[("Out", ["b"])], attrs=[("data_type", VT.INT64)]),
            op("go", inputs=[("X", ["b"])], attrs=[("sub_block", cf.BlockRef(1))]),
            op("channel_recv", [("Channel", ["a"])], [("Out", ["v"]), ("Status", ["s"])])]),
        block(1, 0, [tvar("w", VT.INT64), tvar("t", VT.BOOL)],
              [op("channel_recv", [("Channel", ["b"])], [("Out", ["w"]), ("Status", ["t"])])])])
    # No timeout: a pending deadline is a timer that could wake the run, so not a deadlock (a
    # detection failure would hang until ctest's timeout).
    with pytest.raises(cf.DeadlockError) as info:
        ex.run(p)
    assert "go@block1" in str(info.value) and "recv" in str(info.value)


def test_channel_closed_error_from_send_on_a_closed_channel(ex):
    p = cf.Program.from_blocks([block(0, -1, [chvar("c", capacity=1), tvar("v", VT.INT64, [1])], [
        op("channel_create", outputs=[("Out", ["c"])], attrs=[("data_type", VT.INT64),
                                                               ("capacity", 1)]),
        op("fill_constant", outputs=[("Out", ["v"])], attrs=[("shape", [1]),
                                                              ("dtype", VT.INT64)]),
        op("channel_close", [("Channel", ["c"])]),
        op("channel_send", [("Channel", ["c"]), ("X", ["v"])])])])
    with pytest.raises(cf.ChannelClosedError) as info:
        ex.run(p)
    assert isinstance(info.value, cf.ProgramError) and info.value.op == 3
    assert info.value.channel == "c"


def closed_channel_programs():
    """(program, the variable its failing channel op names, block and op of that op)."""
    make = op("channel_create", outputs=[("Out", ["jobs"])], attrs=[("data_type", VT.INT64)])
    value = op("fill_constant", outputs=[("Out", ["v"])], attrs=[("shape", [1]),
                                                                  ("dtype", VT.INT64)])
    vars_ = [chvar("jobs"), chvar("other"), tvar("v", VT.INT64, [1])]
    close_twice = cf.Program.from_blocks([block(0, -1, vars_, [
        make, op("channel_close", [("Channel", ["jobs"])]),
        op("channel_close", [("Channel", ["jobs"])])])])
    close_nil = cf.Program.from_blocks([block(0, -1, vars_, [
        make, op("channel_close", [("Channel", ["other"])])])])
    # The send fails in a go block; the caller learns which variable held the channel.
    send_in_go = cf.Program.from_blocks([
        block(0, -1, vars_, [make, op("channel_close", [("Channel", ["jobs"])]),
                             op("go", inputs=[("X", ["jobs"])],
                                attrs=[("sub_block", cf.BlockRef(1))])]),
        block(1, 0, [], [value, op("channel_send", [("Channel", ["jobs"]), ("X", ["v"])])])])
    return [(close_twice, "jobs", 0, 2), (close_nil, "other", 0, 1), (send_in_go, "jobs", 1, 1)]


@pytest.mark.parametrize("case", range(3))
def test_channel_closed_error_names_the_closed_channel_variable(ex, case):
    program, channel, block_index, op_index = closed_channel_programs()[case]
    with pytest.raises(cf.ChannelClosedError) as info:
        ex.run(program)
    e = info.value
    assert isinstance(e, cf.ProgramError)
    assert (e.channel, e.block, e.op) == (channel, block_index, op_index)
    back = pickle.loads(pickle.dumps(e))
    assert back.channel == channel


def test_channel_closed_error_of_a_python_channel_names_none():
    ch = cf.make_chan(1, "Tensor")
    ch.close()
    with pytest.raises(cf.ChannelClosedError) as info:
        ch.close()
    assert info.value.channel == "" and not isinstance(info.value, cf.ProgramError)


def test_program_error_positions_a_verifier_failure(ex):
    p = cf.Program.from_blocks([block(0, -1, [tvar("x")],
                                      [op("assign", [("X", ["x"])], [("Out", ["missing"])])])])
    with pytest.raises(cf.ProgramError) as info:
        ex.run(p)
    assert (info.value.block, info.value.op, info.value.op_type) == (0, 0, "assign")


def test_unknown_fetch_is_a_not_found_error_and_a_key_error(ex):
    with pytest.raises(KeyError) as info:
        ex.run(assign_program(VT.FP32), feed={"x": np.zeros(1, np.float32)}, fetch=["y", "nope"])
    e = info.value
    assert type(e) is cf.NotFoundError and isinstance(e, cf.Error)
    assert str(e) == "fetch 'nope': block 0 declares no such variable"  # not a key's repr
    assert "".join(traceback.format_exception_only(type(e), e)) == \
        "chanflow.NotFoundError: fetch 'nope': block 0 declares no such variable\n"


def mismatch_program():
    """Sends an INT64 tensor on a channel that carries FP32 ones: refused by the verifier."""
    return cf.Program.from_blocks([block(0, -1, [chvar("c", VT.FP32, 1), tvar("v", VT.INT64, [1])], [
        op("channel_create", outputs=[("Out", ["c"])], attrs=[("data_type", VT.FP32),
                                                               ("capacity", 1)]),
        op("fill_constant", outputs=[("Out", ["v"])], attrs=[("shape", [1]),
                                                              ("dtype", VT.INT64)]),
        op("channel_send", [("Channel", ["c"]), ("X", ["v"])])])])


def test_channel_element_dtype_mismatch_is_a_type_error(ex):
    p = mismatch_program()
    for call in (lambda: ex.run(p), p.verify):
        with pytest.raises(cf.TypeError, match=r"carries FP32 tensors \(type mismatch\)") as info:
            call()
        e = info.value
        assert isinstance(e, cf.ProgramError) and isinstance(e, TypeError)
        assert (e.block, e.op, e.op_type) == (0, 2, "channel_send")


def failures(ex):
    """One error of each combined kind (ProgramError and the op's kind), from real causes."""
    shape = cf.Program.from_blocks([block(0, -1, [tvar("x"), tvar("y"), tvar("z")],
                                          [op("elementwise_add", [("X", ["x"]), ("Y", ["y"])],
                                              [("Out", ["z"])])])])
    closed = cf.Program.from_blocks([block(0, -1, [chvar("c", capacity=1),
                                                   tvar("v", VT.INT64, [1])], [
        op("channel_create", outputs=[("Out", ["c"])], attrs=[("data_type", VT.INT64),
                                                               ("capacity", 1)]),
        op("fill_constant", outputs=[("Out", ["v"])], attrs=[("shape", [1]),
                                                              ("dtype", VT.INT64)]),
        op("channel_close", [("Channel", ["c"])]),
        op("channel_send", [("Channel", ["c"]), ("X", ["v"])])])])
    out = []
    for kind, call in [
        (cf.ShapeError, lambda: ex.run(shape, feed={"x": np.ones((2, 3), np.float32),
                                                    "y": np.ones(4, np.float32)})),
        (cf.TypeError, lambda: ex.run(mismatch_program())),
        (cf.ChannelClosedError, lambda: ex.run(closed)),
    ]:
        with pytest.raises(kind) as info:
            call()
        out.append((kind, info.value))
    return out


def test_errors_read_as_the_table_names_them(ex):
    for kind, e in failures(ex):
        # The traceback names the table's class, not a combined one ('ProgramShapeError').
        shown = "".join(traceback.format_exception_only(type(e), e))
        assert shown.startswith("chanflow.%s: block 0, op " % kind.__name__), shown
        assert type(e).__name__ == kind.__name__ and type(e).__module__ == "chanflow"
        assert repr(e).startswith(kind.__name__ + "(")
        # Both bases still catch it.
        for base in (kind, cf.ProgramError, cf.Error):
            try:
                raise e
            except base:
                pass
        # It pickles (multiprocessing sends errors so), keeping its class and attributes.
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e) and back.args == e.args
        assert (back.block, back.op, back.op_type) == (e.block, e.op, e.op_type)
    assert "ProgramShapeError" not in dir(cf)


def test_limit_error_from_max_threads():
    # A while loop starting go blocks that all wait on a channel nobody sends to: the third
    # live green thread passes max_threads=2.
    p = cf.Program.from_blocks([
        block(0, -1, [chvar("c"), tvar("cond", VT.BOOL, [1])], [
            op("channel_create", outputs=[("Out", ["c"])], attrs=[("data_type", VT.INT64)]),
            op("fill_constant", outputs=[("Out", ["cond"])],
               attrs=[("shape", [1]), ("dtype", VT.BOOL), ("value", 1.0)]),
            op("while", inputs=[("X", ["c"]), ("Condition", ["cond"])],
               attrs=[("sub_block", cf.BlockRef(1))])]),
        block(1, 0, [], [op("go", inputs=[("X", ["c"])], attrs=[("sub_block", cf.BlockRef(2))])]),
        block(2, 1, [tvar("v", VT.INT64), tvar("s", VT.BOOL)],
              [op("channel_recv", [("Channel", ["c"])], [("Out", ["v"]), ("Status", ["s"])])])])
    with pytest.raises(cf.LimitError) as info:
        cf.Executor(max_threads=2).run(p, timeout=60)
    assert info.value.limit == "max_threads" and "max_threads" in str(info.value)


def test_type_error_from_a_feed_of_the_wrong_dtype(ex):
    with pytest.raises(cf.TypeError, match="feed 'x'.*FP32.*float64"):
        ex.run(assign_program(VT.FP32), feed={"x": np.zeros(2)}, fetch=["y"])


@pytest.mark.parametrize("kwargs,exc,pattern", [
    (dict(program=None), cf.TypeError, "program must be a chanflow.Program, got 'NoneType'"),
    (dict(feed=[("x", 1)]), cf.TypeError, "feed must be a dict"),
    (dict(feed={1: [1.0]}), cf.TypeError, "feed keys must be str"),
    (dict(feed={"x": np.array([1j])}), cf.TypeError, "feed 'x'.*complex128"),
    (dict(feed={"x": None}), cf.TypeError, "feed 'x'.*None"),
    (dict(fetch="y"), cf.TypeError, "fetch must be a list"),
    (dict(fetch=["y", 3]), cf.TypeError, r"fetch\[1\] must be a str"),
    (dict(fetch=["nope"]), cf.NotFoundError, "^fetch 'nope': block 0 declares no such variable$"),
    (dict(feed={"nope": [1.0]}), cf.Error, "nope"),
    (dict(timeout="1s"), cf.TypeError, "timeout must be a number"),
    (dict(timeout=-1), ValueError, "timeout must be >= 0"),
    (dict(timeout=float("nan")), ValueError, "timeout must be >= 0"),
])
def test_bad_arguments(ex, kwargs, exc, pattern):
    args = dict(program=assign_program(VT.FP32), feed={"x": np.zeros(1, np.float32)},
                fetch=["y"])
    args.update(kwargs)
    with pytest.raises(exc, match=pattern):
        ex.run(**args)


def test_bad_executor_options():
    with pytest.raises(ValueError, match="workers"):
        cf.Executor(workers=-1)
    with pytest.raises(TypeError):
        cf.Executor(workers="two")


def test_timeout_raises_deadline_exceeded_naming_what_ran(ex):
    start = time.monotonic()
    with pytest.raises(cf.DeadlineExceededError) as info:
        ex.run(forever_program(), timeout=0.2)
    elapsed = time.monotonic() - start
    assert 0.2 <= elapsed < 5.0
    msg = str(info.value)
    assert "still running" in msg and "channel_recv" in msg and "go@block1" in msg
    assert isinstance(info.value, TimeoutError)
    # The executor is still usable.
    (y,) = ex.run(assign_program(VT.INT32), feed={"x": np.int32([7])}, fetch=["y"])
    assert y.numpy()[0] == 7


def test_runs_from_several_python_threads_at_once(ex):
    p = assign_program(VT.INT64)
    results, errors = {}, []

    def worker(i):
        try:
            for _ in range(50):
                (y,) = ex.run(p, feed={"x": [i]}, fetch=["y"])
                assert int(y.numpy()[0]) == i
            results[i] = True
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 4


def test_the_gil_is_released_during_a_run(ex):
    # While the main thread's run blocks, another Python thread makes progress.
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        with pytest.raises(cf.DeadlineExceededError):
            ex.run(forever_program(), timeout=0.3)
    finally:
        stop.set()
        t.join()
    assert len(ticks) > 10
