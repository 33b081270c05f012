"""chanflow.Tensor with NumPy: zero-copy both ways, lifetimes, tensor() conversions, dtypes."""
import ctypes
import gc
import os
import re
import weakref

import numpy as np
import pytest

import chanflow as cf

ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32",
              "float64"]


def addr(a):
    return a.__array_interface__["data"][0]


def sample(dtype, shape=(2, 3)):
    n = int(np.prod(shape))
    if dtype == "bool":
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) * 3 - 4).astype(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_numpy_import_and_export_share_memory(dtype):
    a = sample(dtype)
    t = cf.tensor(a)
    assert t.dtype == np.dtype(dtype)
    assert t.shape == (2, 3) and t.ndim == 2 and t.size == 6
    v = t.numpy()
    assert addr(v) == addr(a)  # both ways without a copy
    assert v.dtype == a.dtype and v.shape == a.shape
    np.testing.assert_array_equal(v, a)


def test_numpy_view_is_read_only_and_keeps_the_tensor_alive():
    t = cf.tensor(np.arange(4.0))
    v = t.numpy()
    assert not v.flags.writeable
    with pytest.raises(ValueError):
        v[0] = 7
    del t
    gc.collect()
    np.testing.assert_array_equal(v, [0.0, 1.0, 2.0, 3.0])  # the base holds the storage


def test_imported_array_lives_while_the_tensor_does():
    a = np.arange(1000, dtype=np.int64)
    ref = weakref.ref(a)
    p = addr(a)
    t = cf.tensor(a)
    del a
    gc.collect()
    assert ref() is not None  # the tensor holds it
    v = t.numpy()
    assert addr(v) == p
    assert v[999] == 999
    del t, v
    gc.collect()
    assert ref() is None  # and releases it once its last view is gone


def test_zero_copy_import_sees_later_writes_to_the_array():
    # Documented: a zero-copy import shares memory with its producer.
    a = np.zeros(3, dtype=np.float32)
    t = cf.tensor(a)
    a[1] = 5
    assert t.numpy()[1] == 5


def test_tensor_of_lists_and_scalars():
    t = cf.tensor([[1, 2], [3, 4]])
    assert t.dtype == np.int64 and t.shape == (2, 2)
    assert cf.tensor(2.5).shape == () and cf.tensor(2.5).dtype == np.float64
    assert cf.tensor(True).dtype == np.bool_
    f = cf.tensor([1, 2, 3], dtype="float32")
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f.numpy(), [1, 2, 3])
    assert cf.tensor([], dtype=np.int32).shape == (0,)


def test_non_contiguous_input_is_copied_in_order():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for view in (a.T, a[:, ::2], a[::-1]):
        t = cf.tensor(view)
        np.testing.assert_array_equal(t.numpy(), view)
        assert t.numpy().flags.c_contiguous
        assert addr(t.numpy()) != addr(a)


def test_dtype_change_copies():
    a = np.arange(5, dtype=np.int32)
    t = cf.tensor(a, dtype=np.float64)
    assert t.dtype == np.float64 and addr(t.numpy()) != addr(a)
    same = cf.tensor(a, dtype="int32")
    assert addr(same.numpy()) == addr(a)  # no change asked: still zero-copy


def test_tensor_of_a_tensor_is_the_same_storage():
    t = cf.tensor(np.arange(3.0))
    assert addr(cf.tensor(t).numpy()) == addr(t.numpy())
    np.testing.assert_array_equal(cf.tensor(t, dtype="int8").numpy(), [0, 1, 2])


@pytest.mark.parametrize("bad", [np.array([1 + 2j]), np.array(["a"]), np.array([object()]),
                                 np.arange(3, dtype=np.uint16),
                                 np.zeros(2, dtype=[("a", "i4")])])
def test_unsupported_dtypes_are_a_type_error_naming_the_dtype(bad):
    with pytest.raises(cf.TypeError) as info:
        cf.tensor(bad)
    assert str(bad.dtype) in str(info.value) or bad.dtype.kind == "V"
    assert isinstance(info.value, TypeError)  # also the builtin


