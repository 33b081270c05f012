"""fluid.optimizer.Adamax and RMSProp, fluid.regularizer.L1Decay: the ops and accumulators they
add (Fluid's names, slots and startup initialisers), a few steps of a small program against a
NumPy transcription of Paddle's adamax/rmsprop formulas, a small MLP each trains, and the
errors."""

import numpy as np
import pytest

import chanflow
import chanflow.fluid as fluid
from chanflow.fluid import layers


@pytest.fixture
def env():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), fluid.scope_guard(
        fluid.core.Scope()
    ):
        yield main, startup, fluid.Executor(fluid.CPUPlace())


def f32(v):
    """A FLOAT attribute as the op reads it: float32 (Paddle's AddAttr<float>)."""
    return float(np.float32(v))


def linear_program(optimizer, regularization=None):
    """out = x @ w + b, loss = mean((out - t)^2); w [3, 2], b [2]."""
    x = layers.data("x", shape=[3])
    t = layers.data("t", shape=[2])
    out = layers.fc(x, size=2, param_attr="w", bias_attr="b")
    loss = layers.mean(layers.square_error_cost(out, t))
    return optimizer.minimize(loss)


def grads(X, T, w, b):
    """d mean((X @ w + b - T)^2) / d(w, b), in float64."""
    r = X @ w + b - T
    gout = 2 * r / r.size
    return X.T @ gout, gout.sum(0)


def tensor(name):
    return np.array(fluid.global_scope().find_var(name).get_tensor())


def batches(steps):
    rng = np.random.RandomState(3)
    return [(rng.randn(6, 3).astype("float32"), rng.randn(6, 2).astype("float32"))
            for _ in range(steps)]


def run_against_reference(exe, startup, main, update, state0, steps=6):
    """Runs `steps` steps of `main` and of `update(step, param, grad, state)` (NumPy, float64)
    from the parameters the startup program set; returns the worst relative difference."""
    exe.run(startup)
    p = {"w": tensor("w").astype(np.float64), "b": tensor("b").astype(np.float64)}
    state = {k: state0(v) for k, v in p.items()}
    worst = 0.0
    for step, (X, T) in enumerate(batches(steps), start=1):
        exe.run(main, feed={"x": X, "t": T})
        gw, gb = grads(X.astype(np.float64), T.astype(np.float64), p["w"], p["b"])
        for k, g in (("w", gw), ("b", gb)):
            p[k] = update(step, p[k], g, state[k])
            got = tensor(k).astype(np.float64)
            worst = max(worst, float(np.max(np.abs(got - p[k]) / (1 + np.abs(p[k])))))
    return p, worst


def test_adamax_ops_accumulators_and_steps_match_numpy(env):
    main, startup, exe = env
    lr, beta1, beta2, eps = 0.05, 0.8, 0.9, 1e-3
    ops, pg = linear_program(fluid.optimizer.Adamax(learning_rate=lr, beta1=beta1, beta2=beta2,
                                                    epsilon=eps))
    assert [op.type for op in ops] == ["adamax", "adamax", "scale", "scale"]
    adamax = ops[0]
    assert sorted(adamax.input_names) == ["Beta1Pow", "Grad", "InfNorm", "LearningRate", "Moment",
                                          "Param"]
    assert adamax.input("Param") == ["b"] and adamax.output("ParamOut") == ["b"]
    assert adamax.input("Moment") == adamax.output("MomentOut") == ["b_moment_0"]
    assert adamax.input("InfNorm") == adamax.output("InfNormOut") == ["b_inf_norm_0"]
    assert adamax.input("Beta1Pow") == ["b_beta1_pow_acc_0"]
    assert (adamax.attr("beta1"), adamax.attr("beta2"), adamax.attr("epsilon")) == (beta1, beta2,
                                                                                    eps)
    # the scale ops advance each parameter's beta1 power, after the updates
    assert ops[2].input("X") == ops[2].output("Out") == ["b_beta1_pow_acc_0"]
    assert ops[2].attr("scale") == beta1
    init = {op.output("Out")[0]: op.attr("value") for op in startup.global_block().ops
            if op.type == "fill_constant"}
    assert init["w_moment_0"] == init["w_inf_norm_0"] == 0.0
    assert init["w_beta1_pow_acc_0"] == beta1

    b1, b2, e = f32(beta1), f32(beta2), f32(eps)

    def update(step, p, g, s):
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["u"] = np.maximum(b2 * s["u"] + e, np.abs(g))
        return p - f32(lr) / (1 - b1 ** step) * s["m"] / s["u"]

    p, worst = run_against_reference(
        exe, startup, main, update, lambda v: {"m": np.zeros_like(v), "u": np.zeros_like(v)})
    assert worst < 2e-5, worst
    np.testing.assert_allclose(tensor("w_beta1_pow_acc_0"), [b1 ** 7], rtol=1e-5)
    assert np.max(np.abs(p["w"] - tensor("w"))) < 1e-4


