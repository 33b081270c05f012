"""chanflow.Graph, Node, the graph op functions, grad, GoMachine and TapeMachine from Python:
building and introspection, every op against NumPy, operators, runs, streams, tracing, close,
timeouts, overlapping calls, and a typed error naming the argument for every bad input."""
import json
import threading
import time

import numpy as np
import pytest

import chanflow as cf
from graph_reference import CASES, REF

MACHINES = [("tape", lambda g: cf.TapeMachine(g)), ("go1", lambda g: cf.GoMachine(g, workers=1)),
            ("go2", lambda g: cf.GoMachine(g, workers=2)), ("go", lambda g: cf.GoMachine(g))]


def run_once(g, node, bindings, machine=cf.TapeMachine):
    m = machine(g)
    m.run(bindings)
    return m.result(node).numpy()


# ---- building and introspection -----------------------------------------------------------------

def test_inputs_constants_and_inferred_nodes():
    g = cf.Graph()
    x = g.input("x", "float32", (2, 3))
    w = g.constant(np.ones((3, 4), np.float32), name="w")
    y = cf.relu(x @ w + 1.0)
    assert (x.id, x.name, x.op, x.shape, x.dtype) == (0, "x", "input", (2, 3), np.dtype("float32"))
    assert (w.op, w.shape, w.name) == ("constant", (3, 4), "w")
    assert y.op == "relu" and y.shape == (2, 4) and y.dtype == np.float32
    assert y.name == "relu%d" % y.id
    assert len(g) == 6  # x, w, matmul, the constant 1.0, add, relu
    assert [n.op for n in g.nodes()] == ["input", "constant", "matmul", "constant", "add", "relu"]
    assert g.node(0) == x and g.node(2).inputs == [x, w]
    add = y.inputs[0]
    assert add.op == "add" and add.inputs[0].op == "matmul" and add.inputs[1].shape == ()
    assert add.inputs[1].dtype == np.float32  # the number became a float32 constant
    assert y.graph == g and hash(y.graph) == hash(g) and x.graph is not g
    assert repr(x) == "Node(id=0, name='x', op='input', shape=(2, 3), dtype=float32)"
    assert repr(g) == "Graph(6 nodes)"
    dot = g.to_dot()
    assert dot.startswith("digraph")
    assert all('n%d [label="%s\\n%s ' % (n.id, n.name, n.op) in dot for n in g.nodes())
    assert "n2 -> n4" in dot


def test_a_node_keeps_its_graph_alive():
    def build():
        g = cf.Graph()
        x = g.input("x", "float64", (2,))
        return x, cf.exp(x) * 2
    x, y = build()  # the Graph object is gone; the nodes hold its storage
    assert len(y.graph) == 4 and y.inputs[0].inputs[0] == x
    np.testing.assert_allclose(run_once(y.graph, y, {x: np.array([0.0, 1.0])}), [2, 2 * np.e])


def test_scalar_dtypes():
    g = cf.Graph()
    assert g.scalar(1.5).dtype == np.float32  # a Python float: float32, like g.scalar(1.0f)
    assert g.scalar(3).dtype == np.int64
    assert g.scalar(True).dtype == np.bool_
    assert g.scalar(np.float64(2.5)).dtype == np.float64
    assert g.scalar(np.int16(7)).dtype == np.int16
    assert g.scalar(2, dtype="float64").dtype == np.float64
    big = g.scalar(2**62 + 1, name="big")
    assert big.name == "big" and int(run_once(g, big, {})) == 2**62 + 1  # exact, not via double


def test_constant_accepts_what_tensor_accepts():
    g = cf.Graph()
    a = g.constant([[1, 2], [3, 4]])
    b = g.constant(cf.tensor(np.arange(3, dtype=np.float32)))
    c = g.constant(2.5)
    assert (a.dtype, a.shape) == (np.int64, (2, 2))
    assert (b.dtype, b.shape) == (np.float32, (3,))
    assert (c.dtype, c.shape) == (np.float64, ())


