"""NumPy references of the graph op functions, shared by the graph suites.

REF[name](*arrays, **kwargs) computes what chanflow.<name>(*nodes, **kwargs) builds. CASES[name] is
a list of (arrays, kwargs) forward cases per op; GRAD_CASES the cases for gradient checks (float64,
values away from kinks and ties so central differences are exact enough); NO_GRADIENT the ops that
stop gradients. The suites check that these tables cover chanflow.graph_ops exactly, so an op added
to the C++ op list without a reference here fails them.
"""
import numpy as np


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def _softmax(a, axis=-1):
    e = np.exp(a - np.max(a, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(a, axis=-1):
    s = a - np.max(a, axis=axis, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def _axes(axes):
    return tuple(axes) if isinstance(axes, (list, tuple)) else axes


def _sum_to(a, shape):
    """a summed down to shape (the adjoint of np.broadcast_to(x, a.shape))."""
    lead = a.ndim - len(shape)
    out = np.sum(a, axis=tuple(range(lead))) if lead > 0 else a
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and out.shape[i] != 1)
    return np.sum(out, axis=axes, keepdims=True) if axes else out


REF = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "neg": np.negative,
    "abs": np.abs,
    "relu": lambda a: np.maximum(a, 0),
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "softplus": lambda a: np.logaddexp(0.0, a),
    "square": np.square,
    "sum": lambda a, axes=None, keepdims=False: np.sum(a, axis=_axes(axes), keepdims=keepdims),
    "mean": lambda a, axes=None, keepdims=False: np.mean(a, axis=_axes(axes), keepdims=keepdims),
    "max": lambda a, axes=None, keepdims=False: np.max(a, axis=_axes(axes), keepdims=keepdims),
    "min": lambda a, axes=None, keepdims=False: np.min(a, axis=_axes(axes), keepdims=keepdims),
    "argmax": lambda a, axis=None, keepdims=False: np.argmax(a, axis=axis, keepdims=keepdims),
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "matmul": np.matmul,
    "batched_matmul": np.matmul,
    "reshape": lambda a, shape: np.reshape(a, shape),
    "transpose": lambda a, perm=None: np.transpose(a, perm),
    "cast": lambda a, dtype: a.astype(dtype),
    "broadcast_to": lambda a, shape: np.broadcast_to(a, shape),
    "sum_to": _sum_to,
}

NO_GRADIENT = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "argmax"}


def _r(shape, seed, lo=-2.0, hi=2.0, dtype=np.float64):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


def _away(shape, seed, gap=0.2):
    """Values in [-2, -gap] U [gap, 2]: away from the kinks of abs and relu."""
    v = _r(shape, seed, gap, 2.0)
    signs = np.where(np.random.default_rng(seed + 1).random(shape) < 0.5, -1.0, 1.0)
    return v * signs


def _apart(shape, seed):
    """Two arrays that differ by at least 0.2 everywhere (no ties for maximum/minimum)."""
    a = _r(shape, seed)
    return a, a + _away(shape, seed + 7)


def _binary_cases(op, positive_b=False, positive_a=False):
    lo_a = 0.5 if positive_a else -2.0
    b_lo = 0.5 if positive_b else -2.0
    return [
        ([_r((2, 3), 1, lo_a), _r((2, 3), 2, b_lo)], {}),
        ([_r((3, 1, 4), 3, lo_a), _r((2, 4), 4, b_lo)], {}),  # broadcasting both ways
        ([_r((2, 3), 5, lo_a), _r((), 6, b_lo)], {}),  # a 0-d operand
    ]


CASES = {name: _binary_cases(name) for name in ("add", "sub", "mul", "maximum", "minimum")}
CASES["div"] = _binary_cases("div", positive_b=True)
CASES["pow"] = _binary_cases("pow", positive_a=True)
for _cmp in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    _a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    CASES[_cmp] = [([_a, np.array([1.0, 5.0, 3.0])], {}), ([_a, np.array(4.0)], {})]
for _u in ("neg", "abs", "relu", "exp", "tanh", "sigmoid", "softplus", "square"):
    CASES[_u] = [([_away((2, 3), 10)], {}), ([_away((), 11)], {})]
# softplus far out, where log(1 + e ** a) in double overflows or rounds to 0.
CASES["softplus"].append(([np.array([-800.0, -50.0, -30.0, 30.0, 50.0, 800.0])], {}))
for _u in ("log", "sqrt"):
    CASES[_u] = [([_r((2, 3), 12, 0.3, 3.0)], {}), ([_r((), 13, 0.3, 3.0)], {})]
for _red in ("sum", "mean", "max", "min"):
    _x = _r((2, 3, 4), 14)
    CASES[_red] = [([_x], {}), ([_x], {"axes": 1}), ([_x], {"axes": (0, 2)}),
                   ([_x], {"axes": -1, "keepdims": True}), ([_x], {"axes": (0, 1, 2)})]
CASES["argmax"] = [([_r((3, 4), 15)], {}), ([_r((3, 4), 15)], {"axis": 1}),
                   ([_r((3, 4), 16)], {"axis": 0, "keepdims": True}),
                   ([_r((3, 4), 17)], {"keepdims": True})]
for _sm in ("softmax", "log_softmax"):
    CASES[_sm] = [([_r((3, 4), 18)], {}), ([_r((3, 4), 19)], {"axis": 0}),
                  ([_r((2, 3, 4), 20)], {"axis": 1})]
CASES["matmul"] = [([_r((3, 4), 21), _r((4, 5), 22)], {}),
                   ([_r((4,), 23), _r((4, 5), 24)], {}),
                   ([_r((3, 4), 25), _r((4,), 26)], {}),
                   ([_r((2, 1, 3, 4), 27), _r((5, 4, 2), 28)], {})]  # batch axes broadcast
CASES["batched_matmul"] = [([_r((2, 3, 4), 29), _r((2, 4, 5), 30)], {})]
CASES["reshape"] = [([_r((2, 3, 4), 31)], {"shape": (4, -1)}), ([_r((2, 3), 32)], {"shape": (6,)})]
CASES["transpose"] = [([_r((2, 3, 4), 33)], {}), ([_r((2, 3, 4), 34)], {"perm": (1, 0, 2)})]
CASES["cast"] = [([_r((2, 3), 35)], {"dtype": "float32"}), ([_r((2, 3), 36)], {"dtype": "int32"})]
CASES["broadcast_to"] = [([_r((3, 1), 37)], {"shape": (2, 3, 4)})]
CASES["sum_to"] = [([_r((2, 3, 4), 38)], {"shape": (3, 1)}), ([_r((2, 3), 39)], {"shape": ()})]

# Gradient cases: the forward cases where they are smooth, with values kept off kinks and ties.
GRAD_CASES = {name: cases for name, cases in CASES.items()
              if name not in NO_GRADIENT and name not in ("maximum", "minimum", "cast")}
GRAD_CASES["maximum"] = [(list(_apart((2, 3), 40)), {}),
                         ([_apart((3, 1, 4), 41)[0], _apart((2, 4), 42)[1] + 10.0], {})]
GRAD_CASES["minimum"] = GRAD_CASES["maximum"]
GRAD_CASES["cast"] = [([_r((2, 3), 43)], {"dtype": "float64"})]
