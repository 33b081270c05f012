"""fluid.layers.IfElse, Switch and ConditionalBlock (forward programs): the ops Fluid built them
from (split_lod_tensor / conditional_block / merge_lod_tensor; conditional_block with
is_scalar_condition guarded by logical_not / logical_and), their results against NumPy for
masks that split, all-true and all-false masks, a piecewise learning-rate schedule over runs,
and the errors."""

import numpy as np
import pytest

import chanflow
import chanflow.fluid as fluid
from chanflow.fluid import layers


@pytest.fixture
def env():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), fluid.scope_guard(
        fluid.core.Scope()
    ):
        yield main, startup, fluid.Executor(fluid.CPUPlace())


def tensor(name):
    return np.array(fluid.global_scope().find_var(name).get_tensor())


def ifelse_program():
    """Per row: x * 2 + 1 where x[:, 0] < limit, else -x; plus the first column alone."""
    x = layers.data("x", shape=[3])
    limit = layers.data("limit", shape=[1])
    first = layers.data("first", shape=[1])
    cond = layers.less_than(x=first, y=limit)
    ie = layers.IfElse(cond)
    with ie.true_block():
        xt = ie.input(x)
        ie.output(layers.scale(xt, scale=2.0, bias=1.0), layers.reduce_sum(xt, dim=1,
                                                                           keep_dim=True))
    with ie.false_block():
        xf = ie.input(x)
        ie.output(layers.scale(xf, scale=-1.0), layers.scale(layers.reduce_sum(xf, dim=1,
                                                                                keep_dim=True),
                                                             scale=0.0))
    return ie, ie()


@pytest.mark.parametrize("mask", ["mixed", "all_true", "all_false"])
def test_ifelse_computes_each_row_in_its_branch(env, mask):
    main, startup, exe = env
    ie, (out, sums) = ifelse_program()
    rng = np.random.RandomState(1)
    X = rng.randn(7, 3).astype("float32")
    lim = {"mixed": 0.0, "all_true": 100.0, "all_false": -100.0}[mask]
    L = np.full((7, 1), lim, "float32")
    got, got_sums = exe.run(main, feed={"x": X, "limit": L, "first": X[:, :1].copy()},
                            fetch_list=[out, sums])
    c = X[:, :1] < lim
    if mask == "mixed":
        assert 0 < c.sum() < 7
    np.testing.assert_allclose(got, np.where(c, X * 2 + 1, -X), rtol=1e-6)
    np.testing.assert_allclose(got_sums, np.where(c, X.sum(1, keepdims=True), 0.0), rtol=1e-5,
                               atol=1e-6)
    assert got.shape == (7, 3) and got_sums.shape == (7, 1)


def test_ifelse_ops_are_fluids(env):
    main, startup, exe = env
    ie, outs = ifelse_program()
    block = main.global_block()
    types = [op.type for op in block.ops]
    # x is split once, for both blocks
    assert types == ["less_than", "split_lod_tensor", "conditional_block", "conditional_block",
                     "merge_lod_tensor", "merge_lod_tensor"]
    split = block.ops[1]
    assert split.input("Mask") == [ie.cond.name] and split.attr("level") == 0
    true_in, false_in = split.output("OutTrue")[0], split.output("OutFalse")[0]
    assert true_in.startswith("ifelse_inputifelse_0") and false_in != true_in
    cb = block.ops[2]
    assert cb.input("X") == [ie.cond.name] and cb.attr("is_scalar_condition") is False
    assert cb.input("Params") == [true_in]
    assert cb.output("Out") == sorted(v.name for v in ie.output_table[1])
    sub = cb.attr("sub_block")
    assert [op.type for op in sub.ops][-2:] == ["assign", "assign"]
    assert block.ops[3].input("Params") == [false_in]
    merge = block.ops[4]
    assert merge.input("Mask") == merge.input("X") == [ie.cond.name]
    assert merge.input("InTrue") == [ie.output_table[1][0].name]
    assert merge.input("InFalse") == [ie.output_table[0][0].name]
    assert [v.name for v in outs] == [op.output("Out")[0] for op in block.ops[4:]]


def test_ifelse_with_fc_layers_in_the_branches(env):
    main, startup, exe = env
    x = layers.data("x", shape=[4])
    c = layers.data("c", shape=[1], dtype="bool")
    ie = layers.IfElse(c)
    with ie.true_block():
        ie.output(layers.fc(ie.input(x), size=3, act="tanh", param_attr="wt", bias_attr=False))
    with ie.false_block():
        ie.output(layers.fc(ie.input(x), size=3, param_attr="wf", bias_attr="bf"))
    (out,) = ie()
    exe.run(startup)
    X = np.random.RandomState(2).randn(6, 4).astype("float32")
    C = np.array([[1], [0], [0], [1], [1], [0]], bool)
    (got,) = exe.run(main, feed={"x": X, "c": C}, fetch_list=[out])
    want = np.where(C, np.tanh(X @ tensor("wt")), X @ tensor("wf") + tensor("bf"))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_ifelse_with_outputs_in_one_block_returns_them_unmerged(env):
    main, startup, exe = env
    x = layers.data("x", shape=[2])
    c = layers.data("c", shape=[1], dtype="bool")
    ie = layers.IfElse(c)
    with ie.true_block():
        ie.output(layers.scale(ie.input(x), scale=3.0))
    outs = ie()
    assert outs == ie.output_table[1] and len(outs) == 1
    X = np.arange(8, dtype="float32").reshape(4, 2)
    C = np.array([[0], [1], [0], [1]], bool)
    (got,) = exe.run(main, feed={"x": X, "c": C}, fetch_list=[outs[0]])
    np.testing.assert_array_equal(got, 3 * X[C[:, 0]])  # the true rows only