def test_node_identity_equality_and_hash():
    g = cf.Graph()
    x = g.input("x", "float64", (2,))
    y = cf.neg(x)
    same = g.node(x.id)
    assert same == x and same is not x and hash(same) == hash(x)
    assert x != y and not (x == y)
    assert (x == 1) is False and (x != "x") is True
    assert {x: 1, y: 2}[same] == 1 and len({x, same, y}) == 2
    other = cf.Graph()
    assert other.input("x", "float64", (2,)) != x  # same id, another graph
    eq = cf.equal(x, y)  # elementwise equality is a function, never ==
    assert isinstance(eq, cf.Node) and eq.dtype == np.bool_


def test_graph_equality_is_identity_of_the_storage():
    g, h = cf.Graph(), cf.Graph()
    x = g.input("x", "float32", ())
    assert x.graph == g and x.graph != h and g != h


# ---- the op functions ---------------------------------------------------------------------------

def test_graph_ops_come_from_the_op_list_and_every_one_has_a_reference():
    assert cf.graph_ops == tuple(name for name, _, _ in cf._native._graph_ops)
    assert set(cf.graph_ops) == set(REF) == set(CASES)
    for name in cf.graph_ops:
        fn = getattr(cf, name)
        assert callable(fn) and fn.__doc__.startswith(name + "(")


def test_docs_list_every_op(source_dir):
    """docs/graph.md's op table names every op of the list (a new op must be documented)."""
    import os
    import re
    with open(os.path.join(source_dir, "docs", "graph.md")) as f:
        doc = f.read()
    table = doc[doc.index("## The op list"):doc.index("## Gradients")]
    listed = set(re.findall(r"[a-z_]+", " ".join(re.findall(r"\| `([a-z_ ]+)`", table))))
    assert set(cf.graph_ops) == listed


def test_star_import_does_not_shadow_builtins():
    ns = {}
    exec("from chanflow import *", ns)  # noqa: S102
    for builtin in ("sum", "max", "min", "abs", "pow"):
        assert builtin not in ns and hasattr(cf, builtin)
    assert ns["relu"] is cf.relu and ns["Graph"] is cf.Graph and ns["tensor"] is cf.tensor
    assert cf.tensor([1, 2]).shape == (2,)  # the op names break nothing else


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_op_matches_numpy(name):
    for arrays, kwargs in CASES[name]:
        g = cf.Graph()
        ins = [g.input("x%d" % i, a.dtype, a.shape) for i, a in enumerate(arrays)]
        node = getattr(cf, name)(*ins, **kwargs)
        want = np.asarray(REF[name](*arrays, **kwargs))
        assert node.shape == want.shape, (name, kwargs)
        assert node.dtype == want.dtype, (name, kwargs)
        for _, make in MACHINES[:2]:
            got = run_once(g, node, dict(zip(ins, arrays)), make)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12, err_msg=name)


def test_ops_take_numbers_on_either_side():
    g = cf.Graph()
    x = g.input("x", "float64", (3,))
    a = np.array([1.0, 2.0, 4.0])
    cases = {cf.add(x, 1): a + 1, cf.sub(2, x): 2 - a, cf.pow(x, 2): a ** 2,
             cf.maximum(x, 1.5): np.maximum(a, 1.5), cf.less(x, 2): a < 2,
             cf.div(1, x): 1 / a}
    m = cf.TapeMachine(g)
    m.run({x: a})
    for node, want in cases.items():
        np.testing.assert_array_equal(m.result(node).numpy(), want)


def test_python_operators():
    g = cf.Graph()
    x = g.input("x", "float64", (2, 2))
    y = g.input("y", "float64", (2, 2))
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    b = np.array([[0.5, -1.0], [2.0, 3.0]])
    exprs = {x + y: a + b, x - y: a - b, x * y: a * b, x / y: a / b, x ** y: a ** b, x @ y: a @ b,
             -x: -a, +x: a, abs(y): np.abs(b), x + 1: a + 1, 1 + x: 1 + a, 3 - x: 3 - a,
             x - 3: a - 3, 2 * x: 2 * a, x * 2: a * 2, x / 4: a / 4, 4 / x: 4 / a, x ** 2: a ** 2,
             2 ** x: 2 ** a, np.float64(2) * x: 2 * a}
    m = cf.GoMachine(g, workers=2)
    m.run({x: a, y: b})
    for node, want in exprs.items():
        np.testing.assert_allclose(m.result(node).numpy(), want, rtol=1e-12)
    m.close()


