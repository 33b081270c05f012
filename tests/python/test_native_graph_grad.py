"""chanflow.grad against NumPy: for every differentiable graph op (including broadcasting and
reductions over axes), the gradient nodes' values on both machines equal central finite
differences of the op's NumPy reference, in float64."""
import zlib

import numpy as np
import pytest

import chanflow as cf
from graph_reference import GRAD_CASES, NO_GRADIENT, REF

EPS = 1e-6


def numeric_grad(f, arrays, k):
    """Central differences of the scalar f(*arrays) with respect to arrays[k]."""
    base = [np.array(a, dtype=np.float64, copy=True) for a in arrays]
    x = base[k]
    out = np.zeros_like(x)
    flat, grad = x.reshape(-1), out.reshape(-1)
    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + EPS
        hi = f(*base)
        flat[i] = keep - EPS
        lo = f(*base)
        flat[i] = keep
        grad[i] = (hi - lo) / (2 * EPS)
    return out


def test_every_op_is_covered():
    assert set(GRAD_CASES) | NO_GRADIENT == set(cf.graph_ops)
    assert not set(GRAD_CASES) & NO_GRADIENT


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradient_matches_finite_differences(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for arrays, kwargs in GRAD_CASES[name]:
        g = cf.Graph()
        ins = [g.input("x%d" % i, "float64", a.shape) for i, a in enumerate(arrays)]
        out = getattr(cf, name)(*ins, **kwargs)
        # A random upstream gradient: the loss weights every output element differently.
        w = rng.standard_normal(out.shape)
        loss = cf.sum(out * g.constant(w))
        grads = cf.grad(loss, ins)
        assert [d.shape for d in grads] == [a.shape for a in arrays]
        assert all(d.dtype == np.float64 for d in grads)

        def f(*xs):
            return float(np.sum(REF[name](*xs, **kwargs) * w))

        want = [numeric_grad(f, arrays, k) for k in range(len(arrays))]
        for machine in (cf.TapeMachine(g), cf.GoMachine(g, workers=2)):
            machine.run(dict(zip(ins, arrays)))
            for k, d in enumerate(grads):
                np.testing.assert_allclose(machine.result(d).numpy(), want[k], rtol=1e-5,
                                           atol=1e-7, err_msg="%s %r operand %d" % (name, kwargs, k))


def test_gradient_through_a_cast_to_float32_is_cast_back():
    g = cf.Graph()
    x = g.input("x", "float64", (2, 3))
    w = np.random.default_rng(5).standard_normal((2, 3)).astype(np.float32)
    loss = cf.sum(cf.cast(x, "float32") * g.constant(w))
    (dx,) = cf.grad(loss, [x])
    assert dx.dtype == np.float64
    m = cf.TapeMachine(g)
    m.run({x: np.ones((2, 3))})
    np.testing.assert_array_equal(m.result(dx).numpy(), w.astype(np.float64))


def test_ops_without_gradient_stop_it():
    g = cf.Graph()
    x = g.input("x", "float64", (3,))
    stopped = cf.cast(cf.less(x, 0.5), "float64") + cf.cast(cf.argmax(x), "float64")
    loss = cf.sum(x * 2.0 + stopped)
    (dx,) = cf.grad(loss, [x])
    m = cf.GoMachine(g)
    m.run({x: np.array([0.1, 0.9, 0.4])})
    np.testing.assert_array_equal(m.result(dx).numpy(), [2.0, 2.0, 2.0])


def test_an_mlp_loss_gradient_matches_finite_differences():
    """The training example's loss: -sum(log_softmax(relu(x w1 + b1) w2 + b2) * y)."""
    rng = np.random.default_rng(3)
    xv, yv = rng.standard_normal((5, 4)), np.eye(3)[rng.integers(0, 3, 5)]
    params = [rng.standard_normal((4, 6)), rng.standard_normal(6) * 0.1,
              rng.standard_normal((6, 3)), rng.standard_normal(3) * 0.1]
    g = cf.Graph()
    x, y = g.input("x", "float64", xv.shape), g.input("y", "float64", yv.shape)
    ps = [g.input("p%d" % i, "float64", p.shape) for i, p in enumerate(params)]
    logits = cf.relu(x @ ps[0] + ps[1]) @ ps[2] + ps[3]
    loss = -cf.sum(cf.log_softmax(logits, 1) * y)
    grads = cf.grad(loss, ps)

    def f(w1, b1, w2, b2):
        z = np.maximum(xv @ w1 + b1, 0) @ w2 + b2
        return float(-np.sum(REF["log_softmax"](z, 1) * yv))

    m = cf.GoMachine(g, workers=2)
    m.run({x: xv, y: yv, **dict(zip(ps, params))})
    assert m.result(loss).numpy().item() == pytest.approx(f(*params), rel=1e-12)
    for k, d in enumerate(grads):
        np.testing.assert_allclose(m.result(d).numpy(), numeric_grad(f, params, k), rtol=1e-5,
                                   atol=1e-7)
