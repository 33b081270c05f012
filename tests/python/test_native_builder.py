"""chanflow.ProgramBuilder: the C++ builder from Python. The programs of examples/programs are
built here as tests/ir/paddle_programs.h builds them in C++: each must equal its checked-in file
and compute its result when run."""
import gc
import os
import weakref

import numpy as np
import pytest

import chanflow as cf


# ---- the programs of examples/programs (tests/ir/paddle_programs.h, line by line) ----

def go_op():
    b = cf.ProgramBuilder()
    ch = b.make_channel("int64", 10, "channel")
    with b.go():
        b.channel_send(ch, b.fill_constant([1], "int64", 99))
    result = b.fill_constant([1], "int64", -1, b.var("result", "int64", [1]))
    b.channel_recv(ch, result)
    b.channel_close(ch)
    return b.build()


def simple_routine():
    b = cf.ProgramBuilder()
    ch = b.make_channel(np.float64, 0, "channel")
    with b.go():
        b.channel_send(ch, b.fill_constant([1], np.float64, 1234))
    result = b.var("result", np.float64, [1])
    b.channel_recv(ch, result)
    b.channel_close(ch)
    return b.build()


def daisy_chain(n=100):
    b = cf.ProgramBuilder()
    ch = [b.make_channel("int64", 0, "ch_%d" % i) for i in range(n + 1)]
    for i in range(n):
        with b.go():
            v, ok = b.channel_recv(ch[i + 1])
            b.channel_send(ch[i], b.increment(v, 1.0))
    with b.go():
        b.channel_send(ch[n], b.fill_constant([1], "int64", 1))
    result = b.var("result", "int64", [1])
    b.channel_recv(ch[0], result)
    return b.build()


def daisy_chain_while(n=10000):
    b = cf.ProgramBuilder()
    leftmost = b.make_channel("int64", 0, "leftmost")
    left = b.assign(leftmost, b.declare_channel("left", cf.VarType.INT64, 0))
    i = b.fill_constant([1], "int64", 0, b.var("i", "int64", [1]))
    limit = b.fill_constant([1], "int64", n, b.var("n", "int64", [1]))
    cond = b.less_than(i, limit, b.var("cond", "bool", [1]))
    with b.while_loop(cond):
        right = b.make_channel("int64", 0, "right")
        with b.go():
            v, ok = b.channel_recv(right)
            b.channel_send(left, b.increment(v, 1.0))
        b.assign(right, left)
        b.increment(i, 1.0, i)
        b.less_than(i, limit, cond)
    with b.go():
        b.channel_send(left, b.fill_constant([1], "int64", 1))
    result = b.var("result", "int64", [1])
    b.channel_recv(leftmost, result)
    return b.build()


def select_free_slot():
    b = cf.ProgramBuilder()
    ch = b.make_channel("float64", 1, "channel")
    x = b.fill_constant([1], "float64", 10, b.var("x", "float64", [1]))
    sent = b.fill_constant([1], "bool", 0, b.var("sent", "bool", [1]))
    with b.select() as sel:
        with sel.case_send(ch, x):
            b.fill_constant([1], "bool", 1, sent)
        with sel.case_default():
            pass
    result = b.var("result", "float64", [1])
    b.channel_recv(ch, result)
    return b.build()


def fibonacci():
    b = cf.ProgramBuilder()
    ch = b.make_channel("int64", 0, "ch")
    quit = b.make_channel("int64", 0, "quit")
    x = b.fill_constant([1], "int64", 0, b.var("x", "int64", [1]))
    y = b.fill_constant([1], "int64", 1, b.var("y", "int64", [1]))
    result = b.fill_constant([1], "int64", -1, b.var("result", "int64", [1]))
    with b.go():
        i = b.fill_constant([1], "int64", 0, b.var("i", "int64", [1]))
        ten = b.fill_constant([1], "int64", 10, b.var("ten", "int64", [1]))
        last = b.fill_constant([1], "int64", -1, b.var("last", "int64", [1]))
        more = b.less_than(i, ten, b.var("more", "bool", [1]))
        with b.while_loop(more):
            b.channel_recv(ch, last)
            b.increment(i, 1.0, i)
            b.less_than(i, ten, more)
        b.channel_send(quit, last)
    run = b.fill_constant([1], "bool", 1, b.var("run", "bool", [1]))
    with b.while_loop(run):
        with b.select() as sel:
            with sel.case_send(ch, x):
                tmp = b.assign(x)
                b.assign(y, x)
                b.elementwise_add(tmp, y, y)
            with sel.case_recv(quit, result):
                b.fill_constant([1], "bool", 0, run)
    return b.build()


def ping_pong():
    b = cf.ProgramBuilder()
    pings = b.make_channel("float64", 1, "pings")
    pongs = b.make_channel("float64", 1, "pongs")
    b.channel_send(pings, b.fill_constant([1], "float64", 9, b.var("msg", "float64", [1])))
    m, ok = b.channel_recv(pings)
    b.channel_send(pongs, m)
    result = b.var("result", "float64", [1])
    b.channel_recv(pongs, result)
    b.channel_close(pings)
    b.channel_close(pongs)
    return b.build()