def test_operators_refuse_what_they_cannot_build():
    g = cf.Graph()
    x = g.input("x", "float64", (2,))
    for bad in (np.ones(2), "a", None, [1, 2]):
        with pytest.raises(TypeError):
            x + bad
        with pytest.raises(TypeError):
            bad * x
    with pytest.raises(TypeError):
        pow(x, 2, 3)
    with pytest.raises(TypeError):
        x < x  # comparisons are functions (cf.less): no elementwise operator


def test_a_number_never_changes_value_to_fit_the_node():
    g = cf.Graph()
    i = g.input("i", "int32", (2,))
    u = g.input("u", "uint8", (2,))
    with pytest.raises(cf.TypeError, match=r"add: b: 2\.5 does not fit a int32 node"):
        i + 2.5
    with pytest.raises(cf.TypeError, match="300"):
        u + 300
    with pytest.raises(cf.TypeError, match="-1"):
        cf.mul(-1, u)
    with pytest.raises(cf.TypeError):
        i + 2**40
    ok = i * 3 + 2.0  # an integral float fits
    assert ok.dtype == np.int32
    np.testing.assert_array_equal(run_once(g, ok, {i: np.array([1, 2], np.int32), u:
                                                   np.zeros(2, np.uint8)}), [5, 8])


def test_grad_returns_a_list_of_nodes():
    g = cf.Graph()
    w = g.input("w", "float64", (3,))
    loss = cf.sum(cf.square(w))
    (dw,) = cf.grad(loss, [w])
    unused = g.input("unused", "float64", (2,))
    both = cf.grad(loss, (w, unused))
    assert isinstance(both, list) and len(both) == 2
    assert dw.shape == (3,) and both[1].shape == (2,)
    m = cf.TapeMachine(g)
    m.run({w: np.array([1.0, -2.0, 3.0]), unused: np.zeros(2)})
    np.testing.assert_array_equal(m.result(dw).numpy(), [2.0, -4.0, 6.0])
    np.testing.assert_array_equal(m.result(both[1]).numpy(), [0.0, 0.0])


# ---- machines -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind,make", MACHINES)
def test_runs_with_new_bindings_and_defaults(kind, make):
    g = cf.Graph()
    x = g.input("x", "float32", (2, 3))
    b = g.input("b", "float32", (3,))
    g.set(b, [1, 2, 3])  # a list takes the input's dtype
    y = cf.tanh(x + b)
    with make(g) as m:
        for k in range(3):
            a = np.full((2, 3), k, np.float32)
            m.run({x: a})
            np.testing.assert_allclose(m.result(y).numpy(), np.tanh(a + [1, 2, 3]), rtol=1e-6)
            assert isinstance(m.result(x), cf.Tensor)
        m.run({x: np.zeros((2, 3), np.float32), b: np.ones(3, np.float32)})  # overrides set()
        np.testing.assert_allclose(m.result(y).numpy(), np.tanh(np.ones((2, 3))), rtol=1e-6)
    assert m.closed


def test_bindings_are_not_copied():
    g = cf.Graph()
    x = g.input("x", "float32", (1 << 12,))
    m = cf.GoMachine(g)
    a = np.arange(1 << 12, dtype=np.float32)
    m.run({x: a})
    got = m.result(x).numpy()
    assert got.__array_interface__["data"][0] == a.__array_interface__["data"][0]


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_stream_equals_one_run_per_item(workers):
    g = cf.Graph()
    x = g.input("x", "float64", (4,))
    h = cf.tanh(x * 2.0)
    y = cf.sum(h * h)
    items = [{x: np.random.default_rng(i).standard_normal(4)} for i in range(9)]
    with cf.GoMachine(g, window=3, workers=workers) as m:
        streamed = m.stream(items, [y, h])
        assert len(streamed) == 9 and all(len(row) == 2 for row in streamed)
        for item, (ys, hs) in zip(items, streamed):
            m.run(item)
            np.testing.assert_array_equal(ys.numpy(), m.result(y).numpy())
            np.testing.assert_array_equal(hs.numpy(), m.result(h).numpy())
        assert m.stream([], [y]) == []
    tape = cf.TapeMachine(g)
    for row, t_row in zip(streamed, tape.stream(items, [y, h])):
        np.testing.assert_array_equal(row[0].numpy(), t_row[0].numpy())


