"""chanflow.fluid's training layers, each run and compared with a NumPy computation of its own
(float64 references), and the parameters/initializers they create (names, shapes, the startup
ops and their statistics)."""

import math

import numpy as np
import pytest

import chanflow
import chanflow.fluid as fluid
from chanflow.fluid import layers


@pytest.fixture
def progs():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    scope = fluid.core.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), fluid.scope_guard(scope):
        yield main, startup


def run(main, startup, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return exe.run(main, feed=feed, fetch_list=fetch)


def param(name):
    return np.array(fluid.global_scope().find_var(name).get_tensor()).astype(np.float64)


RNG = np.random.RandomState(3)


def test_fc_with_two_inputs_and_bias_and_act(progs):
    a = layers.data("a", shape=[3])
    b = layers.data("b", shape=[2, 2])
    out = layers.fc([a, b], size=5, act="tanh")
    assert a.shape == (-1, 3) and a.stop_gradient
    assert out.shape == (-1, 5)
    names = [p.name for p in progs[0].global_block().all_parameters()]
    assert names == ["fc_0.w_0", "fc_0.w_1", "fc_0.b_0"]
    av = RNG.randn(4, 3).astype("float32")
    bv = RNG.randn(4, 2, 2).astype("float32")
    (got,) = run(*progs, {"a": av, "b": bv}, [out])
    w0, w1, bias = param("fc_0.w_0"), param("fc_0.w_1"), param("fc_0.b_0")
    assert w1.shape == (4, 5) and np.all(bias == 0)
    ref = np.tanh(av.astype(np.float64) @ w0 + bv.reshape(4, 4).astype(np.float64) @ w1 + bias)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_fc_num_flatten_dims_and_no_bias(progs):
    x = layers.data("x", shape=[2, 3])
    out = layers.fc(x, size=4, num_flatten_dims=2, bias_attr=False)
    assert out.shape == (-1, 2, 4)
    xv = RNG.randn(5, 2, 3).astype("float32")
    (got,) = run(*progs, {"x": xv}, [out])
    np.testing.assert_allclose(got, xv @ param("fc_0.w_0"), rtol=1e-5, atol=1e-6)
    assert [p.name for p in progs[0].all_parameters()] == ["fc_0.w_0"]


def conv_ref(x, w, stride, pad):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,fchw->nf", patch, w)
    return out


def test_conv2d_bias_relu_and_default_initializer(progs):
    x = layers.data("x", shape=[2, 6, 6])
    out = layers.conv2d(x, num_filters=3, filter_size=3, stride=2, padding=1, act="relu",
                        bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
    assert out.shape == (-1, 3, 3, 3)
    xv = RNG.randn(2, 2, 6, 6).astype("float32")
    (got,) = run(*progs, {"x": xv}, [out])
    w = param("conv2d_0.w_0")
    assert w.shape == (3, 2, 3, 3)
    ref = np.maximum(conv_ref(xv.astype(np.float64), w, 2, 1) + 0.1, 0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
    # Paddle's default filter initializer: normal of std sqrt(2 / (k*k*C)).
    startup_ops = [op.type for op in progs[1].global_block().ops]
    assert startup_ops == ["gaussian_random", "fill_constant"]
    std = progs[1].global_block().ops[0].attr("std")
    assert math.isclose(std, math.sqrt(2.0 / (3 * 3 * 2)), rel_tol=1e-6)


@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pool2d(progs, pool_type):
    x = layers.data("x", shape=[2, 5, 5])
    out = layers.pool2d(x, pool_size=2, pool_type=pool_type, pool_stride=2)
    g = layers.pool2d(x, pool_type=pool_type, global_pooling=True)
    assert out.shape == (-1, 2, 2, 2) and g.shape == (-1, 2, 1, 1)
    xv = RNG.randn(3, 2, 5, 5).astype("float32")
    got, gg = run(*progs, {"x": xv}, [out, g])
    win = xv[:, :, :4, :4].reshape(3, 2, 2, 2, 2, 2).astype(np.float64)
    red = np.max if pool_type == "max" else np.mean
    np.testing.assert_allclose(got, red(win, axis=(3, 5)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gg[:, :, 0, 0], red(xv.astype(np.float64), axis=(2, 3)),
                               rtol=1e-5, atol=1e-6)


def test_batch_norm_training_and_moving_stats(progs):
    x = layers.data("x", shape=[3, 2, 2])
    out = layers.batch_norm(x, momentum=0.8, epsilon=1e-5, moving_mean_name="mm",
                            moving_variance_name="mv")
    xv = (RNG.randn(4, 3, 2, 2) * 2 + 1).astype("float32")
    (got,) = run(*progs, {"x": xv}, [out])
    x64 = xv.astype(np.float64)
    mu = x64.mean(axis=(0, 2, 3))
    var = x64.var(axis=(0, 2, 3))
    ref = (x64 - mu[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(param("mm"), 0.2 * mu, rtol=1e-4, atol=1e-5)
    mv = param("mv")
    # Paddle's moving variance: momentum * old + (1 - momentum) * batch variance (biased or
    # not: accept both).
    n = 16
    assert np.allclose(mv, 0.8 + 0.2 * var, rtol=1e-4) or np.allclose(
        mv, 0.8 + 0.2 * var * n / (n - 1), rtol=1e-4)
    p = {v.name: v for v in progs[0].all_parameters()}
    assert not p["mm"].trainable and p["mm"].stop_gradient and p["mm"].persistable


def test_dropout_train_and_test(progs):
    x = layers.data("x", shape=[1000])
    d = layers.dropout(x, dropout_prob=0.3, seed=5)
    t = layers.dropout(x, dropout_prob=0.3, is_test=True)
    xv = np.ones((2, 1000), "float32")
    dv, tv = run(*progs, {"x": xv}, [d, t])
    zeros = np.mean(dv == 0)
    assert 0.25 < zeros < 0.35
    kept = dv[dv != 0]
    # kept values are x itself (Paddle 2018) or x / (1 - p) (upscale): one of the two throughout.
    assert np.allclose(kept, 1.0) or np.allclose(kept, 1 / 0.7)
    if np.allclose(kept, 1.0):
        np.testing.assert_allclose(tv, 0.7 * xv, rtol=1e-6)
    else:
        np.testing.assert_allclose(tv, xv, rtol=1e-6)


def test_losses_and_mean(progs):
    logits = layers.data("logits", shape=[4])
    label = layers.data("label", shape=[1], dtype="int64")
    target = layers.data("target", shape=[4])
    prob = layers.softmax(logits)
    ce = layers.cross_entropy(prob, label)
    swce = layers.softmax_with_cross_entropy(logits, label)
    sq = layers.square_error_cost(prob, target)
    m = layers.mean(sq)
    lv = RNG.randn(6, 4).astype("float32")
    yv = RNG.randint(0, 4, size=(6, 1)).astype("int64")
    tv = RNG.rand(6, 4).astype("float32")
    got = run(*progs, {"logits": lv, "label": yv, "target": tv}, [prob, ce, swce, sq, m])
    l64 = lv.astype(np.float64)
    p = np.exp(l64 - l64.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    nll = -np.log(p[np.arange(6), yv[:, 0]])[:, None]
    np.testing.assert_allclose(got[0], p, rtol=1e-5)
    np.testing.assert_allclose(got[1], nll, rtol=1e-5)
    np.testing.assert_allclose(got[2], nll, rtol=1e-5)
    np.testing.assert_allclose(got[3], (p - tv) ** 2, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(got[4], [np.mean((p - tv) ** 2)], rtol=1e-4)
    assert ce.shape == (-1, 1) and m.shape == (1,)


def test_accuracy_top1_and_top2(progs):
    x = layers.data("x", shape=[3])
    y = layers.data("y", shape=[1], dtype="int64")
    a1 = layers.accuracy(x, y)
    a2 = layers.accuracy(x, y, k=2)
    xv = np.array([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], "float32")
    yv = np.array([[1], [1], [0], [2]], "int64")
    g1, g2 = run(*progs, {"x": xv, "y": yv}, [a1, a2])
    assert g1[0] == pytest.approx(1 / 4) and g2[0] == pytest.approx(3 / 4)


@pytest.mark.parametrize(
    "name,ref",
    [
        ("relu", lambda v: np.maximum(v, 0)),
        ("sigmoid", lambda v: 1 / (1 + np.exp(-v))),
        ("tanh", np.tanh),
        ("exp", np.exp),
        ("square", np.square),
        ("abs", np.abs),
        ("softplus", lambda v: np.log1p(np.exp(v))),
        ("leaky_relu", lambda v: np.where(v > 0, v, 0.02 * v)),
    ],
)
def test_activations_by_name_and_as_act(progs, name, ref):
    x = layers.data("x", shape=[5])
    a = getattr(layers, name)(x)
    b = layers.scale(x, scale=1.0, act=name)
    xv = RNG.randn(3, 5).astype("float32")
    ga, gb = run(*progs, {"x": xv}, [a, b])
    r = ref(xv.astype(np.float64))
    np.testing.assert_allclose(ga, r, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb, r, rtol=1e-5, atol=1e-6)


def test_log_sqrt_positive(progs):
    x = layers.data("x", shape=[4])
    xv = RNG.rand(2, 4).astype("float32") + 0.1
    gl, gs = run(*progs, {"x": xv}, [layers.log(x), layers.sqrt(x)])
    np.testing.assert_allclose(gl, np.log(xv.astype(np.float64)), rtol=1e-5)
    np.testing.assert_allclose(gs, np.sqrt(xv.astype(np.float64)), rtol=1e-5)


def test_shape_layers(progs):
    x = layers.data("x", shape=[2, 3, 4])
    r = layers.reshape(x, shape=[0, 6, -1])
    f = layers.flatten(x, axis=2)
    s1, s2 = layers.split(x, num_or_sections=[1, 2], dim=2)
    c = layers.concat([s2, s1], axis=2)
    t = layers.transpose(x, perm=[0, 3, 1, 2])
    assert r.shape == (-1, 6, 4) and f.shape == (-1, 12) and t.shape == (-1, 4, 2, 3)
    assert s2.shape == (-1, 2, 2, 4) and c.shape == (-1, 2, 3, 4)
    xv = RNG.randn(2, 2, 3, 4).astype("float32")
    got = run(*progs, {"x": xv}, [r, f, s1, s2, c, t])
    np.testing.assert_array_equal(got[0], xv.reshape(2, 6, 4))
    np.testing.assert_array_equal(got[1], xv.reshape(4, 12))
    np.testing.assert_array_equal(got[2], xv[:, :, :1])
    np.testing.assert_array_equal(got[3], xv[:, :, 1:])
    np.testing.assert_array_equal(got[4], np.concatenate([xv[:, :, 1:], xv[:, :, :1]], 2))
    np.testing.assert_array_equal(got[5], xv.transpose(0, 3, 1, 2))


def test_arithmetic_layers(progs):
    x = layers.data("x", shape=[2, 3])
    w = layers.data("w", shape=[3, 4], append_batch_size=False)
    ops = {
        "sub": layers.elementwise_sub(x, x),
        "mul": layers.elementwise_mul(x, x),
        "div": layers.elementwise_div(x, layers.scale(x, scale=2.0)),
        "max": layers.elementwise_max(x, layers.scale(x, scale=-1.0)),
        "min": layers.elementwise_min(x, layers.scale(x, scale=-1.0)),
        "scale": layers.scale(x, scale=3.0, bias=1.0),
        "sum_all": layers.reduce_sum(x),
        "sum_1": layers.reduce_sum(x, dim=1),
        "mean_2k": layers.reduce_mean(x, dim=[2], keep_dim=True),
        "matmul": layers.matmul(layers.reshape(x, [-1, 3]), w),
        "cast": layers.cast(x, "float64"),
    }
    xv = RNG.randn(4, 2, 3).astype("float32")
    wv = RNG.randn(3, 4).astype("float32")
    names = list(ops)
    got = dict(zip(names, run(*progs, {"x": xv, "w": wv}, [ops[n] for n in names])))
    x64 = xv.astype(np.float64)
    assert got["sub"].max() == 0
    np.testing.assert_allclose(got["mul"], x64 * x64, rtol=1e-6)
    np.testing.assert_allclose(got["div"], np.full_like(x64, 0.5), rtol=1e-6)
    np.testing.assert_allclose(got["max"], np.abs(x64), rtol=1e-6)
    np.testing.assert_allclose(got["min"], -np.abs(x64), rtol=1e-6)
    np.testing.assert_allclose(got["scale"], 3 * x64 + 1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["sum_all"], [x64.sum()], rtol=1e-5)
    np.testing.assert_allclose(got["sum_1"], x64.sum(1), rtol=1e-5)
    np.testing.assert_allclose(got["mean_2k"], x64.mean(2, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(got["matmul"], x64.reshape(-1, 3) @ wv, rtol=1e-5)
    assert got["cast"].dtype == np.float64
    np.testing.assert_array_equal(got["cast"], x64)


def test_elementwise_add_axis(progs):
    x = layers.data("x", shape=[2, 3])
    b = layers.data("b", shape=[2], append_batch_size=False)
    out = layers.elementwise_add(x, b, axis=1)
    xv = RNG.randn(4, 2, 3).astype("float32")
    bv = np.array([10.0, 20.0], "float32")
    (got,) = run(*progs, {"x": xv, "b": bv}, [out])
    np.testing.assert_allclose(got, xv + bv[None, :, None], rtol=1e-6)


def test_tensor_layers(progs):
    main, startup = progs
    g = layers.create_global_var(shape=[2], value=4.0, dtype="float32", persistable=True,
                                 name="gvar")
    n = layers.create_global_var(shape=[3], value=-1.0, dtype="float32")
    f = layers.fill_constant(shape=[2, 2], dtype="int64", value=3)
    t = layers.create_tensor("float32", name="ct")
    layers.assign(layers.scale(g, scale=2.0), t)
    gv, nv, fv, tv = run(main, startup, {}, [g, n, f, t])
    np.testing.assert_array_equal(gv, [4, 4])
    np.testing.assert_array_equal(nv, [-1, -1, -1])
    np.testing.assert_array_equal(fv, np.full((2, 2), 3))
    np.testing.assert_array_equal(tv, [8, 8])
    assert [op.type for op in startup.global_block().ops] == ["fill_constant"]


def test_initializers_statistics_and_seed(progs):
    main, startup = progs
    I = fluid.initializer
    specs = {
        "c": ([30, 40], I.Constant(2.5)),
        "u": ([300, 400], I.Uniform(-0.5, 1.5)),
        "n": ([300, 400], I.Normal(1.0, 2.0)),
        "xu": ([300, 400], I.Xavier()),
        "xn": ([300, 400], I.Xavier(uniform=False)),
        "mu": ([20, 30, 5, 5], I.MSRA()),
        "mn": ([20, 30, 5, 5], I.MSRA(uniform=False)),
    }
    for name, (shape, init) in specs.items():
        layers.create_parameter(shape, "float32", attr=fluid.ParamAttr(name=name,
                                                                       initializer=init))
    seeds = [op.attr("seed") for op in startup.global_block().ops if op.has_attr("seed")]
    assert seeds and all(s == 7 for s in seeds)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    v = {n: param(n) for n in specs}
    assert np.all(v["c"] == 2.5)
    assert v["u"].min() >= -0.5 and v["u"].max() <= 1.5 and abs(v["u"].mean() - 0.5) < 0.01
    assert abs(v["n"].mean() - 1.0) < 0.02 and abs(v["n"].std() - 2.0) < 0.02
    lim = math.sqrt(6.0 / 700)
    assert v["xu"].max() <= lim and v["xu"].min() >= -lim and v["xu"].max() > 0.98 * lim
    assert abs(v["xn"].std() - math.sqrt(2.0 / 700)) < 0.002
    lim = math.sqrt(6.0 / (30 * 25))
    assert v["mu"].max() <= lim and v["mu"].max() > 0.98 * lim
    assert abs(v["mn"].std() - math.sqrt(2.0 / (30 * 25))) < 0.003
    # the same seed draws the same values
    scope2 = fluid.core.Scope()
    exe.run(startup, scope=scope2)
    np.testing.assert_array_equal(np.array(scope2.find_var("u").get_tensor()), v["u"])


def test_scope_tensor_set_and_find(progs):
    main, startup = progs
    x = layers.data("x", shape=[2])
    out = layers.fc(x, size=1, bias_attr=False, param_attr="w")
    scope = fluid.global_scope()
    assert scope.find_var("w") is None
    scope.var("w").get_tensor().set(np.array([[2.0], [3.0]], "float32"), fluid.CPUPlace())
    (got,) = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": np.ones((1, 2), "float32")},
                                                  fetch_list=[out])
    assert got[0, 0] == 5.0
    t = scope.find_var("w").get_tensor()
    assert t.shape() == [2, 1] and np.array(t)[1, 0] == 3.0


def test_nets(progs):
    x = layers.data("x", shape=[1, 8, 8])
    a = fluid.nets.simple_img_conv_pool(x, num_filters=2, filter_size=3, pool_size=2,
                                        pool_stride=2, act="relu")
    b = fluid.nets.img_conv_group(x, conv_num_filter=[2, 3], pool_size=2, pool_stride=2,
                                  conv_act="relu", conv_with_batchnorm=True,
                                  conv_batchnorm_drop_rate=[0.0, 0.2])
    assert a.shape == (-1, 2, 3, 3) and b.shape == (-1, 3, 4, 4)
    types = [op.type for op in progs[0].global_block().ops]
    assert types.count("conv2d") == 3 and types.count("batch_norm") == 2
    assert types.count("dropout") == 1 and types.count("pool2d") == 2
    xv = RNG.randn(2, 1, 8, 8).astype("float32")
    av, bv = run(*progs, {"x": xv}, [a, b])
    w = param("conv2d_0.w_0")
    ref = conv_ref(xv.astype(np.float64), w, 1, 0)
    ref = np.maximum(ref, 0)[:, :, :6, :6].reshape(2, 2, 3, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_allclose(av, ref, rtol=1e-4, atol=1e-5)
    assert bv.shape == (2, 3, 4, 4) and np.all(bv >= 0)
