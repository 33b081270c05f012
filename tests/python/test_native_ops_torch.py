"""The op table's ops against PyTorch 1.13 (Debian's python3-torch): outputs and gradients on random
shapes, strides, paddings, dilations and groups, in float32 to 1e-5 relative. Each case builds
the op as a graph node (cf.op), differentiates sum(out * r) with cf.grad (the op's gradient rule,
the one program backward uses too) and compares with torch.autograd on the same numbers.
Skipped, by name, when torch is not installed."""
import numpy as np
import pytest

import chanflow as cf

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

RTOL = 1e-5


def close(got, want, what):
    want = np.asarray(want, dtype=np.float64)
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=RTOL,
                               atol=RTOL * scale, err_msg=what)


def check(op_type, inputs, attrs, torch_fn, output=None, seed=0, wrt=None):
    """inputs: {slot: ndarray} (float32 inputs are differentiated unless `wrt` names the slots);
    torch_fn(*tensors in slot order) -> tensor."""
    rng = np.random.default_rng(seed)
    g = cf.Graph()
    nodes = {s: g.input(s.lower(), str(v.dtype), v.shape) for s, v in inputs.items()}
    out = cf.op(op_type, {s: n for s, n in nodes.items()}, attrs, output)
    r = rng.uniform(0.5, 1.5, size=out.shape).astype(np.float32)
    loss = cf.sum(out * g.constant(cf.tensor(r)))
    if wrt is None:
        wrt = [s for s, v in inputs.items() if v.dtype == np.float32]
    grads = cf.grad(loss, [nodes[s] for s in wrt]) if wrt else []
    m = cf.TapeMachine(g)
    m.run({nodes[s]: v for s, v in inputs.items()})
    ts = {s: torch.tensor(v, requires_grad=s in wrt) for s, v in inputs.items()}
    y = torch_fn(*ts.values())
    if wrt:
        (y * torch.tensor(r)).sum().backward()
    close(m.result(out).numpy(), y.detach().numpy(), f"{op_type} output")
    for slot, gnode in zip(wrt, grads):
        close(m.result(gnode).numpy(), ts[slot].grad.numpy(), f"{op_type} gradient of {slot}")


def rand(rng, *shape):
    return rng.normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("seed", range(12))
