"""fluid.layers.py_reader / read_file: a producer thread sends batches over chanflow channels,
each Executor.run receives one; EOFException at the end of a pass, reset() + start() for the
next, the provider's exceptions raised by the run, no thread left behind. The reference for the
training is the same program fed the same batches through feed= (data layers)."""

import threading

import numpy as np
import pytest

import chanflow
import chanflow.fluid as fluid
from chanflow.fluid import layers

N, BATCH = 10, 4  # batches of 4, 4, 2


def samples():
    rng = np.random.RandomState(3)
    xs = rng.randn(N, 3).astype("float32")
    ys = (xs.sum(axis=1) > 0).astype("int64")
    for x, y in zip(xs, ys):
        yield x, np.array([y])


def net(x, y):
    const = fluid.initializer.Constant
    pred = layers.fc(x, 2, act="softmax",
                     param_attr=fluid.ParamAttr(name="w", initializer=const(0.1)),
                     bias_attr=fluid.ParamAttr(name="b", initializer=const(0.0)))
    loss = layers.mean(layers.cross_entropy(pred, y))
    fluid.optimizer.SGD(0.5).minimize(loss)
    return loss


def build_reader_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        reader = layers.py_reader(capacity=2, shapes=[(-1, 3), (-1, 1)],
                                  dtypes=["float32", "int64"])
        x, y = layers.read_file(reader)
        loss = net(x, y)
    return main, startup, reader, loss


def run_pass(exe, main, loss):
    losses = []
    with pytest.raises(fluid.core.EOFException):
        while True:
            losses.append(float(exe.run(main, fetch_list=[loss])[0][0]))
            assert len(losses) <= 100
    return losses


def test_two_passes_match_feeding_the_same_batches():
    threads_before = threading.active_count()
    main, startup, reader, loss = build_reader_program()
    reader.decorate_paddle_reader(chanflow.batch(samples, BATCH))
    with fluid.scope_guard(fluid.core.Scope()):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        got = []
        for _ in range(2):
            reader.start()
            got.append(run_pass(exe, main, loss))
            reader.reset()
        w_reader = np.array(fluid.global_scope().find_var("w").get_tensor())
    assert [len(p) for p in got] == [3, 3]
    assert threading.active_count() == threads_before

    # Reference: the same program with data layers, fed each batch.
    main2, startup2 = fluid.Program(), fluid.Program()
    with fluid.program_guard(main2, startup2), fluid.unique_name.guard():
        x = layers.data("x", shape=[3])
        y = layers.data("y", shape=[1], dtype="int64")
        loss2 = net(x, y)
    with fluid.scope_guard(fluid.core.Scope()):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup2)
        want = []
        for _ in range(2):
            p = []
            for batch in chanflow.batch(samples, BATCH)():
                xs = np.array([s[0] for s in batch], np.float32)
                ys = np.array([s[1] for s in batch], np.int64).reshape(-1, 1)
                p.append(float(exe.run(main2, feed={"x": xs, "y": ys}, fetch_list=[loss2])[0][0]))
            want.append(p)
        w_feed = np.array(fluid.global_scope().find_var("w").get_tensor())
    np.testing.assert_array_equal(np.array(got), np.array(want))
    np.testing.assert_array_equal(w_reader, w_feed)
    assert not np.allclose(w_feed, 0.1)  # it trained


def test_tensor_provider_and_reset_mid_pass():
    main, startup, reader, loss = build_reader_program()

    def provider():
        for i in range(50):
            yield np.full((2, 3), i, np.float32), np.array([[0], [1]], np.int64)

    reader.decorate_tensor_provider(provider)
    threads_before = threading.active_count()
    with fluid.scope_guard(fluid.core.Scope()):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        reader.start()
        for _ in range(3):
            exe.run(main, fetch_list=[loss])
        reader.reset()  # the producer is blocked on a full channel: reset stops it
        assert threading.active_count() == threads_before
        with pytest.raises(RuntimeError, match="not started"):
            exe.run(main, fetch_list=[loss])
        reader.start()
        with pytest.raises(RuntimeError, match="reset"):
            reader.start()
        assert len(run_pass(exe, main, loss)) == 50
        reader.reset()
    assert threading.active_count() == threads_before


def test_provider_exception_is_raised_by_the_run():
    main, startup, reader, loss = build_reader_program()

    class Boom(Exception):
        pass

    def provider():
        yield np.ones((2, 3), np.float32), np.array([[0], [0]], np.int64)
        raise Boom("provider failed")

    reader.decorate_tensor_provider(provider)
    with fluid.scope_guard(fluid.core.Scope()):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        w0 = np.array(fluid.global_scope().find_var("w").get_tensor())
        reader.start()
        exe.run(main, fetch_list=[loss])
        w1 = np.array(fluid.global_scope().find_var("w").get_tensor())
        with pytest.raises(Boom, match="provider failed"):
            exe.run(main, fetch_list=[loss])
        # The failed run trained nothing.
        np.testing.assert_array_equal(
            np.array(fluid.global_scope().find_var("w").get_tensor()), w1)
        assert not np.array_equal(w0, w1)
        reader.reset()
        # A batch of the wrong number of slots is the provider's error too.
        reader.decorate_tensor_provider(lambda: iter([(np.ones((2, 3), np.float32),)]))
        reader.start()
        with pytest.raises(ValueError, match="1 slots"):
            exe.run(main, fetch_list=[loss])
        reader.reset()


def test_the_end_is_told_by_the_closed_channel_not_by_the_message():
    # The run fails on another closed channel, whose name quotes the reader's eof channel: that
    # is the program's own ChannelClosedError, not the end of the pass (the error names the
    # channel variable; the message is not read).
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        reader = layers.py_reader(capacity=2, shapes=[(-1, 3), (-1, 1)],
                                  dtypes=["float32", "int64"], name="feed")
        x, y = layers.read_file(reader)
        loss = net(x, y)
        block = main.global_block()
        other = block.create_var(name="copy of '%s'" % reader.eof_var_name,
                                 type=fluid.core.VarDesc.VarType.CHANNEL)
        block.append_op(type="channel_create", outputs={"Out": [other]},
                        attrs={"data_type": int(fluid.core.VarDesc.VarType.BOOL)})
        fluid.channel_close(other)
        fluid.channel_close(other)
    reader.decorate_paddle_reader(chanflow.batch(samples, BATCH))
    with fluid.scope_guard(fluid.core.Scope()):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        reader.start()
        with pytest.raises(chanflow.ChannelClosedError) as info:
            exe.run(main, fetch_list=[loss])
        assert not isinstance(info.value, fluid.core.EOFException)
        assert info.value.channel == other.name
        assert "'%s'" % reader.eof_var_name in str(info.value)
        reader.reset()
        # The pass's end is the eof channel's error: EOFException, caused by it.
        reader.decorate_paddle_reader(lambda: iter([]))
        main.global_block().ops[-2:] = []
        main._bump()
        reader.start()
        with pytest.raises(fluid.core.EOFException) as info:
            exe.run(main, fetch_list=[loss])
        assert info.value.__cause__.channel == reader.eof_var_name
        reader.reset()


def test_argument_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(ValueError):
            layers.py_reader(capacity=0, shapes=[(-1, 1)], dtypes=["float32"])
        with pytest.raises(ValueError):
            layers.py_reader(capacity=1, shapes=[(-1, 1)], dtypes=["float32", "int64"])
        r = layers.py_reader(capacity=1, shapes=[(-1, 1)], dtypes=["float32"])
        with pytest.raises(RuntimeError, match="decorate"):
            r.start()
        with pytest.raises(TypeError):
            layers.read_file(object())
