"""fluid.io: inference models and parameters saved and loaded (one file per variable and the
combined file) give the same predictions in a fresh scope; the tensor files are Paddle's
serialised LoDTensor, checked by a parser written here from the format's description; the
model file is a ProgramDesc with Fluid's feed/fetch ops; damaged files raise."""

import os
import struct

import numpy as np
import pytest

import chanflow
import chanflow.fluid as fluid
from chanflow.fluid import layers

# Fluid's VarType data_type numbers -> NumPy, for the reference parser.
REF_DTYPES = {0: np.bool_, 1: np.int16, 2: np.int32, 3: np.int64, 4: np.float16, 5: np.float32,
              6: np.float64, 20: np.uint8, 21: np.int8}


def ref_varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def ref_parse(buf, i=0):
    """One Paddle LoDTensor from bytes at i: (array, lod, next offset)."""
    assert struct.unpack_from("<I", buf, i)[0] == 0
    i += 4
    (levels,) = struct.unpack_from("<Q", buf, i)
    i += 8
    lod = []
    for _ in range(levels):
        (n,) = struct.unpack_from("<Q", buf, i)
        i += 8
        lod.append(list(struct.unpack_from("<%dQ" % (n // 8), buf, i)))
        i += n
    assert struct.unpack_from("<I", buf, i)[0] == 0
    i += 4
    (size,) = struct.unpack_from("<i", buf, i)
    i += 4
    desc, i = buf[i:i + size], i + size
    j, data_type, dims = 0, None, []
    while j < len(desc):
        key, j = ref_varint(desc, j)
        value, j = ref_varint(desc, j)
        if key == 0x08:
            data_type = value
        elif key == 0x10:
            dims.append(value)
        else:
            raise AssertionError("unexpected TensorDesc key %#x" % key)
    dtype = np.dtype(REF_DTYPES[data_type])
    n = int(np.prod(dims)) if dims else 1
    arr = np.frombuffer(buf, dtype=dtype.newbyteorder("<"), count=n, offset=i).reshape(dims)
    return arr, lod, i + n * dtype.itemsize


def test_tensor_bytes_match_paddles_layout():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = fluid.io.serialize_lod_tensor(a)
    header = struct.pack("<IQIi", 0, 0, 0, 6) + bytes([0x08, 5, 0x10, 2, 0x10, 3])
    assert b[:len(header)] == header
    assert b[len(header):] == a.tobytes()
    back, end = fluid.io.deserialize_lod_tensor(b)
    assert end == len(b) and back.dtype == np.float32 and (back == a).all()
    for arr in (np.array([[1, -2]], np.int64), np.zeros((0, 4), np.float64), np.float32(3.5),
                np.array([True, False])):
        got, _, end = ref_parse(fluid.io.serialize_lod_tensor(arr))
        assert got.dtype == np.asarray(arr).dtype and got.shape == np.asarray(arr).shape
        np.testing.assert_array_equal(got, arr)


def test_reads_a_tensor_with_lod_and_packed_dims():
    # A LoD level [0, 2] and dims packed (wire type 2): still Paddle's format.
    lod = struct.pack("<Q", 16) + struct.pack("<2Q", 0, 2)
    desc = bytes([0x08, 3, 0x12, 2, 2, 1])
    data = np.array([[7], [-8]], np.int64).tobytes()
    buf = struct.pack("<IQ", 0, 1) + lod + struct.pack("<Ii", 0, len(desc)) + desc + data
    got, end = fluid.io.deserialize_lod_tensor(buf)
    assert end == len(buf)
    np.testing.assert_array_equal(got, [[7], [-8]])
    with pytest.raises(fluid.io.FormatError, match="truncated"):
        fluid.io.deserialize_lod_tensor(buf[:-3])
    with pytest.raises(fluid.io.FormatError, match="version 1"):
        fluid.io.deserialize_lod_tensor(struct.pack("<I", 1) + buf[4:])


def build_and_train(seed=3):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = layers.data("img", shape=[1, 6, 6])
        label = layers.data("label", shape=[1], dtype="int64")
        c = layers.conv2d(img, num_filters=3, filter_size=3, act="relu")
        c = layers.batch_norm(c)
        h = layers.fc(c, size=8, act="tanh")
        h = layers.dropout(h, dropout_prob=0.2, seed=1)
        pred = layers.fc(h, size=3, act="softmax")
        loss = layers.mean(layers.cross_entropy(pred, label))
        test_prog = main.clone(for_test=True)
        fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    rng = np.random.RandomState(seed)
    X = rng.randn(16, 1, 6, 6).astype("float32")
    Y = rng.randint(0, 3, size=(16, 1)).astype("int64")
    exe.run(startup)
    for _ in range(5):
        exe.run(main, feed={"img": X, "label": Y})
    return main, test_prog, pred, exe


@pytest.mark.parametrize("combined", [False, True])
def test_inference_model_roundtrip(tmp_path, combined):
    scope = fluid.core.Scope()
    with fluid.scope_guard(scope):
        main, test_prog, pred, exe = build_and_train()
        Xt = np.random.RandomState(9).randn(5, 1, 6, 6).astype("float32")
        want, = exe.run(test_prog, feed={"img": Xt, "label": np.zeros((len(Xt), 1), "int64")},
                       fetch_list=[pred])
        d = str(tmp_path / "m")
        kw = dict(model_filename="net", params_filename="params") if combined else {}
        fluid.io.save_inference_model(d, ["img"], [pred], exe, main_program=main, **kw)
        persist = sorted(n for n in scope.local_var_names()
                         if not ("moment" in n or "pow_acc" in n or "learning_rate" in n))
        values = {n: np.array(scope.find_var(n).get_tensor()) for n in persist}
    files = sorted(os.listdir(d))
    if combined:
        assert files == ["net", "params"]
        buf = open(os.path.join(d, "params"), "rb").read()
        i = 0
        for n in sorted(values):  # Paddle's save_combine order: sorted names
            arr, lod, i = ref_parse(buf, i)
            assert lod == []
            np.testing.assert_array_equal(arr, values[n])
        assert i == len(buf)
    else:
        assert files == sorted(["__model__"] + list(values))
        for n, v in values.items():
            buf = open(os.path.join(d, n), "rb").read()
            arr, lod, end = ref_parse(buf)
            assert end == len(buf)
            np.testing.assert_array_equal(arr, v)
    # The model: a ProgramDesc with Fluid's feed/fetch ops and holder variables.
    model = chanflow.Program.from_binary(open(os.path.join(d, "net" if combined else
                                                           "__model__"), "rb").read())
    ops = model.blocks[0].ops
    assert ops[0].type == "feed" and ops[-1].type == "fetch"
    assert [o.type for o in ops].count("feed") == 1 and "adam" not in [o.type for o in ops]
    types = {v.name: int(v.type) for v in model.blocks[0].vars}
    assert types["feed"] == 9 and types["fetch"] == 10
    assert all(bool(o.attrs["is_test"].value) for o in ops if "is_test" in o.attrs)
    with fluid.scope_guard(fluid.core.Scope()):
        exe = fluid.Executor(fluid.CPUPlace())
        prog, feeds, fetches = fluid.io.load_inference_model(
            d, exe, kw.get("model_filename"), kw.get("params_filename"))
        assert feeds == ["img"] and [v.name for v in fetches] == [pred.name]
        got, = exe.run(prog, feed={feeds[0]: Xt}, fetch_list=fetches)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("filename", [None, "all"])
def test_params_and_persistables_roundtrip(tmp_path, filename):
    with fluid.scope_guard(fluid.core.Scope()):
        main, test_prog, pred, exe = build_and_train()
        Xt = np.random.RandomState(2).randn(3, 1, 6, 6).astype("float32")
        want, = exe.run(test_prog, feed={"img": Xt, "label": np.zeros((len(Xt), 1), "int64")},
                       fetch_list=[pred])
        fluid.io.save_params(exe, str(tmp_path / "p"), main, filename)
        fluid.io.save_persistables(exe, str(tmp_path / "q"), main, filename)
    if filename is None:
        assert sorted(os.listdir(tmp_path / "p")) == sorted(p.name for p in main.all_parameters())
        assert any("moment1" in n for n in os.listdir(tmp_path / "q"))
    for load, where in ((fluid.io.load_params, "p"), (fluid.io.load_persistables, "q")):
        # batch_norm's statistics are (non-trainable) parameters, as in Fluid: either suffices.
        with fluid.scope_guard(fluid.core.Scope()):
            load(exe, str(tmp_path / where), main, filename)
            got, = exe.run(test_prog, feed={"img": Xt, "label": np.zeros((3, 1), "int64")},
                           fetch_list=[pred])
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    with fluid.scope_guard(fluid.core.Scope()):
        with pytest.raises(chanflow.Error):  # params hold no optimiser state
            fluid.io.load_persistables(exe, str(tmp_path / "p"), main, filename)


def test_damaged_or_missing_files_raise(tmp_path):
    with fluid.scope_guard(fluid.core.Scope()):
        main, test_prog, pred, exe = build_and_train()
        d = str(tmp_path / "m")
        fluid.io.save_inference_model(d, "img", pred, exe, main_program=main,
                                      params_filename="params")
        path = os.path.join(d, "params")
        data = open(path, "rb").read()
        open(path, "wb").write(data + b"\0")
        with pytest.raises(fluid.io.FormatError, match="more tensors"):
            fluid.io.load_inference_model(d, exe, params_filename="params")
        open(path, "wb").write(data[:-1])
        with pytest.raises(fluid.io.FormatError, match="truncated"):
            fluid.io.load_inference_model(d, exe, params_filename="params")
        with pytest.raises(chanflow.NotFoundError, match="__model__x"):
            fluid.io.load_inference_model(d, exe, model_filename="__model__x")
        with pytest.raises(ValueError, match="nope"):
            fluid.io.save_inference_model(d, ["nope"], [pred], exe, main_program=main)
    with fluid.scope_guard(fluid.core.Scope()):
        with pytest.raises(chanflow.NotFoundError, match="startup"):
            fluid.io.save_params(exe, str(tmp_path / "e"), main)
