"""The op table from Python: cf.op nodes and their gradients (the rows' rules), append_backward on
a program, PersistentScope across runs, and the errors naming the op, slot or attribute."""
import numpy as np
import pytest

import chanflow as cf
from conftest import VT, block, op, tvar


def test_a_table_op_node_and_its_gradient():
    g = cf.Graph()
    x = g.input("x", "float64", (4, 3))
    w = g.input("w", "float64", (3, 2))
    y = cf.op("mul", {"X": x, "Y": w})
    loss = cf.op("mean", {"X": cf.op("square", {"X": y})})
    (gw,) = cf.grad(loss, [w])
    m = cf.TapeMachine(g)
    rng = np.random.default_rng(1)
    xv, wv = rng.normal(size=(4, 3)), rng.normal(size=(3, 2))
    m.run({x: xv, w: wv})
    np.testing.assert_allclose(m.result(loss).numpy(), [np.mean((xv @ wv) ** 2)], rtol=1e-12)
    np.testing.assert_allclose(m.result(gw).numpy(), 2 * xv.T @ (xv @ wv) / 8, rtol=1e-12)


def test_op_outputs_and_table_op_types():
    assert {"mul", "mul_grad", "mean", "sum", "elementwise_add_grad"} <= set(cf.table_op_types())
    g = cf.Graph()
    x = g.input("x", "float32", (2, 3))
    outs = cf.op_outputs("mul", {"X": x, "Y": g.input("y", "float32", (3, 4))})
    assert list(outs) == ["Out"] and outs["Out"].shape == (2, 4)


def test_errors_name_the_op_and_what_is_wrong():
    g = cf.Graph()
    x = g.input("x", "float64", (4, 3))
    with pytest.raises(cf.Error, match="no input slot 'Z'"):
        cf.op("mul", {"X": x, "Z": x})
    with pytest.raises(cf.Error, match="no attribute 'bogus'"):
        cf.op("mul", {"X": x, "Y": x}, {"bogus": 1})
    with pytest.raises(cf.TypeError, match="x_num_col_dims"):
        cf.op("mul", {"X": x, "Y": x}, {"x_num_col_dims": "a"})
    with pytest.raises(cf.ShapeError, match="mul"):
        cf.op("mul", {"X": x, "Y": x})
    with pytest.raises(cf.Error, match="the op table has no such op"):
        cf.op("no_such_op", {"X": x})
    with pytest.raises(cf.Error, match="only the executor runs it"):
        cf.op("elementwise_add", {"X": x, "Y": x})


def linear_program():
    # loss = mean((x @ w - t)^2); w persistable.
    return cf.Program.from_blocks([block(0, -1, [
        tvar("x", VT.FP64, [8, 3]), tvar("t", VT.FP64, [8, 1]),
        dict(tvar("w", VT.FP64, [3, 1]), persistable=True),
        tvar("p", VT.FP64, []), tvar("d", VT.FP64, []), tvar("s", VT.FP64, []),
        tvar("loss", VT.FP64, [1])], [
        op("mul", [("X", ["x"]), ("Y", ["w"])], [("Out", ["p"])]),
        op("elementwise_sub", [("X", ["p"]), ("Y", ["t"])], [("Out", ["d"])]),
        op("square", [("X", ["d"])], [("Out", ["s"])]),
        op("mean", [("X", ["s"])], [("Out", ["loss"])]),
    ])])


def test_append_backward_and_a_persistent_scope_train_a_linear_model():
    prog, pairs = cf.append_backward(linear_program(), "loss")
    assert pairs == [("w", "w@GRAD")]
    rng = np.random.default_rng(2)
    x = rng.normal(size=(8, 3))
    true_w = np.array([[1.0], [-2.0], [0.5]])
    t = x @ true_w
    scope = cf.PersistentScope()
    scope.set("w", np.zeros((3, 1)))
    ex = cf.Executor()
    losses = []
    for _ in range(200):
        loss, grad = ex.run(prog, feed={"x": x, "t": t}, fetch=["loss", "w@GRAD"], scope=scope)
        losses.append(loss.numpy()[0])
        # Plain gradient descent by hand (the optimiser ops are tested elsewhere).
        np.testing.assert_allclose(grad.numpy(),
                                   2 * x.T @ (x @ scope.find("w").numpy() - t) / 8, rtol=1e-10)
        scope.set("w", scope.find("w").numpy() - 0.1 * grad.numpy())
    assert losses[-1] < 1e-6 * losses[0]
    np.testing.assert_allclose(scope.find("w").numpy(), true_w, atol=1e-3)


def test_append_backward_errors():
    with pytest.raises(cf.Error, match="'nope'"):
        cf.append_backward(linear_program(), "nope")
    with pytest.raises(cf.Error, match="missing"):
        cf.append_backward(linear_program(), "loss", parameter_list=["missing"])
