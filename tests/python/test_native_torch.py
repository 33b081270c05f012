"""Zero-copy exchange with PyTorch through DLPack (skipped when torch is not installed)."""
import gc
import weakref

import numpy as np
import pytest

import chanflow as cf

torch = pytest.importorskip("torch")


def addr(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32,
                                   torch.int64, torch.uint8, torch.float16, torch.float32,
                                   torch.float64])
def test_torch_to_chanflow_and_back_share_memory(dtype):
    x = (torch.arange(6) % 3).to(dtype).reshape(2, 3)
    t = cf.from_dlpack(x)
    assert t.shape == (2, 3)
    assert addr(t.numpy()) == x.data_ptr()
    np.testing.assert_array_equal(t.numpy(), x.numpy())
    y = torch.utils.dlpack.from_dlpack(t)
    assert y.data_ptr() == x.data_ptr()
    assert y.dtype == dtype
    assert torch.equal(y, x)


def test_bool_is_refused_cleanly_by_torch_1_13():
    # torch 1.13's DLPack has no bool (DLPack 0.8's kDLBool, which chanflow exports, came in
    # torch 2): both directions raise a Python exception, neither crashes nor leaks the export.
    x = torch.tensor([True, False])
    with pytest.raises(RuntimeError, match="[Bb]ool"):
        cf.from_dlpack(x)
    t = cf.tensor(np.array([True, False]))
    try:
        y = torch.from_dlpack(t)
    except RuntimeError:
        pass  # torch 1.13
    else:
        assert y.dtype == torch.bool and y.data_ptr() == addr(t.numpy())


def test_torch_buffer_survives_while_chanflow_holds_it():
    x = torch.arange(1000, dtype=torch.float32)
    p = x.data_ptr()
    t = cf.from_dlpack(x)
    del x
    gc.collect()
    v = t.numpy()
    assert addr(v) == p and v[999] == 999.0


def test_chanflow_buffer_survives_while_torch_holds_it():
    a = np.arange(10, dtype=np.int64)
    ref = weakref.ref(a)
    t = cf.tensor(a)
    del a
    y = torch.from_dlpack(t)
    del t
    gc.collect()
    assert ref() is not None
    assert int(y[9]) == 9
    del y
    gc.collect()
    assert ref() is None


def test_strided_torch_view():
    x = torch.arange(12, dtype=torch.int32).reshape(3, 4).t()
    t = cf.from_dlpack(x)
    assert addr(t.numpy()) == x.data_ptr()
    np.testing.assert_array_equal(t.numpy(), x.numpy())


def test_tensor_of_a_torch_tensor():
    x = torch.arange(4, dtype=torch.float32)
    t = cf.tensor(x)
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2, 3])
    assert addr(t.numpy()) == x.data_ptr()  # NumPy's view of it, imported without a copy