def test_bad_dtype_arguments():
    with pytest.raises(cf.TypeError, match="complex128"):
        cf.tensor([1, 2], dtype="complex128")
    with pytest.raises(cf.TypeError, match="not a data type"):
        cf.tensor([1, 2], dtype=object())
    with pytest.raises(cf.TypeError, match="None"):
        cf.tensor(None)
    with pytest.raises(cf.TypeError, match="<U1"):
        cf.tensor(np.array(["x"]), dtype="float32")  # no conversion from text


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_either_byte_order_is_copied_to_native_order(dtype, order):
    # What np.load gives for a file written on a machine of the other byte order.
    a = sample(dtype).astype(np.dtype(dtype).newbyteorder(order))
    t = cf.tensor(a)
    assert t.dtype == np.dtype(dtype) and t.dtype.isnative and t.shape == a.shape
    np.testing.assert_array_equal(t.numpy(), a)
    native = a.dtype.isnative or a.dtype.itemsize == 1
    assert (addr(t.numpy()) == addr(a)) == native  # shared when native, else a copy
    # An explicit dtype names the values' type; the byte order it spells does not matter.
    np.testing.assert_array_equal(cf.tensor(a, dtype=a.dtype).numpy(), a)
    assert cf.tensor(a, dtype=a.dtype).dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_foreign_byte_order_feeds_and_graph_bindings(dtype):
    a = sample(dtype, (3,)).astype(np.dtype(dtype).newbyteorder(">"))
    b = cf.ProgramBuilder()
    x = b.var("x", dtype, (3,))
    y = b.assign(x)
    prog = b.build()
    (out,) = cf.Executor().run(prog, feed={"x": a}, fetch=[y.name])
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.numpy(), a)
    g = cf.Graph()
    n = g.input("x", dtype, (3,))
    with cf.TapeMachine(g) as m:
        m.run({n: a})
        np.testing.assert_array_equal(m.result(n).numpy(), a)


def test_unaligned_input_is_copied():
    raw = np.zeros(8 * 4 + 1, dtype=np.uint8)
    a = raw[1:].view(np.float64)  # misaligned by one byte
    assert not a.flags.aligned
    t = cf.tensor(a)
    np.testing.assert_array_equal(t.numpy(), a)


def test_array_protocol():
    t = cf.tensor(np.arange(4, dtype=np.int16))
    assert addr(np.asarray(t)) == addr(t.numpy())
    c = np.array(t)  # copies by default
    assert addr(c) != addr(t.numpy()) and c.flags.writeable
    f = t.__array__(dtype="float32")
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f, [0, 1, 2, 3])
    with pytest.raises(ValueError, match="copy=False"):
        t.__array__(dtype="float32", copy=False)
    assert addr(t.__array__(copy=True)) != addr(t.numpy())


def test_numpy_dlpack_round_trip_without_copies():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = cf.from_dlpack(a)  # through ndarray.__dlpack__
    assert addr(t.numpy()) == addr(a)
    b = np.from_dlpack(t)  # through Tensor.__dlpack__
    assert addr(b) == addr(a)
    assert t.__dlpack_device__() == (1, 0)


def test_strided_dlpack_import_is_a_view():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)[:, 1::2]
    t = cf.from_dlpack(a)
    assert addr(t.numpy()) == addr(a)
    np.testing.assert_array_equal(t.numpy(), a)


def test_dlpack_capsule_is_consumed_once():
    t = cf.tensor(np.arange(3.0))
    cap = t.__dlpack__()
    u = cf.from_dlpack(cap)
    assert addr(u.numpy()) == addr(t.numpy())
    with pytest.raises(cf.TypeError, match="already consumed"):
        cf.from_dlpack(cap)


def test_unconsumed_capsule_frees_the_export():
    a = np.arange(5.0)
    ref = weakref.ref(a)
    t = cf.tensor(a)
    del a
    cap = t.__dlpack__()
    del t
    gc.collect()
    assert ref() is not None  # the capsule's export holds the tensor
    del cap
    gc.collect()
    assert ref() is None


def test_dlpack_bad_arguments():
    with pytest.raises(cf.TypeError, match="__dlpack__"):
        cf.from_dlpack([1, 2, 3])
    with pytest.raises(cf.TypeError, match="stream"):
        cf.tensor([1.0]).__dlpack__(stream=1)


@pytest.mark.parametrize("device", [5, None, [1, 0], (1,), (1, 0, 0), ("cpu", 0), (1.0, 0),
                                    (True, 0), (1, "0")])