def test_rmsprop_ops_accumulators_and_steps_match_numpy(env):
    main, startup, exe = env
    lr, rho, eps, mom = 0.01, 0.9, 1e-4, 0.5
    ops, pg = linear_program(fluid.optimizer.RMSProp(learning_rate=lr, rho=rho, epsilon=eps,
                                                     momentum=mom))
    assert [op.type for op in ops] == ["rmsprop", "rmsprop"]
    op = ops[1]
    assert op.input("Param") == op.output("ParamOut") == ["w"]
    assert op.input("Moment") == op.output("MomentOut") == ["w_momentum_0"]
    assert op.input("MeanSquare") == op.output("MeanSquareOut") == ["w_mean_square_0"]
    assert op.input("Grad") == ["w@GRAD"]
    assert (op.attr("decay"), op.attr("epsilon"), op.attr("momentum")) == (rho, eps, mom)
    startup_vars = startup.global_block().vars
    assert "w_momentum_0" in startup_vars and "w_mean_square_0" in startup_vars

    r, e, mu = f32(rho), f32(eps), f32(mom)

    def update(step, p, g, s):
        s["ms"] = r * s["ms"] + (1 - r) * g * g
        s["v"] = mu * s["v"] + f32(lr) * g / np.sqrt(s["ms"] + e)
        return p - s["v"]

    p, worst = run_against_reference(
        exe, startup, main, update, lambda v: {"ms": np.zeros_like(v), "v": np.zeros_like(v)})
    assert worst < 2e-5, worst


def test_rmsprop_defaults_are_fluids():
    opt = fluid.optimizer.RMSProp(learning_rate=0.1)
    assert (opt._rho, opt._epsilon, opt._momentum) == (0.95, 1e-6, 0.0)
    assert fluid.optimizer.RMSPropOptimizer is fluid.optimizer.RMSProp
    opt = fluid.optimizer.Adamax()
    assert (opt._learning_rate, opt._beta1, opt._beta2, opt._epsilon) == (0.001, 0.9, 0.999, 1e-8)
    assert fluid.optimizer.AdamaxOptimizer is fluid.optimizer.Adamax
    with pytest.raises(TypeError, match="centered"):  # mid-2018 Fluid had no centered RMSProp
        fluid.optimizer.RMSProp(0.1, centered=True)


def test_l1decay_adds_coeff_times_sign(env):
    main, startup, exe = env
    lr, coeff = 0.1, 0.25
    ops, pg = linear_program(fluid.optimizer.SGD(learning_rate=lr,
                                                 regularization=fluid.regularizer.L1Decay(coeff)))
    types = [op.type for op in main.global_block().ops]
    # per parameter: sign, scale (in place on the decay variable), sum into the gradient
    assert types[-5:] == ["sign", "scale", "sum", "sgd", "sgd"]
    sign = [op for op in main.global_block().ops if op.type == "sign"][0]
    decay = sign.output("Out")[0]
    assert decay.startswith("b@L1DECAY")
    scale = main.global_block().ops[types.index("sign") + 1]
    assert scale.input("X") == scale.output("Out") == [decay]
    assert scale.attr("scale") == coeff
    exe.run(startup)
    w0 = tensor("w").astype(np.float64)
    w0[0, 0] = 0.0  # sign(0) = 0: no decay there
    fluid.global_scope().find_var("w").get_tensor().set(w0.astype("float32"), fluid.CPUPlace())
    b0 = tensor("b").astype(np.float64)
    X, T = batches(1)[0]
    exe.run(main, feed={"x": X, "t": T})
    gw, gb = grads(X.astype(np.float64), T.astype(np.float64), w0, b0)
    want_w = w0 - f32(lr) * (gw + f32(coeff) * np.sign(w0))
    np.testing.assert_allclose(tensor("w"), want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tensor("b"), b0 - f32(lr) * (gb + f32(coeff) * np.sign(b0)),
                               rtol=1e-5, atol=1e-6)
    assert str(fluid.regularizer.L1Decay(0.5)) == "L1Decay, regularization_coeff=0.500000"