def test_ifelse_misuse_raises(env):
    main, startup, exe = env
    x = layers.data("x", shape=[2])
    c = layers.data("c", shape=[1], dtype="bool")
    with pytest.raises(TypeError, match="BOOL"):
        layers.IfElse(x)
    ie = layers.IfElse(c)
    with pytest.raises(ValueError, match="true_block"):
        ie.input(x)
    with pytest.raises(ValueError, match="output"):
        ie.output(x)
    with pytest.raises(ValueError, match="set outputs first"):
        ie()
    with pytest.raises(ValueError, match="set no output"):
        with ie.true_block():
            ie.input(x)
    assert main.current_block_idx == 0  # the guard left the block
    ie2 = layers.IfElse(c)
    with ie2.true_block():
        ie2.output(ie2.input(x), ie2.input(x))
    with ie2.false_block():
        ie2.output(ie2.input(x))
    with pytest.raises(ValueError, match="2 outputs, the false block 1"):
        ie2()


def test_ifelse_mask_errors_name_the_op(env):
    main, startup, exe = env
    ie, (out, _) = ifelse_program()
    X = np.zeros((4, 3), "float32")
    with pytest.raises(chanflow.ShapeError, match="split_lod_tensor: Mask has 3 rows but X has 4"):
        exe.run(main, feed={"x": X, "limit": np.zeros((3, 1), "float32"),
                            "first": np.zeros((3, 1), "float32")}, fetch_list=[out])


def test_ifelse_has_no_gradient_and_says_so(env):
    main, startup, exe = env
    x = layers.data("x", shape=[2])
    c = layers.data("c", shape=[1], dtype="bool")
    ie = layers.IfElse(c)
    with ie.true_block():
        ie.output(layers.fc(ie.input(x), size=1))
    with ie.false_block():
        ie.output(layers.fc(ie.input(x), size=1))
    (out,) = ie()
    loss = layers.mean(out)
    with pytest.raises(chanflow.Error, match="merge_lod_tensor.*conditional_block"):
        fluid.optimizer.SGD(0.1).minimize(loss)


def test_split_and_merge_lod_tensor_layers_round_trip(env):
    main, startup, exe = env
    x = layers.data("x", shape=[2, 2])
    m = layers.data("m", shape=[1], dtype="bool")
    t, f = layers.split_lod_tensor(input=x, mask=m)
    back = layers.merge_lod_tensor(in_true=t, in_false=f, x=x, mask=m)
    X = np.arange(20, dtype="float32").reshape(5, 2, 2)
    M = np.array([[1], [0], [1], [1], [0]], bool)
    gt, gf, gb = exe.run(main, feed={"x": X, "m": M}, fetch_list=[t, f, back])
    np.testing.assert_array_equal(gt, X[M[:, 0]])
    np.testing.assert_array_equal(gf, X[~M[:, 0]])
    np.testing.assert_array_equal(gb, X)
    # chanflow's tensors carry no LoD: level 0 (the rows) only
    layers.split_lod_tensor(input=x, mask=m, level=1)
    with pytest.raises(chanflow.ProgramError, match="split_lod_tensor.*'level' must be 0"):
        exe.run(main, feed={"x": X, "m": M}, fetch_list=[t])


def schedule_program(boundaries, values):
    """Fluid's piecewise_decay: a persistable step counter incremented each run, and lr set by
    a Switch over step < boundary[i]."""
    step = layers.create_global_var(shape=[1], value=0.0, dtype="float32", persistable=True,
                                    name="step")
    layers.increment(step, 1.0)
    lr = layers.create_global_var(shape=[1], value=0.0, dtype="float32", persistable=True,
                                  name="lr")
    with layers.Switch() as switch:
        for b, v in zip(boundaries, values):
            bound = layers.fill_constant(shape=[1], dtype="float32", value=float(b))
            value = layers.fill_constant(shape=[1], dtype="float32", value=float(v))
            with switch.case(layers.less_than(step, bound)):
                layers.assign(value, lr)
        last = layers.fill_constant(shape=[1], dtype="float32", value=float(values[-1]))
        with switch.default():
            layers.assign(last, lr)
    return step, lr


