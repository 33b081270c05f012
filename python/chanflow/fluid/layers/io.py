"""Fluid's ``data`` layer: the variables a program is fed::

    img = fluid.layers.data(name='img', shape=[1, 28, 28])        # declared [-1, 1, 28, 28]
    label = fluid.layers.data(name='label', shape=[1], dtype='int64')
"""

from .. import core
from ..layer_helper import LayerHelper

__all__ = ["data"]


def data(name, shape, append_batch_size=True, dtype="float32", lod_level=0,
         type=core.VarDesc.VarType.LOD_TENSOR, stop_gradient=True):
    """Declares the block 0 variable ``name`` the executor's ``feed`` fills: shape ``shape``
    with a leading -1 (the batch) when ``append_batch_size`` and no dimension of ``shape`` is
    already negative or None. ``stop_gradient`` (True, as in Paddle): no gradient flows into
    it. Returns the variable."""
    helper = LayerHelper("data", **locals())
    shape = list(shape)
    for i, d in enumerate(shape):
        if d is None:
            shape[i] = -1
            append_batch_size = False
        elif d < 0:
            append_batch_size = False
    if append_batch_size:
        shape = [-1] + shape
    return helper.create_global_variable(
        name=name,
        shape=shape,
        dtype=dtype,
        type=type,
        stop_gradient=stop_gradient,
        lod_level=lod_level,
        is_data=True,
    )