def test_conv2d_random(seed):
    rng = np.random.default_rng(100 + seed)
    groups = int(rng.choice([1, 1, 2, 3]))
    c_in = groups * int(rng.integers(1, 4))
    m_out = groups * int(rng.integers(1, 4))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    ph, pw = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    dh, dw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    h = dh * (kh - 1) + 1 + int(rng.integers(0, 6))
    w = dw * (kw - 1) + 1 + int(rng.integers(0, 6))
    n = int(rng.integers(1, 4))
    x, f = rand(rng, n, c_in, h, w), rand(rng, m_out, c_in // groups, kh, kw)
    attrs = {"strides": [sh, sw], "paddings": [ph, pw], "dilations": [dh, dw], "groups": groups}
    check("conv2d", {"Input": x, "Filter": f}, attrs,
          lambda a, b: torch.nn.functional.conv2d(a, b, stride=(sh, sw), padding=(ph, pw),
                                                  dilation=(dh, dw), groups=groups), seed=seed)


def test_conv2d_lenet_shapes():
    rng = np.random.default_rng(7)
    check("conv2d", {"Input": rand(rng, 8, 20, 12, 12), "Filter": rand(rng, 50, 20, 5, 5)}, {},
          lambda a, b: torch.nn.functional.conv2d(a, b))


def test_depthwise_conv2d():
    rng = np.random.default_rng(8)
    check("depthwise_conv2d", {"Input": rand(rng, 2, 4, 7, 6), "Filter": rand(rng, 4, 1, 3, 3)},
          {"groups": 4, "paddings": [1, 1]},
          lambda a, b: torch.nn.functional.conv2d(a, b, padding=1, groups=4))


@pytest.mark.parametrize("seed", range(10))
def test_pool2d_random(seed):
    rng = np.random.default_rng(200 + seed)
    kind = "max" if seed % 2 == 0 else "avg"
    k = int(rng.integers(1, 4))
    s = int(rng.integers(1, 3))
    p = int(rng.integers(0, (k // 2) + 1))  # torch requires padding <= kernel / 2
    ceil = bool(rng.integers(0, 2))
    exclusive = bool(rng.integers(0, 2))
    h, w = k + int(rng.integers(0, 6)), k + int(rng.integers(0, 6))
    # Distinct values: max pooling's gradient is unambiguous.
    x = rng.permutation(2 * 3 * h * w).astype(np.float32).reshape(2, 3, h, w) / 10

    def torch_pool(a):
        if kind == "max":
            return torch.nn.functional.max_pool2d(a, k, s, p, ceil_mode=ceil)
        return torch.nn.functional.avg_pool2d(a, k, s, p, ceil_mode=ceil,
                                              count_include_pad=not exclusive)

    # Paddle's and torch's ceil_mode agree unless the last window would start in the padding,
    # which torch drops: compare only where the output shapes agree.
    want = torch_pool(torch.tensor(x))
    attrs = {"pooling_type": kind, "ksize": [k, k], "strides": [s, s], "paddings": [p, p],
             "ceil_mode": ceil, "exclusive": exclusive}
    g = cf.Graph()
    got_shape = cf.op("pool2d", {"X": g.input("x", "float32", x.shape)}, attrs).shape
    if tuple(got_shape) != tuple(want.shape):
        pytest.skip(f"ceil_mode windows differ by design: {got_shape} vs {tuple(want.shape)}")
    check("pool2d", {"X": x}, attrs, torch_pool, seed=seed)


def test_pool2d_global():
    rng = np.random.default_rng(9)
    check("pool2d", {"X": rand(rng, 2, 3, 5, 4)},
          {"pooling_type": "avg", "ksize": [1, 1], "global_pooling": True},
          lambda a: torch.nn.functional.adaptive_avg_pool2d(a, 1))


@pytest.mark.parametrize("xn", [1, 2])
def test_mul(xn):
    rng = np.random.default_rng(10 + xn)
    x = rand(rng, 3, 4, 5)
    y = rand(rng, 20 if xn == 1 else 5, 6)
    check("mul", {"X": x, "Y": y}, {"x_num_col_dims": xn},
          lambda a, b: (a.reshape(3, -1) @ b).reshape(3, 6) if xn == 1
          else (a.reshape(12, 5) @ b).reshape(3, 4, 6))


@pytest.mark.parametrize("name,fn,low", [
    ("log", torch.log, 0.5), ("exp", torch.exp, -2.0), ("sqrt", torch.sqrt, 0.5),
    ("square", torch.square, -2.0), ("abs", torch.abs, -2.0)])
def test_unary(name, fn, low):
    rng = np.random.default_rng(11)
    x = rng.uniform(low, 3.0, size=(4, 5)).astype(np.float32)
    check(name, {"X": x}, {}, fn)


def test_mean_and_sum():
    rng = np.random.default_rng(12)
    check("mean", {"X": rand(rng, 3, 4)}, {}, lambda a: a.mean().reshape(1))
    a, b = rand(rng, 2, 3), rand(rng, 2, 3)
    check("sum", {"X": a}, {}, lambda t: t)


# ---- the nn rows --------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_batch_norm_training(layout):
    rng = np.random.default_rng(30)
    x = rand(rng, 4, 3, 5, 2) if layout == "NCHW" else rand(rng, 4, 5, 2, 3)
    scale, bias = rng.uniform(0.5, 1.5, 3).astype(np.float32), rand(rng, 3)
    mean, var = np.zeros(3, np.float32), np.ones(3, np.float32)

    def torch_bn(a, s, b, m, v):
        a_nchw = a if layout == "NCHW" else a.permute(0, 3, 1, 2)
        y = torch.nn.functional.batch_norm(a_nchw, m.clone(), v.clone(), s, b, training=True,
                                           momentum=0.1, eps=1e-5)
        return y if layout == "NCHW" else y.permute(0, 2, 3, 1)

    check("batch_norm", {"X": x, "Scale": scale, "Bias": bias, "Mean": mean, "Variance": var},
          {"epsilon": 1e-5, "momentum": 0.9, "data_layout": layout}, torch_bn, output="Y",
          wrt=["X", "Scale", "Bias"])


def test_batch_norm_inference():
    rng = np.random.default_rng(31)
    x = rand(rng, 4, 3, 5, 2)
    scale, bias = rng.uniform(0.5, 1.5, 3).astype(np.float32), rand(rng, 3)
    mean, var = rand(rng, 3), rng.uniform(0.5, 2.0, 3).astype(np.float32)
    check("batch_norm", {"X": x, "Scale": scale, "Bias": bias, "Mean": mean, "Variance": var},
          {"is_test": True},
          lambda a, s, b, m, v: torch.nn.functional.batch_norm(a, m, v, s, b, training=False,
                                                                eps=1e-5),
          output="Y", wrt=[])


def test_softmax_with_cross_entropy_hard_and_soft():
    rng = np.random.default_rng(32)
    logits = rand(rng, 6, 5) * 3
    label = rng.integers(0, 5, size=(6, 1)).astype(np.int64)
    check("softmax_with_cross_entropy", {"Logits": logits, "Label": label}, {},
          lambda z, l: torch.nn.functional.cross_entropy(z, l[:, 0], reduction="none")[:, None],
          output="Loss")
    soft = rng.dirichlet(np.ones(5), size=6).astype(np.float32)
    check("softmax_with_cross_entropy", {"Logits": logits, "Label": soft}, {"soft_label": True},
          lambda z, l: -(l * torch.log_softmax(z, -1)).sum(-1, keepdim=True), output="Loss",
          wrt=["Logits"])


def test_cross_entropy_on_probabilities():
    rng = np.random.default_rng(33)
    p = rng.dirichlet(np.ones(4), size=5).astype(np.float32)
    label = rng.integers(0, 4, size=(5, 1)).astype(np.int64)
    check("cross_entropy", {"X": p, "Label": label}, {},
          lambda q, l: -torch.log(q.gather(1, l)))


def test_leaky_relu_concat_flatten_dropout_inference():
    rng = np.random.default_rng(34)
    x = rand(rng, 3, 4)
    check("leaky_relu", {"X": x}, {"alpha": 0.1},
          lambda a: torch.nn.functional.leaky_relu(a, 0.1))
    a, b = rand(rng, 2, 3), rand(rng, 2, 5)
    g = cf.Graph()
    na, nb = g.input("a", "float32", a.shape), g.input("b", "float32", b.shape)
    out = cf.op("concat", {"X": [na, nb]}, {"axis": 1})
    loss = cf.sum(out * out)
    ga, gb = cf.grad(loss, [na, nb])
    m = cf.TapeMachine(g)
    m.run({na: a, nb: b})
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (torch.cat([ta, tb], 1) ** 2).sum().backward()
    close(m.result(out).numpy(), torch.cat([ta, tb], 1).detach().numpy(), "concat")
    close(m.result(ga).numpy(), ta.grad.numpy(), "concat gradient of X[0]")
    close(m.result(gb).numpy(), tb.grad.numpy(), "concat gradient of X[1]")
    check("flatten", {"X": rand(rng, 2, 3, 4)}, {"axis": 2}, lambda t: t.reshape(6, 4))
    check("dropout", {"X": x}, {"dropout_prob": 0.3, "is_test": True, "fix_seed": True},
          lambda t: t * (1 - 0.3), wrt=[])


# ---- program ops, differentiated by append_backward, against torch --------------------------

from conftest import VT, block, op, tvar  # noqa: E402


def check_program(op_type, inputs, attrs, torch_fn, out_slot="Out", seed=0, extra_outputs=()):
    """One program op over persistable float32 inputs (slot -> ndarray), loss = sum(Out * r) built
    from elementwise_mul and reduce_sum; append_backward; outputs and every input's gradient
    against torch."""
    rng = np.random.default_rng(seed)
    ts = [torch.tensor(v, requires_grad=True) for v in inputs.values()]
    want = torch_fn(*ts)
    r = rng.uniform(0.5, 1.5, size=tuple(want.shape)).astype(np.float32)
    (want * torch.tensor(r)).sum().backward()
    names = {slot: slot.lower() + "_in" for slot in inputs}
    vars_ = [dict(tvar(names[s], VT.FP32, v.shape), persistable=True) for s, v in inputs.items()]
    vars_ += [tvar("out", VT.FP32, []), tvar("r", VT.FP32, list(r.shape)),
              tvar("weighted", VT.FP32, []), tvar("loss", VT.FP32, [1])]
    outs = [(out_slot, ["out"])]
    for slot in extra_outputs:
        vars_.append(tvar(slot.lower() + "_extra", VT.FP32, []))
        outs.append((slot, [slot.lower() + "_extra"]))
    prog = cf.Program.from_blocks([block(0, -1, vars_, [
        op(op_type, [(s, [names[s]]) for s in inputs], outs, list(attrs.items())),
        op("elementwise_mul", [("X", ["out"]), ("Y", ["r"])], [("Out", ["weighted"])]),
        op("reduce_sum", [("X", ["weighted"])], [("Out", ["loss"])],
           [("reduce_all", True)]),
    ])])
    prog, pairs = cf.append_backward(prog, "loss")
    feed = {names[s]: v for s, v in inputs.items()}
    feed["r"] = r
    got = cf.Executor().run(prog, feed=feed, fetch=["out"] + [g for _, g in pairs])
    close(got[0].numpy(), want.detach().numpy(), f"{op_type} output")
    by_param = dict(zip([p for p, _ in pairs], got[1:]))
    for (slot, _), t in zip(inputs.items(), ts):
        close(by_param[names[slot]].numpy(), t.grad.numpy(), f"{op_type} gradient of {slot}")


@pytest.mark.parametrize("op_type,fn", [
    ("elementwise_add", torch.add), ("elementwise_sub", torch.sub), ("elementwise_mul", torch.mul),
    ("elementwise_div", torch.div), ("elementwise_max", torch.maximum),
    ("elementwise_min", torch.minimum)])
def test_elementwise_with_paddle_axis(op_type, fn):
    rng = np.random.default_rng(20)
    x = rng.uniform(0.5, 2.0, size=(2, 3, 4)).astype(np.float32)
    y = rng.uniform(0.5, 2.0, size=(3,)).astype(np.float32)
    # Paddle's axis=1: Y lines up with X's axis 1; torch broadcasts Y reshaped to (1, 3, 1).
    check_program(op_type, {"X": x, "Y": y}, {"axis": 1},
                  lambda a, b: fn(a, b.reshape(1, 3, 1)))
    check_program(op_type, {"X": x, "Y": rng.uniform(0.5, 2.0, size=(3, 4)).astype(np.float32)},
                  {}, fn)


@pytest.mark.parametrize("op_type,fn", [
    ("relu", torch.relu), ("sigmoid", torch.sigmoid), ("tanh", torch.tanh),
    ("softplus", torch.nn.functional.softplus),
    ("softmax", lambda a: torch.softmax(a, -1))])
def test_activations_in_programs(op_type, fn):
    rng = np.random.default_rng(21)
    check_program(op_type, {"X": rand(rng, 3, 5)}, {}, fn)


def test_reductions_matmul_layout_in_programs():
    rng = np.random.default_rng(22)
    x = rand(rng, 2, 3, 4)
    check_program("reduce_sum", {"X": x}, {"dim": [1]}, lambda a: a.sum(1))
    check_program("reduce_mean", {"X": x}, {"dim": [0, 2], "keep_dim": True},
                  lambda a: a.mean((0, 2), keepdim=True))
    check_program("transpose", {"X": x}, {"axis": [2, 0, 1]}, lambda a: a.permute(2, 0, 1))
    check_program("reshape", {"X": x}, {"shape": [4, 6]}, lambda a: a.reshape(4, 6))
    check_program("scale", {"X": x}, {"scale": -1.5, "bias": 0.25},
                  lambda a: a * -1.5 + 0.25)
    check_program("matmul", {"X": rand(rng, 2, 3, 4), "Y": rand(rng, 2, 5, 4)},
                  {"transpose_Y": True, "alpha": 0.5},
                  lambda a, b: 0.5 * a @ b.transpose(-1, -2))
    check_program("mul", {"X": rand(rng, 3, 2, 2), "Y": rand(rng, 4, 5)}, {},
                  lambda a, b: a.reshape(3, 4) @ b)
    check_program("conv2d", {"Input": rand(rng, 2, 3, 6, 6), "Filter": rand(rng, 4, 3, 3, 3)},
                  {"paddings": [1, 1], "strides": [2, 2]},
                  lambda a, b: torch.nn.functional.conv2d(a, b, stride=2, padding=1),
                  out_slot="Output")