CASES = [("go_op", go_op, 99), ("simple_routine", simple_routine, 1234),
         ("daisy_chain", daisy_chain, 101), ("daisy_chain_while", daisy_chain_while, 10001),
         ("select_free_slot", select_free_slot, 10), ("fibonacci", fibonacci, 34),
         ("ping_pong", ping_pong, 9)]


@pytest.mark.parametrize("name,build,expected", CASES, ids=[c[0] for c in CASES])
def test_builds_the_example_programs_and_runs_them(source_dir, name, build, expected):
    p = build()
    assert isinstance(p, cf.Program) and p.type_key == "ir.Program"
    path = os.path.join(source_dir, "examples", "programs", name + ".pbtxt")
    assert p == cf.load_program(path), name
    (result,) = cf.Executor().run(p, fetch=["result"], timeout=60)
    assert result.numpy().tolist() == [expected]


def test_select_free_slot_takes_the_send_case():
    sent, result = cf.Executor().run(select_free_slot(), fetch=["sent", "result"], timeout=30)
    assert sent.numpy().tolist() == [True] and result.numpy().tolist() == [10.0]


# ---- vars, dtypes, compute ops ----

def test_vars_and_their_types():
    b = cf.ProgramBuilder()
    x = b.var("x", "float32", [2, 3])
    assert (x.name, x.type, x.element, x.dtype, x.block, x.is_channel, x.valid) == \
        ("x", cf.VarType.LOD_TENSOR, cf.VarType.FP32, np.dtype("float32"), 0, False, True)
    assert repr(x) == "Var('x', LOD_TENSOR FP32, block 0)"
    assert b.var("y", cf.VarType.INT64).dtype == np.dtype("int64")
    ch = b.make_channel(cf.VarType.LOD_TENSOR, 2)
    assert ch.is_channel and ch.type == cf.VarType.CHANNEL and ch.element == cf.VarType.LOD_TENSOR
    assert ch.name == "channel_0"
    with pytest.raises(cf.TypeError, match="not a tensor with a dtype"):
        ch.dtype  # noqa: B018
    cc = b.make_channel(cf.VarType.CHANNEL)
    assert cc.element == cf.VarType.CHANNEL
    assert b.lookup("x").name == "x"
    assert int(cf.VarType.INT64) == 3 and int(cf.VarType.CHANNEL) == 16
    assert int(cf.VarType.LOD_TENSOR) == 7 and int(cf.VarType.INT8) == 21


def test_compute_ops_match_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = cf.ProgramBuilder()
    x = b.var("x", "float32", [2, 3])
    y = b.var("w", "float32", [3, 4])
    mm = b.matmul(x, y)
    sm = b.softmax(mm, axis=-1)
    rs = b.reduce_sum(mm, [1], keep_dim=True)
    rm = b.reduce_mean(mm, [0])
    sc = b.scale(x, 2.0, bias=1.0)
    th = b.tanh(x)
    rl = b.relu(x)
    sg = b.sigmoid(x)
    tr = b.transpose(x, [1, 0])
    rh = b.reshape(x, [3, 2])
    ct = b.cast(x, "int32")
    mx = b.elementwise_max(x, b.fill_constant([1], "float32", 0.0))
    gt = b.greater_than(x, b.fill_constant([1], "float32", 0.0))
    nt = b.logical_not(gt)
    p = b.build()
    names = [v.name for v in (mm, sm, rs, rm, sc, th, rl, sg, tr, rh, ct, mx, gt, nt)]
    out = [t.numpy() for t in cf.Executor().run(p, feed={"x": a, "w": w}, fetch=names)]
    m = a @ w
    e = np.exp(m - m.max(axis=-1, keepdims=True))
    want = [m, e / e.sum(axis=-1, keepdims=True), m.sum(1, keepdims=True), m.mean(0), a * 2 + 1,
            np.tanh(a), np.maximum(a, 0), 1 / (1 + np.exp(-a)), a.T, a.reshape(3, 2),
            a.astype(np.int32), np.maximum(a, 0), a > 0, ~(a > 0)]
    for name, got, exp in zip(names, out, want):
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-6, err_msg=name)


def test_conditional_block_and_append_op():
    b = cf.ProgramBuilder()
    x = b.var("x", "int64", [1])
    big = b.greater_than(x, b.fill_constant([1], "int64", 10))
    out = b.fill_constant([1], "int64", 0, b.var("out", "int64", [1]))
    with b.conditional_block(big) as g:
        assert b.current_block() == g.block == 1
        one = b.fill_constant([1], "int64", 1)
        # Vars or names; attributes typed by the schema (axis is INT).
        b.append_op("elementwise_add", {"X": [out], "Y": [one.name]}, {"Out": ["out"]},
                    {"axis": -1})
    assert b.current_block() == 0
    p = b.build()
    ex = cf.Executor()
    assert ex.run(p, feed={"x": np.array([11])}, fetch=["out"])[0].numpy().tolist() == [1]
    assert ex.run(p, feed={"x": np.array([3])}, fetch=["out"])[0].numpy().tolist() == [0]
    with pytest.raises(cf.TypeError, match="attribute 'axis'"):
        b.append_op("elementwise_add", {"X": [out], "Y": [out]}, {"Out": [out]}, {"axis": "a"})


