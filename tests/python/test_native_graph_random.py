"""GoMachine == TapeMachine on random graphs built from Python: 50 seeded graphs of 10-60 nodes of
random ops with valid shapes (elementwise with broadcasting, comparisons, reductions over random
axes, softmax, matmul, layout ops, Python ops, and gradient nodes), run several times with new
bindings on 1, 2 or 4 workers; every node's value agrees bit for bit (NaN where both have NaN), and
stream() gives what one run per item gives."""
import numpy as np
import pytest

import chanflow as cf

SHAPES = [(), (3,), (2, 3), (4, 3), (3, 4), (2, 1, 3), (2, 4, 3)]
BINARY = [cf.add, cf.sub, cf.mul, cf.div, cf.maximum, cf.minimum, cf.pow]
COMPARISONS = [cf.equal, cf.not_equal, cf.less, cf.less_equal, cf.greater, cf.greater_equal]
UNARY = [cf.neg, cf.abs, cf.relu, cf.exp, cf.log, cf.sqrt, cf.tanh, cf.sigmoid, cf.square]
REDUCTIONS = [cf.sum, cf.mean, cf.max, cf.min]


def broadcasts(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


class RandomGraph:
    """A graph of float64 nodes grown by random ops on random earlier nodes."""

    def __init__(self, seed, size, python_ops=True):
        self.rng = np.random.default_rng(seed)
        self.g = cf.Graph()
        self.python_ops = 0
        shapes = [SHAPES[i] for i in self.rng.integers(len(SHAPES), size=self.rng.integers(1, 5))]
        self.inputs = [self.g.input("in%d" % i, "float64", s) for i, s in enumerate(shapes)]
        self.pool = list(self.inputs)
        if self.rng.random() < 0.5:
            self.pool.append(self.g.constant(self.rng.standard_normal(SHAPES[2]), name="c"))
        steps = [self.binary, self.binary, self.number, self.comparison, self.unary, self.unary,
                 self.reduction, self.argmax, self.softmax, self.matmul, self.reshape,
                 self.transpose, self.broadcast_to, self.sum_to]
        if python_ops:
            steps.append(self.python)
        while len(self.g) < size:
            node = steps[self.rng.integers(len(steps))]()
            if node is not None:
                assert node.dtype == np.float64, node
                self.pool.append(node)
        self.last = self.pool[-1]

    def pick(self, ok=lambda n: True):
        nodes = [n for n in self.pool if ok(n)]
        return nodes[self.rng.integers(len(nodes))] if nodes else None

    def choice(self, items):
        return items[self.rng.integers(len(items))]

    def binary(self):
        a = self.pick()
        b = self.pick(lambda n: broadcasts(a.shape, n.shape))
        return self.choice(BINARY)(a, b)

    def number(self):
        a, k = self.pick(), float(self.rng.integers(-3, 4)) / 2
        return self.choice([lambda: a + k, lambda: k - a, lambda: a * k, lambda: a ** 2])()

    def comparison(self):
        a = self.pick()
        b = self.pick(lambda n: broadcasts(a.shape, n.shape))
        return cf.cast(self.choice(COMPARISONS)(a, b), "float64")

    def unary(self):
        return self.choice(UNARY)(self.pick())

    def reduction(self):
        a = self.pick()
        axes = None
        if a.shape and self.rng.random() < 0.7:
            axes = tuple(int(i) for i in self.rng.permutation(len(a.shape))[
                :self.rng.integers(1, len(a.shape) + 1)])
            if self.rng.random() < 0.5:
                axes = tuple(ax - len(a.shape) for ax in axes)  # negative axes
        return self.choice(REDUCTIONS)(a, axes, bool(self.rng.random() < 0.5))

    def argmax(self):
        a = self.pick(lambda n: n.shape != ())
        if a is None:
            return None
        axis = None if self.rng.random() < 0.3 else int(self.rng.integers(len(a.shape)))
        return cf.cast(cf.argmax(a, axis, bool(self.rng.random() < 0.5)), "float64")

    def softmax(self):
        a = self.pick(lambda n: n.shape != ())
        if a is None:
            return None
        fn = self.choice([cf.softmax, cf.log_softmax])
        return fn(a, int(self.rng.integers(-len(a.shape), len(a.shape))))

    def matmul(self):
        a = self.pick(lambda n: len(n.shape) >= 1)
        if a is None:
            return None
        k = a.shape[-1]
        b = self.pick(lambda n: (len(n.shape) == 1 and n.shape[0] == k) or
                      (len(n.shape) >= 2 and n.shape[-2] == k))
        if b is None:
            b = self.pick(lambda n: len(n.shape) >= 2 and n.shape[-1] == k)
            if b is None:
                return None
            b = cf.transpose(b)  # (.., k) -> (k, ..)
        try:
            return cf.matmul(a, b)
        except cf.ShapeError:  # batch axes that do not broadcast
            return None

    def reshape(self):
        a = self.pick()
        size = int(np.prod(a.shape))
        same = [s for s in SHAPES if int(np.prod(s)) == size and s != a.shape]
        shape = self.choice(same) if same and self.rng.random() < 0.7 else (-1,)
        return cf.reshape(a, shape)

    def transpose(self):
        a = self.pick()
        if self.rng.random() < 0.5:
            return cf.transpose(a)
        return cf.transpose(a, tuple(int(i) for i in self.rng.permutation(len(a.shape))))

    def broadcast_to(self):
        a = self.pick(lambda n: len(n.shape) <= 2)
        shape = (int(self.rng.integers(1, 4)),) + tuple(
            d if d != 1 else int(self.rng.integers(1, 3)) for d in a.shape)
        return cf.broadcast_to(a, shape)

    def sum_to(self):
        a = self.pick(lambda n: n.shape != ())
        if a is None:
            return None
        drop = int(self.rng.integers(0, len(a.shape) + 1))
        shape = tuple(1 if self.rng.random() < 0.4 else d for d in a.shape[drop:])
        return cf.sum_to(a, shape)

    def python(self):
        a = self.pick()
        self.python_ops += 1
        return self.g.apply(lambda v: np.tanh(np.asarray(v)) * 0.5 + 0.25, [a], a.shape,
                            "float64", name="py%d" % len(self.g))

    def bindings(self):
        return {x: self.rng.standard_normal(x.shape) for x in self.inputs}


def assert_same(a, b, what):
    a, b = a.numpy(), b.numpy()
    assert a.dtype == b.dtype and a.shape == b.shape, what
    np.testing.assert_array_equal(a, b, err_msg=what)


@pytest.mark.parametrize("seed", range(50))
def test_go_machine_equals_tape_machine(seed):
    rg = RandomGraph(seed, size=10 + (seed * 37) % 51)
    g = rg.g
    if rg.python_ops == 0 and rg.rng.random() < 0.6:
        loss = cf.sum(rg.last)
        cf.grad(loss, rg.inputs)  # the backward nodes are part of the comparison
    workers = (1, 2, 4)[seed % 3]
    tape = cf.TapeMachine(g)
    with cf.GoMachine(g, window=1 + seed % 4, workers=workers) as go:
        for _ in range(3):
            b = rg.bindings()
            tape.run(b)
            go.run(b)
            for n in g.nodes():
                assert_same(go.result(n), tape.result(n), "seed %d node %r" % (seed, n))
        items = [rg.bindings() for _ in range(5)]
        outputs = [g.node(int(i)) for i in rg.rng.integers(len(g), size=4)]
        streamed = go.stream(items, outputs)
        for item, row in zip(items, streamed):
            tape.run(item)
            for n, value in zip(outputs, row):
                assert_same(value, tape.result(n), "seed %d stream %r" % (seed, n))


def test_the_generator_covers_every_kind_of_step():
    """The 50 graphs above exercise every op group (so equality is checked where it matters)."""
    seen = set()
    for seed in range(50):
        rg = RandomGraph(seed, size=10 + (seed * 37) % 51)
        seen |= {n.op for n in rg.g.nodes()}
    expected = {"input", "constant", "add", "sub", "mul", "div", "pow", "maximum", "minimum",
                "equal", "less", "greater", "cast", "neg", "abs", "relu", "exp", "log", "sqrt",
                "tanh", "sigmoid", "sum", "mean", "max", "min", "argmax", "softmax",
                "log_softmax", "matmul", "reshape", "transpose", "broadcast_to", "sum_to",
                "custom"}
    assert expected <= seen, expected - seen