def test_switch_piecewise_learning_rate_schedule(env):
    main, startup, exe = env
    step, lr = schedule_program([3, 6], [1.0, 0.5, 0.1])
    exe.run(startup)
    got = [float(exe.run(main, fetch_list=[lr])[0][0]) for _ in range(8)]
    want = [1.0 if s < 3 else 0.5 if s < 6 else 0.1 for s in range(1, 9)]
    np.testing.assert_allclose(got, want, rtol=1e-7)


def test_switch_ops_are_fluids(env):
    main, startup, exe = env
    schedule_program([3, 6], [1.0, 0.5, 0.1])
    ops = main.global_block().ops
    types = [op.type for op in ops]
    assert types.count("conditional_block") == 3
    assert types.count("logical_not") == 2 and types.count("logical_and") == 2
    cbs = [op for op in ops if op.type == "conditional_block"]
    assert all(op.attr("is_scalar_condition") is True for op in cbs)
    first_cond = [op for op in ops if op.type == "less_than"][0].output("Out")[0]
    assert cbs[0].input("X") == [first_cond]
    # case 2 runs under (not c0) and c1, the default under (not c0) and (not c1)
    ands = [op for op in ops if op.type == "logical_and"]
    nots = [op for op in ops if op.type == "logical_not"]
    assert cbs[1].input("X") == ands[1].output("Out")
    assert cbs[2].input("X") == ands[0].output("Out")
    assert nots[0].input("X") == [first_cond]
    for cb in cbs:
        assert cb.output("Out") == ["lr"]


def test_switch_runs_only_the_first_true_case(env):
    main, startup, exe = env
    a = layers.data("a", shape=[1], dtype="bool", append_batch_size=False)
    b = layers.data("b", shape=[1], dtype="bool", append_batch_size=False)
    out = layers.create_global_var(shape=[1], value=-1.0, dtype="float32", persistable=True,
                                   name="out")
    hits = layers.create_global_var(shape=[1], value=0.0, dtype="float32", persistable=True,
                                    name="hits")
    consts = [layers.fill_constant(shape=[1], dtype="float32", value=v) for v in (1.0, 2.0, 3.0)]
    with layers.Switch() as switch:
        with switch.case(a):
            layers.assign(consts[0], out)
            layers.increment(hits, 1.0)
        with switch.case(b):
            layers.assign(consts[1], out)
            layers.increment(hits, 1.0)
        with switch.default():
            layers.assign(consts[2], out)
            layers.increment(hits, 1.0)
    exe.run(startup)
    for av, bv, want in ((True, True, 1.0), (True, False, 1.0), (False, True, 2.0),
                         (False, False, 3.0)):
        before = float(tensor("hits")[0])
        (o,) = exe.run(main, feed={"a": np.array([av]), "b": np.array([bv])}, fetch_list=[out])
        assert o[0] == want, (av, bv)
        assert float(tensor("hits")[0]) == before + 1  # exactly one case ran


def test_switch_misuse_raises(env):
    main, startup, exe = env
    c = layers.fill_constant(shape=[1], dtype="bool", value=1.0)
    x = layers.fill_constant(shape=[1], dtype="float32", value=1.0)
    switch = layers.Switch()
    with pytest.raises(ValueError, match="inside"):
        switch.case(c)
    with layers.Switch() as switch:
        with pytest.raises(ValueError, match="at least one case"):
            switch.default()
        with pytest.raises(TypeError, match="BOOL"):
            switch.case(x)
        with pytest.raises(TypeError, match="one element"):
            switch.case(layers.fill_constant(shape=[2], dtype="bool", value=1.0))
        with switch.case(c):
            layers.assign(x, x)
        with switch.default():
            layers.assign(x, x)
        with pytest.raises(ValueError, match="default must come last"):
            switch.case(c)
        with pytest.raises(ValueError, match="one default"):
            switch.default()
    assert main.current_block_idx == 0


def test_conditional_block_scalar_condition(env):
    main, startup, exe = env
    flag = layers.data("flag", shape=[1], dtype="bool", append_batch_size=False)
    x = layers.data("x", shape=[3], append_batch_size=False)
    y = layers.create_global_var(shape=[3], value=0.0, dtype="float32", persistable=True,
                                 name="y")
    cb = layers.ConditionalBlock([flag], is_scalar_condition=True)
    with cb.block():
        layers.assign(layers.scale(x, scale=10.0), y)
    op = main.global_block().ops[-1]
    assert op.type == "conditional_block" and op.input("Params") == ["x"]
    exe.run(startup)
    X = np.array([1, 2, 3], "float32")
    exe.run(main, feed={"flag": np.array([False]), "x": X})
    np.testing.assert_array_equal(tensor("y"), [0, 0, 0])
    exe.run(main, feed={"flag": np.array([True]), "x": X})
    np.testing.assert_array_equal(tensor("y"), 10 * X)
    with pytest.raises(ValueError, match="one variable"):
        layers.ConditionalBlock([flag, flag], is_scalar_condition=True)