def test_build_again_gives_the_larger_program():
    b = cf.ProgramBuilder()
    x = b.fill_constant([1], "int64", 1, b.var("x", "int64", [1]))
    first = b.build()
    b.increment(x, 2.0, x)
    second = b.build()
    assert first != second
    assert cf.Executor().run(first, fetch=["x"])[0].numpy().tolist() == [1]
    assert cf.Executor().run(second, fetch=["x"])[0].numpy().tolist() == [3]


# ---- lifetimes ----

def test_vars_and_guards_keep_their_builder_alive():
    b = cf.ProgramBuilder()
    ref = weakref.ref(b)
    x = b.var("x", "int64", [1])
    g = b.go()
    del b
    gc.collect()
    assert ref() is not None and x.name == "x"
    g.close()
    del g, x
    gc.collect()
    assert ref() is None


def test_a_guard_dropped_unused_closes_its_block():
    b = cf.ProgramBuilder()
    b.go()  # closed at once when Python drops it, like a C++ temporary
    assert b.current_block() == 0
    assert b.build().num_blocks == 2


# ---- misuse ----

def test_arguments_of_the_wrong_type_name_the_method_and_argument():
    b = cf.ProgramBuilder()
    x = b.var("x", "int64", [1])
    cases = [
        (lambda: b.var(1, "int64"), r"ProgramBuilder.var: name: expected a str, got 'int'"),
        (lambda: b.var("y", "complex64"), r"ProgramBuilder.var: dtype: NumPy dtype 'complex64' "
                                          r"is not a chanflow dtype"),
        (lambda: b.var("y", "nonsense"), r"ProgramBuilder.var: dtype: expected a dtype"),
        (lambda: b.var("y", cf.VarType.CHANNEL), r"VarType.CHANNEL is not a tensor element"),
        (lambda: b.var("y", "int64", [1, "2"]), r"ProgramBuilder.var: dims\[1\]: expected an int"),
        (lambda: b.assign(x, out=5), r"ProgramBuilder.assign: out: expected a Var, got 'int'"),
        (lambda: b.elementwise_add(x, "x"), r"ProgramBuilder.elementwise_add: y: expected a Var"),
        (lambda: b.fill_constant([1], "int64", "7"), r"fill_constant: value: expected a number"),
        (lambda: b.matmul(x, x, transpose_x=1), r"matmul: transpose_x: expected a bool"),
        (lambda: b.make_channel("int64", capacity=1.5), r"make_channel: capacity: expected an int"),
        (lambda: b.while_loop(None), r"while_loop: cond: expected a Var, got 'NoneType'"),
    ]
    for call, pattern in cases:
        with pytest.raises(cf.TypeError, match=pattern):
            call()


def test_misuse_raises_the_cpp_builders_errors():
    b = cf.ProgramBuilder()
    x = b.var("x", "int64", [1])
    with pytest.raises(cf.Error, match="variable 'x' is already declared in block 0"):
        b.var("x", "int64")
    with pytest.raises(cf.Error, match="no variable 'nope'"):
        b.lookup("nope")
    other = cf.ProgramBuilder().var("z", "int64", [1])
    with pytest.raises(cf.Error, match="'z' belongs to another builder"):
        b.assign(other)
    with pytest.raises(cf.TypeError, match="'x' is not a channel"):
        b.channel_send(x, x)
    with pytest.raises(cf.Error, match="negative capacity -1"):
        b.make_channel("int64", capacity=-1)
    g = b.go()
    with pytest.raises(cf.Error, match="still open"):
        b.build()
    g2 = b.go()
    with pytest.raises(cf.Error, match="out of order"):
        g.close()
    g2.close()
    b2 = cf.ProgramBuilder()
    ch = b2.make_channel("int64")
    with pytest.raises(cf.Error, match="without any case"):
        with b2.select():
            pass
    b3 = cf.ProgramBuilder()
    ch = b3.make_channel("int64", 1)
    with b3.select() as s:
        with s.case_default():
            pass
        with pytest.raises(cf.Error, match="second default"):
            s.case_default()
        with s.case_recv(ch) as c:
            assert c.block >= 1
        assert s.last_received().name.startswith("select_recv")
    b3.build()


def test_a_with_body_that_raises_abandons_the_builder_as_cpp_unwinding_does():
    b = cf.ProgramBuilder()
    ch = b.make_channel("int64")
    with pytest.raises(ZeroDivisionError):
        with b.go():
            b.channel_send(ch, b.fill_constant([1], "int64", 1))
            1 / 0
    assert b.current_block() == 1  # the block stays open: the builder is broken
    with pytest.raises(cf.Error, match="unwound by an exception"):
        b.build()
