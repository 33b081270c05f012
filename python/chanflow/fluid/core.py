"""Paddle Fluid's ``core`` names that concurrent programs use: ``VarDesc.VarType`` and places.

``core.VarDesc.VarType`` carries Fluid's enum values, which are also the numbers of chanflow's
program format (``include/chanflow/ir/var_type.h``): ``FP64`` is 6, ``LOD_TENSOR`` 7,
``CHANNEL`` 16. The members are ``int`` subclasses, so they can be written wherever Fluid wrote
a data type attribute (``fill_constant``'s ``dtype``, ``channel_create``'s ``data_type``).

chanflow runs on the CPU only: ``CPUPlace`` is the one place an ``Executor`` accepts.
``is_compiled_with_cuda()`` is False; ``CUDAPlace(i)`` can be made (programs that pick a place
by that test name it), but an ``Executor`` given one raises ``UnavailableError``.

``Scope`` holds the variables that outlive a run (parameters, optimiser state) in a
``chanflow.PersistentScope``; ``scope.find_var(name).get_tensor()`` is a ``LoDTensor`` view of
one of them (``np.array(t)``, ``t.set(array, place)``, ``t.shape()``)::

    w = np.array(fluid.global_scope().find_var('fc_0.w_0').get_tensor())
"""

import enum

import numpy as np

from .. import _native

__all__ = ["VarDesc", "CPUPlace", "CUDAPlace", "Scope", "LoDTensor", "is_compiled_with_cuda",
           "UnavailableError", "EOFException"]


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


def is_compiled_with_cuda():
    """False: chanflow has no GPU kernels."""
    return False


class UnavailableError(_native.Error, RuntimeError):
    """A device chanflow does not have (``CUDAPlace``) was asked to run a program: a
    ``chanflow.Error`` and a ``RuntimeError``."""


class EOFException(_native.Error, EOFError):
    """Raised by ``Executor.run`` (and ``ParallelExecutor.run``) when a ``layers.py_reader``
    the program reads from has no batch left: the pass is over. ``reader.reset()`` then
    ``reader.start()`` begin the next one. A ``chanflow.Error`` and an ``EOFError``."""


class CUDAPlace(object):
    """Fluid's ``core.CUDAPlace(device_id)``: a GPU. chanflow has no GPU kernels; the object
    exists so programs can name it, and ``Executor(CUDAPlace(i))`` raises
    ``UnavailableError``."""

    def __init__(self, device_id=0):
        if not isinstance(device_id, int) or isinstance(device_id, bool) or device_id < 0:
            raise TypeError("CUDAPlace: device_id must be an int >= 0, got %r" % (device_id,))
        self.device_id = device_id

    def __eq__(self, other):
        return isinstance(other, CUDAPlace) and other.device_id == self.device_id

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((CUDAPlace, self.device_id))

    def __repr__(self):
        return "CUDAPlace(%d)" % self.device_id


class LoDTensor(object):
    """A tensor of a ``Scope`` by name: Fluid's ``LoDTensor`` as ``Variable.get_tensor()``
    gave it. Reads see the scope's current value; ``set`` replaces it. LoD (sequence offsets)
    is not supported: ``lod()`` is ``[]`` and ``set_lod`` of a non-empty LoD raises."""

    def __init__(self, scope, name):
        self._scope = scope
        self._name = name

    def _tensor(self):
        t = self._scope._native.find(self._name)
        if t is None:
            raise _native.NotFoundError(
                "LoDTensor '%s': the scope holds no value for it (run the startup program, or "
                "set() one)" % self._name
            )
        return t

    def set(self, array, place=None):
        """Sets the value to a copy of ``array`` (anything ``numpy.asarray`` takes)."""
        if place is not None and not isinstance(place, CPUPlace):
            raise TypeError("LoDTensor.set: place must be CPUPlace(), got %r" % (place,))
        self._scope._native.set(self._name, np.array(array, copy=True))

    def shape(self):
        return list(self._tensor().numpy().shape)

    def _dtype(self):
        return self._tensor().numpy().dtype

    def lod(self):
        return []

    def set_lod(self, lod):
        if lod and any(lod):
            raise ValueError("LoDTensor '%s': LoD is not supported" % self._name)

    def __array__(self, dtype=None):
        a = self._tensor().numpy().copy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        return "LoDTensor(%r)" % self._name


class _ScopeVariable(object):
    """A variable of a ``Scope`` (``find_var`` / ``var``): ``get_tensor()``."""

    def __init__(self, scope, name):
        self._scope = scope
        self._name = name

    def name(self):
        return self._name

    def get_tensor(self):
        return LoDTensor(self._scope, self._name)

    def is_initialized(self):
        return self._name in self._scope._native


class Scope(object):
    """Variables by name that outlive a run: Fluid's ``core.Scope``, over a
    ``chanflow.PersistentScope`` (``native``). ``Executor.run(scope=s)`` starts each run with
    ``s``'s values for the program's persistable block 0 variables and stores them back when
    it ends. One run uses a scope at a time. ``find_var(name)`` is None when the scope has no
    value for ``name``; ``var(name)`` returns the variable either way (set it with
    ``get_tensor().set``)."""

    def __init__(self, native=None):
        self._native = _native.PersistentScope() if native is None else native
        self._kids = []

    @property
    def native(self):
        return self._native

    def find_var(self, name):
        if not isinstance(name, str):
            raise TypeError("find_var takes a variable name, got %r" % (name,))
        return _ScopeVariable(self, name) if name in self._native else None

    def var(self, name):
        return _ScopeVariable(self, name)

    def erase(self, names):
        for n in [names] if isinstance(names, str) else names:
            self._native.erase(n)

    def local_var_names(self):
        return list(self._native.names())

    def new_scope(self):
        """A new, separate scope (chanflow scopes have no parent chain)."""
        kid = Scope()
        self._kids.append(kid)
        return kid

    def drop_kids(self):
        self._kids = []

    def __contains__(self, name):
        return name in self._native

    def __repr__(self):
        return "Scope(%d variables)" % len(self._native)
