"""Training through chanflow.fluid: a Fluid-style MLP and a LeNet-style CNN trained on small
synthetic separable sets to a loss bound and correct predictions; optimiser ops and their
accumulators; one SGD step against a NumPy update; clone(for_test); errors naming the
variable or op."""

import numpy as np
import pytest

import chanflow
import chanflow.fluid as fluid
from chanflow.fluid import layers


@pytest.fixture
def env():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), fluid.scope_guard(
        fluid.core.Scope()
    ):
        yield main, startup, fluid.Executor(fluid.CPUPlace())


def blobs(n, dim, seed):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 2, size=(n, 1)).astype("int64")
    x = rng.randn(n, dim).astype("float32") * 0.5 + (2 * y - 1).astype("float32")
    return x, y


def test_mlp_trains_with_adam_and_l2(env):
    main, startup, exe = env
    x = layers.data("x", shape=[4])
    y = layers.data("y", shape=[1], dtype="int64")
    h = layers.fc(x, size=16, act="relu")
    h = layers.dropout(h, dropout_prob=0.1, seed=3)
    pred = layers.fc(h, size=2, act="softmax")
    loss = layers.mean(layers.cross_entropy(pred, y))
    acc = layers.accuracy(pred, y)
    test_prog = main.clone(for_test=True)
    opt = fluid.optimizer.Adam(learning_rate=0.05, regularization=fluid.regularizer.L2Decay(1e-4))
    ops, pg = opt.minimize(loss)
    assert [p.name for p, g in pg] == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]
    assert all(g.name == p.name + "@GRAD" for p, g in pg)
    assert sum(op.type == "adam" for op in ops) == 4 and sum(op.type == "scale" for op in ops) == 8
    startup_vars = startup.global_block().vars
    assert any(n.startswith("fc_0.w_0_moment1") for n in startup_vars)
    assert any(n.startswith("fc_0.w_0_beta1_pow_acc") for n in startup_vars)
    X, Y = blobs(128, 4, 0)
    exe.run(startup)
    first = None
    for _ in range(60):
        lv, av = exe.run(main, feed={"x": X, "y": Y}, fetch_list=[loss, acc])
        first = lv if first is None else first
    assert lv[0] < 0.1 < first[0]
    Xt, Yt = blobs(64, 4, 1)
    p, a = exe.run(test_prog, feed={"x": Xt, "y": Yt}, fetch_list=[pred, acc])
    assert np.mean(p.argmax(1) == Yt[:, 0]) > 0.95 and a[0] > 0.95
    # the beta powers advanced once per step
    b1 = [n for n in fluid.global_scope().local_var_names() if "beta1_pow" in n][0]
    np.testing.assert_allclose(np.array(fluid.global_scope().find_var(b1).get_tensor()),
                               [0.9 ** 61], rtol=1e-4)


def test_lenet_cnn_trains_with_momentum(env):
    main, startup, exe = env
    img = layers.data("img", shape=[1, 8, 8])
    label = layers.data("label", shape=[1], dtype="int64")
    c = fluid.nets.simple_img_conv_pool(img, num_filters=4, filter_size=3, pool_size=2,
                                        pool_stride=2, act="relu")
    c = layers.batch_norm(c)
    c = layers.conv2d(c, num_filters=6, filter_size=3, padding=1, act="relu")
    logits = layers.fc(c, size=2)
    loss = layers.mean(layers.softmax_with_cross_entropy(logits, label))
    test_prog = main.clone(for_test=True)
    fluid.optimizer.Momentum(learning_rate=0.05, momentum=0.9).minimize(loss)
    rng = np.random.RandomState(5)
    n = 64
    Y = rng.randint(0, 2, size=(n, 1)).astype("int64")
    X = rng.randn(n, 1, 8, 8).astype("float32") * 0.3
    X[Y[:, 0] == 1, :, :, :4] += 1.0  # class 1: bright left half
    X[Y[:, 0] == 0, :, :, 4:] += 1.0
    exe.run(startup)
    for _ in range(40):
        (lv,) = exe.run(main, feed={"img": X, "label": Y}, fetch_list=[loss])
    assert lv[0] < 0.05
    (out,) = exe.run(test_prog, feed={"img": X, "label": Y}, fetch_list=[logits])
    assert np.all(out.argmax(1) == Y[:, 0])


def test_sgd_step_matches_numpy(env):
    main, startup, exe = env
    x = layers.data("x", shape=[3])
    t = layers.data("t", shape=[1])
    out = layers.fc(x, size=1, param_attr=fluid.ParamAttr(name="w", learning_rate=0.5),
                    bias_attr="b")
    loss = layers.mean(layers.square_error_cost(out, t))
    _, pg = fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe.run(startup)
    scope = fluid.global_scope()
    w0 = np.array(scope.find_var("w").get_tensor()).astype(np.float64)
    X = np.random.RandomState(0).randn(5, 3).astype("float32")
    T = np.random.RandomState(1).randn(5, 1).astype("float32")
    exe.run(main, feed={"x": X, "t": T})
    r = X.astype(np.float64) @ w0 - T
    gw = 2 * X.T.astype(np.float64) @ r / 5
    gb = 2 * r.sum(0) / 5
    np.testing.assert_allclose(np.array(scope.find_var("w").get_tensor()), w0 - 0.05 * gw,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(scope.find_var("b").get_tensor()), -0.1 * gb,
                               rtol=1e-5, atol=1e-6)


