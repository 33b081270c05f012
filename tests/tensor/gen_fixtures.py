#!/usr/bin/env python3
"""Generates the NumPy oracle for the tensor layer's tests.

Writes tests/tensor/fixtures/arrays.bin (every input and expected output as a .npy blob,
deduplicated by content, concatenated; cases.json gives each blob's offset and length), a few
real .npy files for the file reader (npy_*.npy: format versions, Fortran order, big-endian,
corrupt files) and tests/tensor/fixtures/cases.json, the list of cases tensor_numpy_test runs: an op, its inputs (a
fixture file plus the views to apply: transpose, permute, slice), its parameters and either the
expected result or the error kind it must throw. Deterministic (fixed seed): running it again
gives the same files. Run from anywhere:  python3 tests/tensor/gen_fixtures.py
"""
import hashlib
import io
import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
RNG = np.random.default_rng(20261122)

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"]
FLOATS = ["float16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8"]

cases = []
blobs = {}   # name -> bytes of one .npy, stored in arrays.bin
files = {}   # name -> bytes of a standalone .npy file


def save(arr):
    """Stores an array once (named by a hash of its bytes) and returns the file name."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr, order="C"), allow_pickle=False)
    data = buf.getvalue()
    name = "a_" + hashlib.sha1(data).hexdigest()[:12]
    blobs[name] = data
    return name


def values(shape, dtype, kind="default"):
    n = int(np.prod(shape)) if len(shape) else 1
    if dtype == "bool":
        v = RNG.integers(0, 2, n).astype(bool)
    elif dtype == "uint8":
        v = RNG.integers(0, 12 if kind == "small" else 200, n).astype(np.uint8)
    elif dtype in INTS:
        lo, hi = (-4, 5) if kind == "small" else (-50, 51)
        v = RNG.integers(lo, hi, n).astype(dtype)
    else:
        if kind == "positive":
            v = RNG.uniform(0.1, 4.0, n)
        elif kind == "small":
            v = RNG.uniform(-2.0, 2.0, n)
        else:
            v = np.round(RNG.uniform(-8.0, 8.0, n), 2)
        v = v.astype(dtype)
    return v.reshape(shape)


def apply_view(a, view):
    for op in view:
        if op[0] == "T":
            a = a.T
        elif op[0] == "perm":
            a = np.transpose(a, op[1])
        elif op[0] == "slice":
            _, axis, start, stop, step = op
            idx = [slice(None)] * a.ndim
            idx[axis] = slice(start, stop, step)
            a = a[tuple(idx)]
    return a


def inp(base, view=()):
    return {"file": save(base), "view": [list(v) for v in view]}, apply_view(base, view)


TOL = {"float16": (2e-3, 2e-3), "float32": (2e-5, 1e-6), "float64": (1e-11, 1e-12)}


def add_case(name, op, inputs, expected=None, error=None, params=None, tol=None):
    c = {"name": name, "op": op, "inputs": inputs, "params": params or {}}
    if error:
        c["error"] = error
    else:
        expected = np.asarray(expected)
        c["expected"] = save(expected)
        rtol, atol = TOL.get(str(expected.dtype), (0, 0))
        if tol:
            rtol, atol = tol
        c["rtol"], c["atol"] = rtol, atol
    cases.append(c)


def run(fn):
    with np.errstate(all="ignore"):
        return fn()


# ---------------------------------------------------------------- promotion table
promo = [[str(np.promote_types(a, b)) for b in DTYPES] for a in DTYPES]

# ---------------------------------------------------------------- binary ops
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "pow": np.power, "maximum": np.maximum, "minimum": np.minimum, "equal": np.equal,
    "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
}

SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (2, 1)), ((), (2, 3)), ((0, 3), (1, 3)),
          ((3, 1), (1, 4))]


def binary_expected(op, a, b):
    r = run(lambda: BINARY[op](a, b))
    return r


for op in BINARY:
    for dt in DTYPES:
        for (sa, sb) in SHAPES:
            kind = "small" if op == "pow" else "default"
            a = values(sa, dt, kind)
            b = values(sb, dt, kind)
            if op == "pow" and dt in INTS:
                b = np.abs(b).astype(dt)
            if op == "pow" and dt in FLOATS:
                a = np.abs(a).astype(dt)
            ia, va = inp(a)
            ib, vb = inp(b)
            name = f"{op}_{dt}_{sa}_{sb}"
            if op == "sub" and dt == "bool":
                add_case(name, op, [ia, ib], error="TypeError")
                continue
            add_case(name, op, [ia, ib], binary_expected(op, va, vb))
    # non-contiguous views: a transposed base and a strided slice
    for dt in ["int32", "float32", "float64", "float16", "uint8"]:
        kind = "small" if op == "pow" else "default"
        base_a = values((3, 2), dt, kind)
        base_b = values((2, 7), dt, kind)
        if op == "pow":
            base_a = np.abs(base_a).astype(dt)
            base_b = np.abs(base_b).astype(dt)
        ia, va = inp(base_a, [("T",)])
        ib, vb = inp(base_b, [("slice", 1, 1, 7, 2)])
        add_case(f"{op}_{dt}_views", op, [ia, ib], binary_expected(op, va, vb))
    # shape mismatch
    ia, _ = inp(values((2, 3), "float32"))
    ib, _ = inp(values((4, 3), "float32"))
    add_case(f"{op}_mismatch", op, [ia, ib], error="ShapeError")

# mixed dtypes: every pair for add, div, less, maximum
for op in ["add", "div", "less", "maximum", "mul"]:
    for da in DTYPES:
        for db in DTYPES:
            if da == db:
                continue
            a = values((2, 3), da)
            b = values((3,), db)
            ia, va = inp(a)
            ib, vb = inp(b)
            add_case(f"{op}_{da}_{db}", op, [ia, ib], binary_expected(op, va, vb))

# integer pow with a negative exponent is an error (as NumPy)
ia, _ = inp(np.array([2, 3], dtype=np.int32))
ib, _ = inp(np.array([1, -1], dtype=np.int32))
add_case("pow_int_negative_exponent", "pow", [ia, ib], error="Error")
# wrap-around of integer arithmetic
for dt in ["int8", "int16", "int32", "int64", "uint8"]:
    info = np.iinfo(dt)
    a = np.array([info.max, info.min, info.max // 2 + 1], dtype=dt)
    b = np.array([1, 1, 3], dtype=dt)
    for op in ["add", "sub", "mul"]:
        ia, va = inp(a)
        ib, vb = inp(b)
        add_case(f"{op}_{dt}_wrap", op, [ia, ib], binary_expected(op, va, vb))
# NaN handling in maximum/minimum and comparisons
a = np.array([1.0, np.nan, 3.0, np.nan, -np.inf], dtype=np.float32)
b = np.array([np.nan, 2.0, 1.0, np.nan, 0.0], dtype=np.float32)
for op in ["maximum", "minimum", "equal", "not_equal", "less", "greater_equal", "div"]:
    ia, va = inp(a)
    ib, vb = inp(b)
    add_case(f"{op}_nan", op, [ia, ib], binary_expected(op, va, vb))

# ---------------------------------------------------------------- unary ops
def float_type(dt):
    return {"bool": "float16", "int8": "float16", "uint8": "float16", "int16": "float32",
            "int32": "float64", "int64": "float64"}.get(dt, dt)


def unary_ref(op, x):
    dt = str(x.dtype)
    if op == "neg":
        return np.negative(x)
    if op == "abs":
        return np.abs(x)
    if op == "relu":
        return np.maximum(x, np.zeros((), dtype=x.dtype)).astype(dt)
    if op == "logical_not":
        return np.logical_not(x)
    ft = float_type(dt)
    xf = x.astype(np.float64)
    r = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh,
         "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v))}[op](xf)
    return r.astype(ft)


for op in ["neg", "abs", "relu", "exp", "log", "sqrt", "tanh", "sigmoid", "logical_not"]:
    for dt in DTYPES:
        kind = "positive" if op in ("log", "sqrt") else ("small" if op == "exp" else "default")
        for shape, view in [((2, 3), []), ((3, 4), [("T",)]), ((0,), []), ((), []),
                            ((2, 6), [("slice", 1, 0, 6, 3)])]:
            x = values(shape, dt, kind)
            if op in ("log", "sqrt") and dt in INTS:
                x = np.abs(x).astype(dt) + np.ones_like(x)
            ix, vx = inp(x, view)
            name = f"{op}_{dt}_{shape}_{len(view)}"
            if op == "neg" and dt == "bool":
                add_case(name, op, [ix], error="TypeError")
                continue
            add_case(name, op, [ix], run(lambda: unary_ref(op, vx)))
# extremes: sigmoid must not overflow, abs/neg wrap
ix, vx = inp(np.array([-1000.0, -20.0, 0.0, 20.0, 1000.0], dtype=np.float32))
add_case("sigmoid_extremes", "sigmoid", [ix], run(lambda: unary_ref("sigmoid", vx)))
ix, vx = inp(np.array([-128, -1, 0, 127], dtype=np.int8))
add_case("abs_int8_min", "abs", [ix], np.abs(vx))
add_case("neg_int8_min", "neg", [ix], np.negative(vx))

# ---------------------------------------------------------------- reductions
def sum_ref(x, axis, keepdims):
    r = np.sum(x, axis=axis, keepdims=keepdims)
    if str(x.dtype) in ("bool",) + tuple(INTS):
        r = np.asarray(r).astype(np.int64)  # chanflow sums integers into int64 (no uint64)
    elif str(x.dtype) == "float16":
        r = np.sum(x.astype(np.float64), axis=axis, keepdims=keepdims).astype(np.float16)
    return r


def mean_ref(x, axis, keepdims):
    if str(x.dtype) == "float16":
        return np.mean(x.astype(np.float64), axis=axis, keepdims=keepdims).astype(np.float16)
    return run(lambda: np.mean(x, axis=axis, keepdims=keepdims))


REDUCE = {"sum": sum_ref, "mean": mean_ref,
          "max": lambda x, a, k: np.max(x, axis=a, keepdims=k),
          "min": lambda x, a, k: np.min(x, axis=a, keepdims=k)}
for op, ref in REDUCE.items():
    for dt in DTYPES:
        for shape, view in [((2, 3, 4), []), ((4, 3, 2), [("T",)]), ((3, 5), [("slice", 1, 0, 5, 2)])]:
            x = values(shape, dt)
            ix, vx = inp(x, view)
            for axes in [None, (0,), (1,), (0, 2), (-1,)]:
                if axes and max(a if a >= 0 else vx.ndim + a for a in axes) >= vx.ndim:
                    continue
                for keep in [False, True]:
                    params = {"axes": list(axes) if axes else [], "keepdims": keep}
                    name = f"{op}_{dt}_{shape}_{len(view)}_{axes}_{keep}"
                    add_case(name, op, [ix], run(lambda: ref(vx, axes, keep)), params=params,
                             tol=(1e-2, 1e-2) if dt == "float16" else None)
    # zero-size
    x = np.zeros((0, 3), dtype=np.float32)
    ix, vx = inp(x)
    for axes in [(1,), (0,)]:
        name = f"{op}_empty_{axes}"
        params = {"axes": list(axes), "keepdims": False}
        if op in ("max", "min") and axes == (0,):
            add_case(name, op, [ix], error="ShapeError", params=params)
        else:
            add_case(name, op, [ix], run(lambda: ref(vx, axes, False)), params=params)
    ix, _ = inp(values((2, 3), "float32"))
    add_case(f"{op}_bad_axis", op, [ix], error="ShapeError", params={"axes": [2], "keepdims": False})
# NaN propagates through max/min
ix, vx = inp(np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], dtype=np.float64))
for op in ["max", "min", "sum"]:
    add_case(f"{op}_nan", op, [ix], REDUCE[op](vx, (1,), False), params={"axes": [1], "keepdims": False})

for dt in DTYPES:
    for shape, view in [((3, 4), []), ((4, 3), [("T",)]), ((2, 3, 4), [])]:
        x = values(shape, dt)
        ix, vx = inp(x, view)
        for axis in [None, 0, 1, -1]:
            for keep in [False, True]:
                params = {"keepdims": keep}
                if axis is not None:
                    params["axis"] = axis
                add_case(f"argmax_{dt}_{shape}_{len(view)}_{axis}_{keep}", "argmax", [ix],
                         np.argmax(vx, axis=axis, keepdims=keep), params=params)
ix, vx = inp(np.array([[1.0, np.nan, 7.0, np.nan], [3.0, 9.0, 9.0, 1.0]], dtype=np.float32))
add_case("argmax_nan", "argmax", [ix], np.argmax(vx, axis=1), params={"axis": 1, "keepdims": False})
ix, _ = inp(np.zeros((0, 3), dtype=np.float32))
add_case("argmax_empty", "argmax", [ix], error="ShapeError", params={"axis": 0, "keepdims": False})

# ---------------------------------------------------------------- softmax
def softmax_ref(x, axis, log):
    ft = float_type(str(x.dtype))
    xf = x.astype(np.float64)
    s = xf - xf.max(axis=axis, keepdims=True)
    if log:
        r = s - np.log(np.exp(s).sum(axis=axis, keepdims=True))
    else:
        r = np.exp(s) / np.exp(s).sum(axis=axis, keepdims=True)
    return r.astype(ft)


for op, log in [("softmax", False), ("log_softmax", True)]:
    for dt in FLOATS + ["int32", "int8"]:
        for shape, view in [((3, 5), []), ((5, 3), [("T",)]), ((2, 3, 4), [])]:
            x = values(shape, dt, "small")
            ix, vx = inp(x, view)
            for axis in [0, -1]:
                add_case(f"{op}_{dt}_{shape}_{len(view)}_{axis}", op, [ix],
                         softmax_ref(vx, axis, log), params={"axis": axis},
                         tol=(1e-2, 3e-3) if float_type(dt) == "float16" else None)
    x = np.array([[1000.0, 1001.0, 1002.0]], dtype=np.float32)
    ix, vx = inp(x)
    add_case(f"{op}_large_values", op, [ix], softmax_ref(vx, -1, log), params={"axis": -1})

# ---------------------------------------------------------------- matmul
MM = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)),
      ((2, 1, 3, 4), (3, 4, 2)), ((1, 4), (4, 1)), ((3, 0), (0, 2)), ((0, 4), (4, 3))]
for dt in DTYPES:
    for sa, sb in MM:
        a = values(sa, dt, "small")
        b = values(sb, dt, "small")
        ia, va = inp(a)
        ib, vb = inp(b)
        exp = run(lambda: np.matmul(va, vb))
        tol = (1e-2, 5e-2) if dt == "float16" else None
        add_case(f"matmul_{dt}_{sa}_{sb}", "matmul", [ia, ib], exp, tol=tol)
    # non-contiguous: transposed and strided operands
    a = values((4, 3), dt, "small")
    b = values((4, 10), dt, "small")
    ia, va = inp(a, [("T",)])
    ib, vb = inp(b, [("slice", 1, 0, 10, 2)])
    add_case(f"matmul_{dt}_views", "matmul", [ia, ib], run(lambda: np.matmul(va, vb)),
             tol=(1e-2, 5e-2) if dt == "float16" else None)
    c = values((2, 5, 3), dt, "small")
    ic, vc = inp(c, [("perm", (0, 2, 1))])
    idd, vd = inp(values((5, 2), dt, "small"))
    add_case(f"matmul_{dt}_batched_views", "matmul", [ic, idd], run(lambda: np.matmul(vc, vd)),
             tol=(1e-2, 5e-2) if dt == "float16" else None)
for da, db in [("int32", "float32"), ("float16", "float32"), ("bool", "int8"), ("uint8", "int8")]:
    a = values((3, 4), da, "small")
    b = values((4, 2), db, "small")
    ia, va = inp(a)
    ib, vb = inp(b)
    add_case(f"matmul_{da}_{db}", "matmul", [ia, ib], np.matmul(va, vb))
for sa, sb in [((3, 4), (5, 6)), ((4,), (5,)), ((2, 3, 4), (3, 4, 5))]:
    ia, _ = inp(values(sa, "float32"))
    ib, _ = inp(values(sb, "float32"))
    add_case(f"matmul_mismatch_{sa}_{sb}", "matmul", [ia, ib], error="ShapeError")
ia, _ = inp(np.float32(2.0).reshape(()))
ib, _ = inp(values((2,), "float32"))
add_case("matmul_scalar", "matmul", [ia, ib], error="ShapeError")

# ---------------------------------------------------------------- cast
src = np.array([-3.75, -1.0, 0.0, 0.5, 1.0, 2.5, 100.0, 127.0])
for da in DTYPES:
    x = src.astype(da) if da != "uint8" else np.abs(src).astype(da)
    for db in DTYPES:
        ix, vx = inp(x, [("slice", 0, 0, 8, 1)])
        add_case(f"cast_{da}_{db}", "cast", [ix], vx.astype(db), params={"dtype": db})

# ---------------------------------------------------------------- .npy reading
npy_cases = []


def npy_file(name, arr=None, raw=None, version=None, expect=None, error=None):
    if raw is None:
        buf = io.BytesIO()
        if version is None:
            np.save(buf, arr, allow_pickle=False)
        else:
            np.lib.format.write_array(buf, arr, version=version, allow_pickle=False)
        raw = buf.getvalue()
    fname = "npy_" + name + ".npy"
    files[fname] = raw
    c = {"name": name, "file": fname}
    if error:
        c["error"] = error
    else:
        c["expected"] = save(np.asarray(expect if expect is not None else arr, order="C"))
    npy_cases.append(c)
    return raw


for dt in DTYPES:
    a = values((2, 3), dt)
    npy_file(f"v1_{dt}", a, version=(1, 0))
    npy_file(f"v2_{dt}", a, version=(2, 0))
    npy_file(f"fortran_{dt}", np.asfortranarray(values((3, 4, 2), dt)))
    if dt not in ("bool", "int8", "uint8"):
        big = a.astype(np.dtype(dt).newbyteorder(">"))
        npy_file(f"bigendian_{dt}", big, expect=a)
npy_file("scalar", np.float64(3.5).reshape(()))
npy_file("empty", np.zeros((0, 4), dtype=np.float32))
npy_file("v3", values((2, 2), "int16"), version=(3, 0))
good = npy_file("good", values((4, 5), "float32"))
npy_file("truncated_data", raw=good[:-7], error="Error")
npy_file("truncated_header", raw=good[:40], error="Error")
npy_file("bad_magic", raw=b"\x93NUMPX" + good[6:], error="Error")
npy_file("bad_version", raw=good[:6] + b"\x07\x00" + good[8:], error="Error")
npy_file("uint32", np.arange(4, dtype=np.uint32), error="TypeError")
npy_file("complex", np.arange(4, dtype=np.complex64), error="TypeError")
hdr = good.index(b"'shape'")
npy_file("bad_shape", raw=good[:hdr] + b"'shape': (4, -5), " + good[hdr + len(b"'shape': (4, 5), "):],
         error="Error")
npy_file("empty_file", raw=b"", error="Error")

# ---------------------------------------------------------------- vector/tile edges
# Added after everything else so the cases above keep their random draws. max/min/argmax around
# the vector blocks of the kernels (4 x 16 bytes) with NaN at the first, a middle, the last
# position and in the scalar tail, and ties; elementwise ops over transposed and permuted views
# large enough to take the tiled walk (inner stride above a cache line).
for dt in ["float32", "float64", "int8", "int32", "uint8", "int64"]:
    for n in [1, 7, 8, 9, 15, 16, 17, 33, 65] + ([1000] if dt in ("float32", "int8") else []):
        x = values((n,), dt)
        variants = [("plain", x)]
        if dt in ("float32", "float64"):
            for at in sorted({0, n // 2, n - 1, (n // 16) * 16 if (n // 16) * 16 < n else n - 1}):
                y = x.copy()
                y[at] = np.nan
                variants.append((f"nan{at}", y))
        t = x.copy()
        top = np.iinfo(dt).max if dt in INTS else np.finfo(dt).max
        for at in {n - 1, n // 2, min(n - 1, 20)}:
            t[at] = top
        variants.append(("ties", t))
        for tag, v in variants:
            iv, vv = inp(v)
            for op in ["max", "min"]:
                add_case(f"edge_{op}_{dt}_{n}_{tag}", op, [iv], REDUCE[op](vv, None, False),
                         params={"axes": [], "keepdims": False})
            add_case(f"edge_argmax_{dt}_{n}_{tag}", "argmax", [iv], np.argmax(vv),
                     params={"keepdims": False})
            if n > 1:  # the same data as a 2-D tensor reduced over each axis
                m = v[: (n // 2) * 2].reshape(2, n // 2)
                im, vm = inp(m)
                for axis in [0, 1]:
                    add_case(f"edge_max_{dt}_{n}_{tag}_2d_{axis}", "max", [im],
                             REDUCE["max"](vm, (axis,), False),
                             params={"axes": [axis], "keepdims": False})
                    add_case(f"edge_argmax_{dt}_{n}_{tag}_2d_{axis}", "argmax", [im],
                             np.argmax(vm, axis=axis), params={"axis": axis, "keepdims": False})
for dt in ["float32", "float64", "int8", "float16", "int64"]:
    for (r, c) in [(40, 70), (70, 19)]:
        ia, va = inp(values((c, r), dt), [("T",)])
        ib, vb = inp(values((r, c), dt))
        for op in ["add", "mul", "greater", "maximum"]:
            add_case(f"tiled_{op}_{dt}_{r}x{c}", op, [ia, ib], binary_expected(op, va, vb))
            add_case(f"tiled_{op}_{dt}_{r}x{c}_swapped", op, [ib, ia], binary_expected(op, vb, va))
        ic, vc = inp(values((r, 1), dt))
        add_case(f"tiled_add_{dt}_{r}x{c}_column", "add", [ia, ic], binary_expected("add", va, vc))
        ir, vr = inp(values((c,), dt))
        add_case(f"tiled_add_{dt}_{r}x{c}_row", "add", [ir, ia], binary_expected("add", vr, va))
        add_case(f"tiled_neg_{dt}_{r}x{c}", "neg", [ia], run(lambda: unary_ref("neg", va)))
base3 = values((3, 40, 17), "float32")
for perm in [(2, 0, 1), (1, 2, 0), (2, 1, 0)]:
    ia, va = inp(base3, [("perm", perm)])
    ib, vb = inp(values(va.shape, "float32"))
    add_case(f"tiled_add_perm{perm}", "add", [ia, ib], binary_expected("add", va, vb))
    ic, vc = inp(values(va.shape[-1:], "float32"))
    add_case(f"tiled_mul_perm{perm}_broadcast", "mul", [ia, ic], binary_expected("mul", va, vc))

# ---------------------------------------------------------------- write out
if os.path.isdir(OUT):
    shutil.rmtree(OUT)
os.makedirs(OUT)
for name, data in files.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
index = {}
with open(os.path.join(OUT, "arrays.bin"), "wb") as f:
    offset = 0
    for name in sorted(blobs):
        f.write(blobs[name])
        index[name] = [offset, len(blobs[name])]
        offset += len(blobs[name])
with open(os.path.join(OUT, "cases.json"), "w") as f:
    json.dump({"numpy_version": np.__version__, "dtypes": DTYPES, "promote_types": promo,
               "blobs": index, "cases": cases, "npy_cases": npy_cases}, f, separators=(",", ":"),
              sort_keys=True)
    f.write("\n")
print(f"{len(cases)} op cases, {len(npy_cases)} npy cases, {len(blobs)} arrays, "
      f"{len(files)} files", file=sys.stderr)
