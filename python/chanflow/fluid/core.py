"""Paddle Fluid's ``core`` names that concurrent programs use: ``VarDesc.VarType`` and places.

``core.VarDesc.VarType`` carries Fluid's enum values, which are also the numbers of chanflow's
program format (``include/chanflow/ir/var_type.h``): ``FP64`` is 6, ``LOD_TENSOR`` 7,
``CHANNEL`` 16. The members are ``int`` subclasses, so they can be written wherever Fluid wrote
a data type attribute (``fill_constant``'s ``dtype``, ``channel_create``'s ``data_type``).

chanflow runs on the CPU only: ``CPUPlace`` is the one place an ``Executor`` accepts.
"""

import enum

__all__ = ["VarDesc", "CPUPlace"]


class _VarType(enum.IntEnum):
    """Fluid's ``VarDesc.VarType``: element types (``BOOL`` .. ``FP64``, ``UINT8``, ``INT8``)
    and variable kinds (``LOD_TENSOR``, ``STEP_SCOPES``, ``CHANNEL`` ...)."""

    BOOL = 0
    INT16 = 1
    INT32 = 2
    INT64 = 3
    FP16 = 4
    FP32 = 5
    FP64 = 6
    LOD_TENSOR = 7
    SELECTED_ROWS = 8
    FEED_MINIBATCH = 9
    FETCH_LIST = 10
    STEP_SCOPES = 11
    LOD_RANK_TABLE = 12
    LOD_TENSOR_ARRAY = 13
    PLACE_LIST = 14
    READER = 15
    CHANNEL = 16
    RAW = 17
    TUPLE = 18
    SIZE_T = 19
    UINT8 = 20
    INT8 = 21

    def __repr__(self):
        return "VarType." + self.name

    __str__ = __repr__


class VarDesc(object):
    """Namespace holding ``VarType``, as Fluid's ``core.VarDesc`` did."""

    VarType = _VarType


# The element types: a tensor variable's dtype must be one of these.
ELEMENT_TYPES = frozenset(
    (
        _VarType.BOOL,
        _VarType.INT8,
        _VarType.INT16,
        _VarType.INT32,
        _VarType.INT64,
        _VarType.UINT8,
        _VarType.FP16,
        _VarType.FP32,
        _VarType.FP64,
    )
)


class CPUPlace(object):
    """The CPU, where chanflow runs every program (Fluid's ``core.CPUPlace()``)."""

    def __eq__(self, other):
        return isinstance(other, CPUPlace)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(CPUPlace)

    def __repr__(self):
        return "CPUPlace"