def test_param_attr_l1decay_takes_precedence(env):
    main, startup, exe = env
    x = layers.data("x", shape=[3])
    out = layers.fc(x, size=1, bias_attr=False,
                    param_attr=fluid.ParamAttr(name="w",
                                               regularizer=fluid.regularizer.L1Decay(0.5)))
    loss = layers.mean(out)
    fluid.optimizer.SGD(0.1, regularization=fluid.regularizer.L2Decay(9.0)).minimize(loss)
    types = [op.type for op in main.global_block().ops]
    assert "sign" in types
    exe.run(startup)
    w0 = tensor("w").astype(np.float64)
    X = np.ones((2, 3), "float32")
    exe.run(main, feed={"x": X})
    gw = X.T.astype(np.float64) @ np.full((2, 1), 0.5)
    np.testing.assert_allclose(tensor("w"), w0 - 0.1 * (gw + 0.5 * np.sign(w0)), rtol=1e-5,
                               atol=1e-6)


def xor(n, seed):
    """Class 1 where x0 * x1 > 0 (two of four uniform features): not linearly separable, so the
    hidden layer has to learn."""
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, size=(n, 4)).astype("float32")
    return x, ((x[:, 0] * x[:, 1]) > 0).astype("int64").reshape(n, 1)


@pytest.mark.parametrize("make", [
    lambda: fluid.optimizer.Adamax(learning_rate=0.05),
    lambda: fluid.optimizer.Adamax(learning_rate=0.05, regularization=fluid.regularizer.L1Decay(
        1e-4)),
    lambda: fluid.optimizer.RMSProp(learning_rate=0.01),
    lambda: fluid.optimizer.RMSProp(learning_rate=0.005, momentum=0.9,
                                    regularization=fluid.regularizer.L2Decay(1e-4)),
], ids=["adamax", "adamax_l1", "rmsprop", "rmsprop_momentum_l2"])
def test_mlp_trains(env, make):
    main, startup, exe = env
    x = layers.data("x", shape=[4])
    y = layers.data("y", shape=[1], dtype="int64")
    h = layers.fc(x, size=32, act="relu")
    pred = layers.fc(h, size=2, act="softmax")
    loss = layers.mean(layers.cross_entropy(pred, y))
    acc = layers.accuracy(pred, y)
    test_prog = main.clone(for_test=True)
    make().minimize(loss)
    X, Y = xor(256, 0)
    exe.run(startup)
    losses = [exe.run(main, feed={"x": X, "y": Y}, fetch_list=[loss])[0][0] for _ in range(150)]
    # from chance (about ln 2) to a small loss
    assert losses[0] > 0.6 and losses[-1] < 0.1, losses[::25]
    Xt, Yt = xor(256, 1)
    (a,) = exe.run(test_prog, feed={"x": Xt, "y": Yt}, fetch_list=[acc])
    assert a[0] > 0.93


def test_bad_hyperparameters_are_errors_naming_them(env):
    main, startup, exe = env
    for kwargs, what in (({"rho": None}, "rho"), ({"epsilon": None}, "epsilon"),
                         ({"momentum": None}, "momentum")):
        with pytest.raises(ValueError, match=what):
            fluid.optimizer.RMSProp(0.1, **kwargs)
    with pytest.raises(ValueError, match="beta1"):
        fluid.optimizer.Adamax(0.1, beta1=None)
    with pytest.raises(TypeError, match="learning_rate"):
        fluid.optimizer.RMSProp(None)
    with pytest.raises(ValueError, match="regularization_coeff"):
        fluid.regularizer.L1Decay(None)
    # a negative epsilon reaches the op: the op's attribute check names op and attribute
    linear_program(fluid.optimizer.RMSProp(0.1, epsilon=-1e-6))
    exe.run(startup)
    X, T = batches(1)[0]
    with pytest.raises(chanflow.Error, match=r"rmsprop.*'epsilon' must be finite and >= 0"):
        exe.run(main, feed={"x": X, "t": T})


def test_adamax_with_decay_out_of_range_is_an_error(env):
    main, startup, exe = env
    linear_program(fluid.optimizer.Adamax(0.1, beta2=1.5))
    exe.run(startup)
    X, T = batches(1)[0]
    with pytest.raises(chanflow.Error, match=r"adamax.*'beta2' must be in \[0, 1\)"):
        exe.run(main, feed={"x": X, "t": T})


def test_other_optimisers_still_unimplemented():
    for cls in (fluid.optimizer.Adagrad, fluid.optimizer.DecayedAdagrad, fluid.optimizer.Ftrl,
                fluid.optimizer.Adadelta):
        with pytest.raises(fluid.optimizer.UnimplementedError, match=cls.__name__):
            cls(learning_rate=0.1)