def test_append_backward_honours_stop_gradient_and_trainable(env):
    main, startup, exe = env
    x = layers.data("x", shape=[3])
    h = layers.fc(x, size=2, param_attr=fluid.ParamAttr(name="frozen", trainable=False))
    h.stop_gradient = False
    out = layers.fc(h, size=1, param_attr="w2")
    loss = layers.mean(out)
    pg = fluid.backward.append_backward(loss)
    names = sorted(p.name for p, g in pg)
    assert names == ["fc_0.b_0", "fc_1.b_0", "w2"]
    block = main.global_block()
    assert "x@GRAD" not in block.vars and "frozen@GRAD" not in block.vars
    assert all(isinstance(p, fluid.Parameter) and g.name in block.vars for p, g in pg)
    roles = {op.attr("op_role") for op in block.ops[len(block.ops) - 3:]}
    assert roles <= {1, 257}


def test_clone_for_test_drops_training_ops_and_matches(env):
    main, startup, exe = env
    x = layers.data("x", shape=[6])
    h = layers.fc(x, size=8, act="tanh")
    d = layers.dropout(h, dropout_prob=0.5, seed=1)
    pred = layers.fc(d, size=3)
    loss = layers.mean(pred)
    fluid.optimizer.SGD(0.01).minimize(loss)
    test_prog = main.clone(for_test=True)
    types = [op.type for op in test_prog.global_block().ops]
    assert not any(t.endswith("_grad") or t == "sgd" for t in types)
    assert [op.attr("is_test") for op in test_prog.global_block().ops if op.type == "dropout"] == [
        True
    ]
    assert not any("@GRAD" in n for n in test_prog.global_block().vars)
    exe.run(startup)
    X = np.random.RandomState(2).randn(4, 6).astype("float32")
    (p_test,) = exe.run(test_prog, feed={"x": X}, fetch_list=[pred])
    # the training program's forward with dropout off, computed from the parameters
    s = fluid.global_scope()
    g = lambda n: np.array(s.find_var(n).get_tensor()).astype(np.float64)  # noqa: E731
    hv = np.tanh(X @ g("fc_0.w_0") + g("fc_0.b_0"))
    ref = (0.5 * hv) @ g("fc_1.w_0") + g("fc_1.b_0")  # Paddle's dropout at test: x * (1 - p)
    ref_upscale = hv @ g("fc_1.w_0") + g("fc_1.b_0")
    assert np.allclose(p_test, ref, rtol=1e-4, atol=1e-5) or np.allclose(
        p_test, ref_upscale, rtol=1e-4, atol=1e-5)
    # the test program does not train: running it twice gives the same
    (again,) = exe.run(test_prog, feed={"x": X}, fetch_list=[pred])
    np.testing.assert_array_equal(p_test, again)


def test_bad_inputs_name_the_var_or_op(env):
    main, startup, exe = env
    x = layers.data("x", shape=[4])
    y = layers.data("y", shape=[1], dtype="int64")
    pred = layers.fc(x, size=3, act="softmax")
    loss = layers.mean(layers.cross_entropy(pred, y))
    fluid.optimizer.SGD(0.1).minimize(loss)
    X = np.zeros((2, 4), "float32")
    Y = np.zeros((2, 1), "int64")
    with pytest.raises(chanflow.Error, match="fc_0.w_0"):  # startup not run
        exe.run(main, feed={"x": X, "y": Y}, fetch_list=[loss])
    exe.run(startup)
    with pytest.raises(chanflow.ShapeError, match="feed 'x'"):
        exe.run(main, feed={"x": np.zeros((2, 5), "float32"), "y": Y})
    with pytest.raises(chanflow.TypeError, match="'x'"):
        exe.run(main, feed={"x": X.astype("float64"), "y": Y})
    with pytest.raises(chanflow.Error, match="nope"):
        exe.run(main, feed={"x": X, "y": Y}, fetch_list=["nope"])
    with pytest.raises(chanflow.Error, match="cross_entropy"):
        exe.run(main, feed={"x": X, "y": np.array([[0], [7]], "int64")}, fetch_list=[loss])


def test_unsupported_optimisers_and_arguments():
    for cls in (fluid.optimizer.Adagrad, fluid.optimizer.DecayedAdagrad, fluid.optimizer.Ftrl):
        with pytest.raises(NotImplementedError, match=cls.__name__) as info:
            cls(learning_rate=0.1)
        assert isinstance(info.value, chanflow.Error)
    with pytest.raises(TypeError, match="LARS_weight_decay"):
        fluid.optimizer.SGD(0.1, LARS_weight_decay=-0.1)
    fluid.optimizer.SGD(0.1, LARS_weight_decay=0.0)
    with pytest.raises(TypeError, match="bogus"):
        fluid.optimizer.Adam(0.1, bogus=1)


def test_learning_rate_variable(env):
    main, startup, exe = env
    x = layers.data("x", shape=[2])
    out = layers.fc(x, size=1, bias_attr=False, param_attr="w")
    loss = layers.mean(out)
    lr = layers.create_global_var(shape=[1], value=0.5, dtype="float32", persistable=True,
                                  name="lr")
    fluid.optimizer.SGD(learning_rate=lr).minimize(loss)
    exe.run(startup)
    s = fluid.global_scope()
    w0 = np.array(s.find_var("w").get_tensor())
    exe.run(main, feed={"x": np.ones((1, 2), "float32")})
    np.testing.assert_allclose(np.array(s.find_var("w").get_tensor()), w0 - 0.5, rtol=1e-6)
