"""LARS learning-rate scaling (optimizer's LARS_weight_decay) against a float64 NumPy
transcription of Fluid's formula; ParallelDo with 1, 2 and 4 places gives the loss and the
parameters of the undivided batch, deterministically; get_places and the CUDA names."""

import numpy as np
import pytest

import chanflow
import chanflow.fluid as fluid
from chanflow.fluid import layers
from chanflow.fluid.layers.control_flow import ParallelDo
from chanflow.fluid.layers.device import get_places


def test_lars_sgd_steps_match_numpy():
    main, startup = fluid.Program(), fluid.Program()
    rng = np.random.RandomState(0)
    W0 = rng.randn(4, 2).astype("float32")
    X = rng.randn(8, 4).astype("float32")
    Y = rng.randn(8, 2).astype("float32")
    wd, lr = 0.3, 0.1
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.scope_guard(fluid.core.Scope()):
        x = layers.data("x", shape=[4])
        y = layers.data("y", shape=[2])
        pred = layers.fc(
            x, size=2,
            param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.0)),
            bias_attr=fluid.ParamAttr(name="b", learning_rate=2.0,
                                      initializer=fluid.initializer.Constant(0.5)))
        loss = layers.mean(layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(learning_rate=lr, LARS_weight_decay=wd).minimize(loss)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        fluid.global_scope().var("w").get_tensor().set(W0)
        W, b = W0.astype(np.float64), np.full(2, 0.5)
        Xd, Yd = X.astype(np.float64), Y.astype(np.float64)
        for _ in range(3):
            exe.run(main, feed={"x": X, "y": Y})
            r = Xd @ W + b - Yd
            gW = 2.0 * Xd.T @ r / r.size
            gb = 2.0 * r.sum(0) / r.size
            for p, g, f in ((W, gW, 1.0), (b, gb, 2.0)):
                pn, gn = np.sqrt((p * p).sum()), np.sqrt((g * g).sum())
                p -= lr * f * pn / (gn + wd * pn) * g
            np.testing.assert_allclose(np.array(fluid.global_scope().find_var("w").get_tensor()),
                                       W, rtol=2e-5, atol=1e-6)
            np.testing.assert_allclose(np.array(fluid.global_scope().find_var("b").get_tensor()),
                                       b, rtol=2e-5, atol=1e-6)
    # The scaling is ops of the main program (norms, then the ratio).
    assert any(op.type == "elementwise_div" for op in main.global_block().ops)


def mlp_losses(places, steps=4, parallel=True):
    """Loss and parameters after SGD steps of an MLP on one fixed batch of 16."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    rng = np.random.RandomState(1)
    X = rng.randn(16, 6).astype("float32")
    Y = rng.randint(0, 3, size=(16, 1)).astype("int64")
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.scope_guard(fluid.core.Scope()):
        x = layers.data("x", shape=[6])
        y = layers.data("y", shape=[1], dtype="int64")

        def net(x, y):
            h = layers.fc(x, size=10, act="tanh")
            p = layers.fc(h, size=3, act="softmax")
            return layers.mean(layers.cross_entropy(p, y)), layers.accuracy(p, y)

        if parallel:
            pd = ParallelDo(get_places(places))
            with pd.do():
                loss_, acc_ = net(pd.read_input(x), pd.read_input(y))
                pd.write_output(loss_)
                pd.write_output(acc_)
            loss, acc = pd()
            loss, acc = layers.mean(loss), layers.mean(acc)
        else:
            loss, acc = net(x, y)
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        losses = [exe.run(main, feed={"x": X, "y": Y}, fetch_list=[loss])[0][0]
                  for _ in range(steps)]
        params = {p.name: np.array(fluid.global_scope().find_var(p.name).get_tensor())
                  for p in main.all_parameters()}
    return np.array(losses), params, main


def test_parallel_do_places_give_the_undivided_batch_result():
    ref, ref_params, _ = mlp_losses(1, parallel=False)
    assert ref[-1] < ref[0]
    for n in (1, 2, 4):
        losses, params, main = mlp_losses(n)
        assert sum(op.type == "mul" for op in main.global_block().ops) >= 2 * n
        np.testing.assert_allclose(losses, ref, rtol=1e-5, atol=1e-6)
        for name, v in ref_params.items():
            np.testing.assert_allclose(params[name], v, rtol=1e-4, atol=1e-6)
    # Deterministic: the same places give bit-identical results.
    a, pa, _ = mlp_losses(4)
    b, pb, _ = mlp_losses(4)
    assert (a == b).all() and all((pa[k] == pb[k]).all() for k in pa)


def test_parallel_do_errors():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = layers.data("x", shape=[3])
        pd = ParallelDo(get_places(4))
        with pytest.raises(ValueError, match="after the do"):
            pd()
        with pytest.raises(ValueError, match="inside"):
            pd.read_input(x)
        with pd.do():
            pd.write_output(layers.scale(pd.read_input(x), scale=2.0))
        out = pd()
        exe = fluid.Executor(fluid.CPUPlace())
        got, = exe.run(main, feed={"x": np.ones((8, 3), "float32")}, fetch_list=[out])
        np.testing.assert_array_equal(got, np.full((8, 3), 2.0))
        with pytest.raises(chanflow.Error):  # 6 rows do not split over 4 places
            exe.run(main, feed={"x": np.ones((6, 3), "float32")}, fetch_list=[out])
    with pytest.raises(ValueError, match="empty"):
        ParallelDo([])
    with pytest.raises(ValueError, match="nccl"):
        ParallelDo(get_places(1), use_nccl=True)


def test_places_and_cuda(monkeypatch):
    monkeypatch.setenv("CHANFLOW_WORKERS", "3")
    assert len(get_places()) == 3 and all(p == fluid.CPUPlace() for p in get_places())
    assert len(get_places(device_count=2)) == 2
    assert fluid.core.is_compiled_with_cuda() is False
    with pytest.raises(fluid.core.UnavailableError, match="CUDA"):
        fluid.Executor(fluid.CUDAPlace(0))
    with pytest.raises(fluid.core.UnavailableError):
        get_places(device_type="CUDA")