def test_close_is_idempotent_and_runs_after_close_raise():
    g = cf.Graph()
    x = g.input("x", "float64", ())
    y = x + 1.0
    for m in (cf.GoMachine(g), cf.TapeMachine(g)):
        m.run({x: np.float64(1)})
        m.close()
        m.close()
        assert m.closed
        with pytest.raises(cf.Error, match="closed"):
            m.run({x: np.float64(2)})
        with pytest.raises(cf.Error, match="closed"):
            m.stream([{x: np.float64(2)}], [y])
        assert m.result(y).numpy().item() == 2.0  # results stay readable


def test_tracing_records_a_node_slice_per_node_and_run():
    g = cf.Graph()
    x = g.input("x", "float32", (3,))
    y = cf.relu(x) + 1.0
    m = cf.GoMachine(g)
    cf.trace_start()
    try:
        m.run({x: np.ones(3, np.float32)})
        m.run({x: np.ones(3, np.float32)})
    finally:
        cf.trace_stop()
    doc = json.loads(cf.trace_json())
    assert doc["otherData"]["complete"] is True
    names = {e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
    assert {"%s (%s)" % (n.name, n.op) for n in g.nodes()} <= names
    nodes = [e for e in doc["traceEvents"] if e.get("cat") == "node"]
    assert len(nodes) == 2 * len(g) and {e["args"]["run"] for e in nodes} == {0, 1}
    by_id = {n.id: n for n in g.nodes()}
    for e in nodes:
        n = by_id[e["args"]["node"]]
        assert e["args"]["inputs"] == [o.id for o in n.inputs]
    m.run({x: np.ones(3, np.float32)})  # off: nothing more
    assert json.loads(cf.trace_json()) == doc
    assert y.op == "add"


def slow_op_graph(wait_s=30.0):
    """x -> a Python op that returns once its run is cancelled (or after wait_s seconds)."""
    g = cf.Graph()
    x = g.input("x", "float64", ())
    started = threading.Event()

    def slow(ctx, a):
        started.set()
        end = time.monotonic() + wait_s
        while not ctx.cancelled and time.monotonic() < end:
            time.sleep(0.005)
        ctx.check()  # raises the run's DeadlineExceededError / CanceledError
        return a

    y = g.apply(slow, [x], (), "float64", name="slow", context=True)
    return g, x, y, started


@pytest.mark.parametrize("kind", ["go", "tape"])
def test_timeout_raises_deadline_exceeded_and_the_machine_stays_usable(kind):
    g, x, y, _ = slow_op_graph()
    fast = cf.Graph()
    fx = fast.input("x", "float64", ())
    m = cf.GoMachine(g, workers=2) if kind == "go" else cf.TapeMachine(g)
    start = time.monotonic()
    with pytest.raises(cf.DeadlineExceededError):
        m.run({x: np.float64(1)}, timeout=0.2)
    assert time.monotonic() - start < 10.0  # the op saw the deadline and ended
    with pytest.raises(cf.Error, match="has not completed a run"):
        m.result(y)
    quick = cf.GoMachine(fast)
    quick.run({fx: np.float64(3)}, timeout=5)
    assert quick.result(fx).numpy().item() == 3.0
    with pytest.raises(cf.DeadlineExceededError):
        m.stream([{x: np.float64(1)}], [y], timeout=0.05)
    m.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_python_op_stopped_by_its_run_is_not_a_failure(workers):
    """The op's ctx.check() raising at the deadline is the run's cancellation, whichever the caller
    sees first (the deadline, or the run completed with that op stopped): DeadlineExceededError,
    never a MachineError, every time."""
    g, x, y, _ = slow_op_graph()
    m = cf.GoMachine(g, workers=workers)
    for _ in range(10):
        with pytest.raises(cf.DeadlineExceededError):
            m.run({x: np.float64(1)}, timeout=0.02)
    m.close()


def test_a_zero_timeout_runs_nothing():
    g = cf.Graph()
    x = g.input("x", "float64", ())
    with pytest.raises(cf.DeadlineExceededError):
        cf.GoMachine(g).run({x: np.float64(1)}, timeout=0)


def gated_graph():
    """x -> a Python op that waits (at most 30 s) until the test opens its gate."""
    g = cf.Graph()
    x = g.input("x", "float64", ())
    started, gate = threading.Event(), threading.Event()

    def wait(a):
        started.set()
        assert gate.wait(30)
        return a

    return g, x, g.apply(wait, [x], (), "float64", name="gated"), started, gate


def run_in_thread(m, bindings):
    """Starts m.run(bindings) on a new thread; join() returns what it raised (or None)."""
    out = []

    def body():
        try:
            m.run(bindings, timeout=60)
            out.append(None)
        except BaseException as e:  # noqa: B902 (reported to the test)
            out.append(e)

    t = threading.Thread(target=body)
    t.start()
    return lambda: (t.join(), out[0])[1]


def test_overlapping_calls_on_one_machine_raise_instead_of_racing():
    for make in (lambda g: cf.GoMachine(g, workers=2), cf.TapeMachine):
        g, x, y, started, gate = gated_graph()
        m = make(g)
        join = run_in_thread(m, {x: np.float64(1)})
        assert started.wait(30)
        for call in (lambda: m.run({x: np.float64(2)}), lambda: m.result(y), m.close,
                     lambda: m.stream([], [y])):
            with pytest.raises(cf.Error, match="in progress"):
                call()
        gate.set()
        assert join() is None
        assert m.result(y).numpy().item() == 1.0
        m.close()


def test_a_graph_is_not_built_while_a_machine_runs_it():
    """Adding nodes or setting inputs while a run reads the graph would race: refused, from
    another thread and from a Python op of the run; allowed again after the run."""
    g, x, y, started, gate = gated_graph()
    m = cf.GoMachine(g, workers=2)
    join = run_in_thread(m, {x: np.float64(1)})
    assert started.wait(30)
    for call in (lambda: g.input("late", "float64", ()), lambda: cf.exp(x), lambda: x + 1,
                 lambda: g.set(x, 1.0), lambda: g.constant(1.0), lambda: cf.grad(y, [x])):
        with pytest.raises(cf.Error, match="the graph is being run by a machine"):
            call()
    gate.set()
    assert join() is None
    other = cf.Graph()
    assert other.input("free", "float64", ()).op == "input"  # other graphs are not affected
    assert cf.exp(x).op == "exp"  # after the run

    h = cf.Graph()
    hx = h.input("x", "float64", ())
    h.apply(lambda a: hx + 1.0, [hx], (), "float64", name="builds")
    for machine in (cf.GoMachine(h), cf.TapeMachine(h)):
        with pytest.raises(cf.MachineError) as info:
            machine.run({hx: np.float64(1)})
        assert "being run by a machine" in str(info.value.__cause__)


def test_machines_on_different_threads_run_at_once():
    g = cf.Graph()
    x = g.input("x", "float64", (64, 64))
    y = cf.sum(cf.tanh(x @ x))
    results = {}

    def work(k):
        with cf.GoMachine(g, workers=1) as m:
            for _ in range(20):
                m.run({x: np.full((64, 64), k / 100.0)})
            results[k] = m.result(y).numpy().item()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        a = np.full((64, 64), k / 100.0)
        assert results[k] == pytest.approx(np.sum(np.tanh(a @ a)), rel=1e-12)


# ---- bad input: typed errors naming the argument ------------------------------------------------

def test_bad_graph_building_arguments():
    g = cf.Graph()
    x = g.input("x", "float32", (2, 3))
    cases = [
        (cf.TypeError, "Graph.input: name must be a str", lambda: g.input(1, "float32", (2,))),
        (cf.TypeError, "Graph.input: dtype 'floaty' is not a data type",
         lambda: g.input("a", "floaty", (2,))),
        (cf.TypeError, "Graph.input: dtype: NumPy dtype 'complex128' is not a chanflow dtype",
         lambda: g.input("a", np.complex128, (2,))),
        (cf.TypeError, "Graph.input: dtype: NumPy dtype '>f4' is not a chanflow dtype",
         lambda: g.input("a", ">f4", (2,))),
        (cf.TypeError, "Graph.input: dtype must be given", lambda: g.input("a", None, (2,))),
        (cf.TypeError, r"Graph.input: shape must be a tuple of ints, got 'int' 3",
         lambda: g.input("a", "float32", 3)),
        (cf.TypeError, r"Graph.input: shape\[1\] must be an int, got 'str'",
         lambda: g.input("a", "float32", (2, "3"))),
        (cf.TypeError, r"Graph.input: shape\[0\] must be an int, got 'float'",
         lambda: g.input("a", "float32", (2.0,))),
        (cf.TypeError, r"Graph.input: shape\[0\] must be an int, got 'bool'",
         lambda: g.input("a", "float32", (True,))),
        (cf.ShapeError, r"Graph.input: shape\[1\] must be an extent >= 0, got -1",
         lambda: g.input("a", "float32", (2, -1))),
        (cf.ShapeError, r"Graph.input: shape\[0\] must be an extent >= 0, got -5",
         lambda: g.input("a", "float32", (-5,))),
        (cf.ShapeError, r"^node 'big' \(input #\d+\): shape \(1099511627776, 1099511627776\) "
                        r"has more elements than int64 can count$",
         lambda: g.input("big", "float32", (2**40, 2**40))),
        (cf.ShapeError, r"^node 'big' \(input #\d+\): shape \(2305843009213693952,\) of "
                        r"float64 needs more bytes than int64 can count$",
         lambda: g.input("big", "float64", (2**61,))),
        (cf.ShapeError, r"node 'custom\d+' \(custom #\d+\): shape \(4294967296, 4294967296\) "
                        r"has more elements",
         lambda: g.apply(abs, [x], (2**32, 2**32), "float32")),
        (cf.ShapeError, r"Graph.apply: shape\[0\] must be an extent >= 0, got -3",
         lambda: g.apply(abs, [x], (-3,), "float32")),
        (cf.TypeError, "Graph.constant: value", lambda: g.constant("abc")),
        (cf.TypeError, "Graph.constant: name must be a str", lambda: g.constant(1.0, name=3)),
        (cf.TypeError, "Graph.scalar: value must be a number", lambda: g.scalar("1")),
        (cf.TypeError, "Graph.scalar: 300 does not fit a int8", lambda: g.scalar(300, "int8")),
        (cf.TypeError, "Graph.apply: fn must be callable", lambda: g.apply(1, [x], (2,), "f4")),
        (cf.TypeError, "Graph.apply: operands must be a list of chanflow.Node",
         lambda: g.apply(abs, x, (2,), "float32")),
        (cf.TypeError, r"Graph.apply: operands\[1\] must be a chanflow.Node",
         lambda: g.apply(abs, [x, 1], (2,), "float32")),
        (cf.TypeError, "Graph.apply: context must be a bool",
         lambda: g.apply(abs, [x], (2,), "float32", context=1)),
        (ValueError, "Graph.set: node 'add.*' is not an input", lambda: g.set(x + 1.0, [1])),
        (cf.ShapeError, r"set: node 'x' \(input #0\) has shape \(2, 3\), the value has shape \(3,\)",
         lambda: g.set(x, np.zeros(3, np.float32))),
        (cf.TypeError, "has dtype float32, the value has dtype float64",
         lambda: g.set(x, np.zeros((2, 3)))),
        (cf.TypeError, "Graph.set: value: a float64 value does not convert to int64",
         lambda: g.set(g.input("i", "int64", (2,)), [1.5, 2])),
        (cf.TypeError, "Graph.node: id must be an int", lambda: g.node("0")),
        (IndexError, "Graph.node: id 99 is out of range", lambda: g.node(99)),
    ]
    for kind, message, call in cases:
        with pytest.raises(kind, match=message):
            call()


def test_bad_op_arguments():
    g = cf.Graph()
    x = g.input("x", "float32", (2, 3))
    y = cf.Graph().input("y", "float32", (2, 3))
    cases = [
        (cf.TypeError, "relu: a must be a chanflow.Node, got 'int' 3", lambda: cf.relu(3)),
        (cf.TypeError, "relu: a must be a chanflow.Node, got 'numpy.ndarray'",
         lambda: cf.relu(np.ones(2))),
        (cf.TypeError, "add: a or b must be a chanflow.Node", lambda: cf.add(1, 2)),
        (cf.TypeError, "add: b must be a chanflow.Node or a number, got 'str'",
         lambda: cf.add(x, "1")),
        (ValueError, "add: a \\(node 'x'\\) and b \\(node 'y'\\) belong to different graphs",
         lambda: cf.add(x, y)),
        (ValueError, "different graphs", lambda: x * y),
        (cf.TypeError, "sum: axes must be a tuple of ints, got 'str'", lambda: cf.sum(x, "0")),
        (ValueError, r"sum: axes is empty; pass None", lambda: cf.sum(x, ())),
        (cf.TypeError, "sum: keepdims must be a bool", lambda: cf.sum(x, 0, 1)),
        (cf.ShapeError, "axis 5 out of range", lambda: cf.mean(x, 5)),
        (cf.TypeError, "argmax: axis must be an int", lambda: cf.argmax(x, 1.0)),
        (cf.TypeError, "softmax: axis must be an int", lambda: cf.softmax(x, None)),
        (cf.ShapeError, r"cannot reshape \(2, 3\) to \(4,\)", lambda: cf.reshape(x, (4,))),
        (cf.ShapeError, r"reshape: shape\[0\] must be an extent >= 0 \(or -1\), got -2",
         lambda: cf.reshape(x, (-2, 3))),
        (cf.ShapeError, r"broadcast_to: shape\[1\] must be an extent >= 0 \(or -1\), got -7",
         lambda: cf.broadcast_to(x, (2, -7))),
        (cf.ShapeError, r"^node 'add\d+' \(add #\d+\): shape \(1099511627776, 1099511627776\) "
                        r"has more elements than int64 can count$",
         lambda: g.input("col", "float32", (2**40, 1)) + g.input("row", "float32", (1, 2**40))),
        (cf.ShapeError, r"^node 'matmul\d+' .*: shape \(1099511627776, 1099511627776\) has more",
         lambda: cf.matmul(g.input("c", "float32", (2**40, 1)),
                           g.input("r", "float32", (1, 2**40)))),
        (cf.TypeError, "reshape: shape must be a tuple of ints", lambda: cf.reshape(x, 6)),
        (cf.ShapeError, "is not a permutation", lambda: cf.transpose(x, (0, 0))),
        (ValueError, "transpose: perm is empty for a 2-d node", lambda: cf.transpose(x, ())),
        (cf.TypeError, "cast: dtype 'nope' is not a data type", lambda: cf.cast(x, "nope")),
        (cf.ShapeError, "inner extents differ", lambda: cf.matmul(x, x)),
        (cf.ShapeError, "do not broadcast", lambda: x + g.input("z", "float32", (4,))),
        (cf.ShapeError, "does not broadcast to", lambda: cf.broadcast_to(x, (3, 3))),
        (cf.ShapeError, "at least 3-d", lambda: cf.batched_matmul(x, cf.transpose(x))),
        (cf.TypeError, "grad: loss must be a chanflow.Node", lambda: cf.grad(1.0, [x])),
        (cf.TypeError, "grad: wrt must be a list of chanflow.Node", lambda: cf.grad(x, x)),
        (ValueError, r"grad: wrt: node 'y' belongs to another graph",
         lambda: cf.grad(cf.sum(x), [y])),
        (cf.ShapeError, "", lambda: cf.grad(x, [x])),  # loss must have one element
    ]
    for kind, message, call in cases:
        with pytest.raises(kind, match=message):
            call()


def test_grad_through_a_python_op_raises():
    g = cf.Graph()
    x = g.input("x", "float64", (2,))
    p = g.apply(lambda a: a, [x], (2,), "float64", name="mine")
    with pytest.raises(cf.Error, match="'mine'.*custom op and has no gradient"):
        cf.grad(cf.sum(p), [x])


def test_bad_machine_arguments():
    g = cf.Graph()
    x = g.input("x", "float32", (2,))
    i = g.input("i", "int32", (2,))
    y = cf.relu(x) + cf.cast(i, "float32")
    other = cf.Graph()
    o = other.input("o", "float32", (2,))
    good = {x: np.zeros(2, np.float32), i: np.zeros(2, np.int32)}
    for kind in ("GoMachine", "TapeMachine"):
        m = getattr(cf, kind)(g)
        run = kind + ".run"
        cases = [
            (cf.TypeError, run + ": bindings must be a dict", lambda: m.run([x])),
            (cf.TypeError, run + ": bindings keys must be chanflow.Node, got 'str' 'x'",
             lambda: m.run({"x": np.zeros(2, np.float32)})),
            (ValueError, run + r": bindings: node 'o' belongs to another graph",
             lambda: m.run({o: np.zeros(2, np.float32)})),
            (ValueError, run + r": bindings: node '%s' is not an input \(it is add\)" % y.name,
             lambda: m.run({y: np.zeros(2, np.float32)})),
            (cf.TypeError, "has dtype float32, the value has dtype float64",
             lambda: m.run({x: np.zeros(2), i: np.zeros(2, np.int32)})),
            (cf.ShapeError, r"has shape \(2,\), the value has shape \(3,\)",
             lambda: m.run({x: np.zeros(3, np.float32), i: np.zeros(2, np.int32)})),
            (cf.TypeError, run + r": bindings\['i'\]: a float64 value does not convert to int32",
             lambda: m.run({x: np.zeros(2, np.float32), i: [0.5, 1]})),
            (cf.TypeError, run + r": bindings\['i'\]: .* has values out of the range of int32",
             lambda: m.run({x: np.zeros(2, np.float32), i: [2**40, 1]})),
            (cf.TypeError, run + r": bindings\['x'\]: .* has values out of the range of float32",
             lambda: m.run({x: [1e300, 0.0], i: [0, 1]})),
            (cf.TypeError, run + r": bindings\['x'\]: cannot convert",
             lambda: m.run({x: [[1], [1, 2]], i: [0, 1]})),
            (cf.TypeError, run + r": bindings\['x'\]: .* is not numeric",
             lambda: m.run({x: ["a", "b"], i: [0, 1]})),
            (cf.TypeError, run + r": bindings\['x'\]: tensor\(\): NumPy dtype 'complex64'",
             lambda: m.run({x: np.zeros(2, np.complex64), i: [0, 1]})),
            (cf.Error, r"run: input node 'i' \(input #1\) has no value", lambda: m.run({x: np.zeros(2, np.float32)})),
            (cf.TypeError, run + ": timeout must be a number of seconds or None",
             lambda: m.run(good, timeout="1")),
            (ValueError, run + ": timeout must be >= 0 seconds", lambda: m.run(good, -1)),
            (cf.TypeError, kind + ".stream: items must be a list", lambda: m.stream(good, [y])),
            (cf.TypeError, kind + r".stream: items\[0\]: bindings must be a dict",
             lambda: m.stream([x], [y])),
            (cf.TypeError, kind + ".stream: outputs must be a list", lambda: m.stream([good], y)),
            (ValueError, kind + ".stream: outputs: node 'o' belongs to another graph",
             lambda: m.stream([good], [o])),
            (cf.Error, "has not completed a run", lambda: m.result(y)),
            (cf.TypeError, kind + ".result: node must be a chanflow.Node, got 'str'",
             lambda: m.result(y.name)),
            (ValueError, kind + ".result: node 'o' belongs to another graph",
             lambda: m.result(o)),
        ]
        for err, message, call in cases:
            with pytest.raises(err, match=message):
                call()
        m.run(good)  # still usable after every error
        np.testing.assert_array_equal(m.result(y).numpy(), [0, 0])
        m.run({x: np.ones(2, np.float32), i: [2, 3]})  # an int list for an int input
        np.testing.assert_array_equal(m.result(y).numpy(), [3, 4])
    for err, message, call in [
            (cf.TypeError, "GoMachine: graph must be a chanflow.Graph", lambda: cf.GoMachine(x)),
            (cf.TypeError, "TapeMachine: graph must be a chanflow.Graph",
             lambda: cf.TapeMachine(None)),
            (ValueError, "GoMachine: window must be 1", lambda: cf.GoMachine(g, window=0)),
            (cf.TypeError, "GoMachine: window must be an int", lambda: cf.GoMachine(g, 2.0)),
            (ValueError, "GoMachine: workers must be None or 1", lambda: cf.GoMachine(g, 4, 0)),
            (cf.TypeError, "GoMachine: workers must be an int",
             lambda: cf.GoMachine(g, workers="2")),
            (ValueError, "trace_start: max_events must be an int",
             lambda: cf.trace_start(None, -1))]:
        with pytest.raises(err, match=message):
            call()
    assert cf.GoMachine(g, workers=3).workers == 3 and cf.GoMachine(g).workers is None
