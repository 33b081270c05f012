"""fluid.ParallelExecutor: CPU_NUM 1, 2 and 4 give bit-identical weights for a seed; the loss,
weights and predictions match the plain Executor on the whole batch (float tolerance); fetches
merged as Paddle merged the devices' (one loss per place, rows concatenated); feeds per place;
a py_reader program; the argument errors."""

import numpy as np
import pytest

import chanflow
import chanflow.fluid as fluid
from chanflow.fluid import layers


def build(with_reader=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        if with_reader:
            reader = layers.py_reader(capacity=2, shapes=[(-1, 6), (-1, 1)],
                                      dtypes=["float32", "int64"])
            x, y = layers.read_file(reader)
        else:
            reader = None
            x = layers.data("x", shape=[6])
            y = layers.data("y", shape=[1], dtype="int64")
        h = layers.fc(x, 8, act="tanh")
        pred = layers.fc(h, 3, act="softmax")
        loss = layers.mean(layers.cross_entropy(pred, y))
        fluid.optimizer.Adam(0.02).minimize(loss)
    return main, startup, loss, pred, reader


def batches(n=4, size=16):
    rng = np.random.RandomState(0)
    return [(rng.randn(size, 6).astype("float32"),
             rng.randint(0, 3, (size, 1)).astype("int64")) for _ in range(n)]


def params(main):
    return {p.name: np.array(fluid.global_scope().find_var(p.name).get_tensor())
            for p in main.global_block().all_parameters()}


def train_parallel(monkeypatch, cpu_num):
    monkeypatch.setenv("CPU_NUM", str(cpu_num))
    main, startup, loss, pred, _ = build()
    with fluid.scope_guard(fluid.core.Scope()):
        fluid.Executor(fluid.CPUPlace()).run(startup)
        pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main)
        assert pe.device_count == cpu_num
        out = [pe.run(fetch_list=[loss, pred.name], feed={"x": x, "y": y})
               for x, y in batches()]
        return out, params(main)


def train_plain():
    main, startup, loss, pred, _ = build()
    with fluid.scope_guard(fluid.core.Scope()):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        out = [exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss, pred])
               for x, y in batches()]
        return out, params(main)


def test_place_counts_give_identical_weights_and_the_whole_batch_result(monkeypatch):
    plain_out, plain_w = train_plain()
    runs = {n: train_parallel(monkeypatch, n) for n in (1, 2, 4)}
    for n, (out, w) in runs.items():
        for k in plain_w:
            np.testing.assert_array_equal(w[k], runs[1][1][k])  # bit-identical
            np.testing.assert_allclose(w[k], plain_w[k], rtol=1e-5, atol=1e-6)
        for (loss, pred), (ploss, ppred) in zip(out, plain_out):
            assert loss.shape == (n,)  # one loss per place, as Paddle fetched it
            np.testing.assert_allclose(loss.mean(), ploss[0], rtol=1e-5)
            assert pred.shape == ppred.shape  # rows concatenated in place order
            np.testing.assert_allclose(pred, ppred, rtol=1e-5, atol=1e-6)
    first = runs[1][1]
    assert any(not np.allclose(first[k], params_init) for k, params_init in
               train_init().items())  # it trained


def train_init():
    main, startup, _, _, _ = build()
    with fluid.scope_guard(fluid.core.Scope()):
        fluid.Executor(fluid.CPUPlace()).run(startup)
        return params(main)


def test_per_place_feed_list_and_feed_dict(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    main, startup, loss, pred, _ = build()
    (x, y), = batches(1)
    with fluid.scope_guard(fluid.core.Scope()):
        fluid.Executor(fluid.CPUPlace()).run(startup)
        pe = fluid.ParallelExecutor(loss_name=loss.name, main_program=main)
        a, = pe.run([pred], feed=[{"x": x[:8], "y": y[:8]}, {"x": x[8:], "y": y[8:]}])
    main, startup, loss, pred, _ = build()
    with fluid.scope_guard(fluid.core.Scope()):
        fluid.Executor(fluid.CPUPlace()).run(startup)
        pe = fluid.ParallelExecutor(loss_name=loss.name, main_program=main)
        b, = pe.run([pred], feed_dict={"x": x, "y": y})
    np.testing.assert_array_equal(a, b)


def test_py_reader_program(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    main, startup, loss, _, reader = build(with_reader=True)
    reader.decorate_tensor_provider(lambda: iter(batches(3)))
    with fluid.scope_guard(fluid.core.Scope()):
        fluid.Executor(fluid.CPUPlace()).run(startup)
        pe = fluid.ParallelExecutor(loss_name=loss.name, main_program=main)
        reader.start()
        losses = []
        with pytest.raises(fluid.core.EOFException):
            while len(losses) < 10:
                losses.append(pe.run([loss.name])[0])
        reader.reset()
        w = params(main)
    assert len(losses) == 3
    # The same batches fed.
    main2, startup2, loss2, _, _ = build()
    with fluid.scope_guard(fluid.core.Scope()):
        fluid.Executor(fluid.CPUPlace()).run(startup2)
        pe = fluid.ParallelExecutor(loss_name=loss2.name, main_program=main2)
        want = [pe.run([loss2.name], feed={"x": x, "y": y})[0] for x, y in batches(3)]
        w2 = params(main2)
    np.testing.assert_array_equal(np.array(losses), np.array(want))
    for k in w:
        np.testing.assert_array_equal(w[k], w2[k])


def test_errors(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    main, startup, loss, _, _ = build()
    with pytest.raises(fluid.core.UnavailableError):
        fluid.ParallelExecutor(use_cuda=True, loss_name=loss.name, main_program=main)
    with pytest.raises(ValueError, match="distributed"):
        fluid.ParallelExecutor(loss_name=loss.name, main_program=main, num_trainers=2)
    with pytest.raises(ValueError, match="loss_name"):
        fluid.ParallelExecutor(loss_name="nope", main_program=main)
    monkeypatch.setenv("CPU_NUM", "zero")
    with pytest.raises(ValueError, match="CPU_NUM"):
        fluid.ParallelExecutor(loss_name=loss.name, main_program=main)
    monkeypatch.setenv("CPU_NUM", "2")
    with fluid.scope_guard(fluid.core.Scope()):
        fluid.Executor(fluid.CPUPlace()).run(startup)
        pe = fluid.ParallelExecutor(loss_name=loss.name, main_program=main)
        x = np.zeros((6, 6), np.float32)  # 6 rows do not split into 8 shards
        with pytest.raises(chanflow.ShapeError):
            pe.run([loss], feed={"x": x, "y": np.zeros((6, 1), np.int64)})
        with pytest.raises(ValueError, match="places"):
            pe.run([loss], feed=[{"x": x}])