def test_dlpack_device_of_the_wrong_form_is_a_type_error_naming_it(device):
    class Producer:
        def __dlpack__(self, stream=None):
            return np.zeros(3).__dlpack__()

        def __dlpack_device__(self):
            return device

    expected = (r"^from_dlpack: .*Producer\.__dlpack_device__\(\) returned %s \('%s'\), not a "
                r"\(device_type, device_id\) tuple of two ints$"
                % (re.escape(repr(device)), type(device).__name__))
    with pytest.raises(cf.TypeError, match=expected):
        cf.from_dlpack(Producer())


def test_dlpack_device_other_than_the_cpu():
    class Producer:
        def __dlpack__(self, stream=None):
            return np.zeros(3).__dlpack__()

        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA

    with pytest.raises(cf.TypeError, match=r"only CPU tensors are supported \(DLPack device "
                                           r"type 2\)"):
        cf.from_dlpack(Producer())


def test_dlpack_hand_off_does_not_touch_the_data():
    # O(1) in size: 1 GiB of never-touched pages (np.empty maps them lazily) goes through
    # tensor(), from_dlpack and numpy() without a copy; a copy would fault in every page.
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    a = np.empty(1 << 30, dtype=np.uint8)
    t = cf.from_dlpack(cf.tensor(a))
    v = np.from_dlpack(t)
    assert addr(v) == addr(a)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    # Under ASan the allocator writes the allocation's shadow (1/8 of its size: 128 MiB) when
    # NumPy allocates; a copy would still add the whole GiB.
    bound_kib = 64 * 1024 + (128 * 1024 if os.environ.get("CHANFLOW_ASAN") else 0)
    assert grown_kib < bound_kib, f"resident set grew by {grown_kib} KiB"


def test_repr_and_no_public_constructor():
    assert "shape=(2,)" in repr(cf.tensor(np.array([1, 2], dtype=np.int8)))
    with pytest.raises(TypeError):
        cf.Tensor()


# ---- DLPack producers that lie about their extent ----

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _DELETER)]


class _HandMadeProducer:
    """A __dlpack__ producer whose DLManagedTensor is built by hand (ctypes): float32 over a
    16-byte buffer, with the shape, strides and byte_offset given."""

    def __init__(self, shape, strides, byte_offset=0):
        self.buffer = (ctypes.c_float * 4)()
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = (ctypes.c_int64 * len(strides))(*strides)
        self.deleted = 0

        def deleter(_):
            self.deleted += 1
        self.deleter = _DELETER(deleter)
        self.managed = _DLManagedTensor(
            _DLTensor(ctypes.cast(self.buffer, ctypes.c_void_p), _DLDevice(1, 0), len(shape),
                      _DLDataType(2, 32, 1), self.shape, self.strides, byte_offset),
            None, self.deleter)

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None):
        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype = ctypes.py_object
        new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        self.capsule = new_capsule(ctypes.addressof(self.managed), b"dltensor", None)
        return self.capsule

    def consumed(self):
        """Whether the consumer took ownership (DLPack: it renames the capsule)."""
        name = ctypes.pythonapi.PyCapsule_GetName
        name.restype = ctypes.c_char_p
        name.argtypes = [ctypes.py_object]
        return name(self.capsule) == b"used_dltensor"


@pytest.mark.parametrize("shape,strides,byte_offset", [
    ((2, 2**62), (1, 2**62), 0),            # extent * stride passes int64
    ((3,), (2**62,), 0),                    # (n - 1) * stride * itemsize passes int64
    ((2**40, 2**40), (2**40, 1), 0),        # a shape whose elements fit, strides that do not
    ((1,), (1,), 2**63 + 8),                # byte_offset past int64
])
def test_from_dlpack_refuses_an_extent_that_overflows(shape, strides, byte_offset):
    p = _HandMadeProducer(shape, strides, byte_offset)
    with pytest.raises(cf.ShapeError):
        cf.from_dlpack(p)
    assert not p.consumed() and p.deleted == 0  # refused: the producer still owns its tensor


def test_from_dlpack_of_a_hand_made_producer_that_fits_shares_it():
    p = _HandMadeProducer((2, 2), (2, 1))
    p.buffer[:] = [1.0, 2.0, 3.0, 4.0]
    t = cf.from_dlpack(p)
    np.testing.assert_array_equal(t.numpy(), [[1, 2], [3, 4]])
    assert p.consumed() and p.deleted == 0
    del t
    gc.collect()
    assert p.deleted == 1
