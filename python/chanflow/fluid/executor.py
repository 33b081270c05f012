"""Fluid's ``Executor``: runs a ``fluid.Program`` on chanflow's executor and returns the fetched
variables as NumPy arrays.

::

    exe = fluid.Executor(fluid.CPUPlace())
    out, = exe.run(program, feed={'x': np.ones(3)}, fetch_list=[y])
"""

import contextlib
import threading

import numpy as np

from .. import _native
from . import core
from . import framework
from . import place_parallel

__all__ = ["Executor", "global_scope", "scope_guard"]

_shared_native_executor = None
_shared_native_executor_lock = threading.Lock()

_PYTHON_VALUES = (bool, int, float, list, tuple)
_NUMPY_DTYPES = {
    core.VarDesc.VarType.BOOL: np.bool_,
    core.VarDesc.VarType.INT8: np.int8,
    core.VarDesc.VarType.INT16: np.int16,
    core.VarDesc.VarType.INT32: np.int32,
    core.VarDesc.VarType.INT64: np.int64,
    core.VarDesc.VarType.UINT8: np.uint8,
    core.VarDesc.VarType.FP16: np.float16,
    core.VarDesc.VarType.FP32: np.float32,
    core.VarDesc.VarType.FP64: np.float64,
}


def _native_executor():
    """The process's chanflow executor, made on first use: its green-thread scheduler and its
    cache of prepared programs serve every ``fluid.Executor``."""
    global _shared_native_executor
    if _shared_native_executor is None:
        with _shared_native_executor_lock:
            if _shared_native_executor is None:
                _shared_native_executor = _native.Executor()
    return _shared_native_executor


_global_scope = core.Scope()


def global_scope():
    """The scope ``Executor.run`` uses when given none: a ``core.Scope`` (parameters and
    optimiser state live there between runs). ``scope_guard`` replaces it for a ``with``
    body."""
    return _global_scope


def _switch_scope(scope):
    global _global_scope
    previous = _global_scope
    _global_scope = scope
    return previous


@contextlib.contextmanager
def scope_guard(scope):
    """Makes ``scope`` (a ``core.Scope``) the global scope for the body of a ``with``."""
    if not isinstance(scope, core.Scope):
        raise TypeError("scope_guard takes a fluid.core.Scope, got %r" % (scope,))
    previous = _switch_scope(scope)
    try:
        yield
    finally:
        _switch_scope(previous)


class Executor(object):
    """Runs programs: ``Executor(place)`` where ``place`` is ``core.CPUPlace()`` (chanflow runs
    on the CPU; None means the same).

    **Persistable variables live in a scope**; everything else lives for one run. A run of a
    program that declares persistable tensor variables in block 0 (parameters, optimiser
    accumulators, learning rates) uses a ``core.Scope`` -- the ``scope`` argument, else
    ``global_scope()`` --: it starts with the scope's values for them and stores them back
    when it ends (also when it fails), so the startup program run once initialises the
    parameters the main program trains. Other variables start unset in every run: a program
    must write them (or they must be fed) before reading them. Channels are never kept (a
    channel closed by one run would stay closed for the next). A scope serves one run at a
    time: runs of programs with persistable tensors from several threads need a scope each.
    """

    def __init__(self, place=None):
        if isinstance(place, core.CUDAPlace):
            raise core.UnavailableError(
                "Executor: %r: chanflow is not compiled with CUDA (core.is_compiled_with_cuda() "
                "is False); run on fluid.CPUPlace()" % (place,)
            )
        if place is not None and not isinstance(place, core.CPUPlace):
            raise TypeError(
                "Executor: chanflow runs on the CPU only; place must be core.CPUPlace(), got %r"
                % (place,)
            )
        self.place = core.CPUPlace() if place is None else place
        self._closed = False

    def close(self):
        """Marks the executor closed: later ``run`` calls raise ``RuntimeError``."""
        self._closed = True

    def run(
        self,
        program=None,
        feed=None,
        fetch_list=None,
        feed_var_name="feed",
        fetch_var_name="fetch",
        scope=None,
        return_numpy=True,
        use_program_cache=False,
        timeout=None,
    ):
        """Runs ``program`` (the default main program when None) and returns the values of
        ``fetch_list`` (block 0 variables, as ``Variable`` objects or names), in order: NumPy
        arrays, or chanflow Tensors (and Channels for channel variables) when ``return_numpy``
        is False.

        ``feed`` maps block 0 variable names (or Variables) to values: anything array-like. A
        Python number or (nested) list takes the variable's declared dtype; an array or tensor
        must have it (else ``chanflow.TypeError`` naming the variable). ``timeout``
        (seconds) stops a run that is still going: ``chanflow.DeadlineExceededError``. A run
        that fails raises chanflow's error naming block, op and problem (``ProgramError``,
        ``DeadlockError`` ...); Ctrl-C cancels a run and raises ``KeyboardInterrupt``.

        The program is converted to chanflow's form once per version, so running it again
        unchanged reuses the conversion and the executor's preparation (``use_program_cache``
        is accepted for Fluid's signature; caching is always on). ``feed_var_name`` and
        ``fetch_var_name`` are Fluid's names for the feed/fetch variables its executor added;
        chanflow feeds and fetches variables directly and ignores them. ``scope``: the
        ``core.Scope`` of the persistable variables (default ``global_scope()``; see the class
        documentation).

        Checked before the run: a fed array whose shape does not match the variable's declared
        shape (-1 matches any extent) raises ``chanflow.ShapeError`` naming the variable.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Executor")
        if scope is not None and not isinstance(scope, core.Scope):
            raise TypeError(
                "Executor.run: scope must be a fluid.core.Scope (or None: the global scope), "
                "got %r" % (scope,)
            )
        if program is None:
            program = framework.default_main_program()
        elif not isinstance(program, framework.Program):
            raise TypeError("Executor.run: program must be a fluid Program, got %r" % (program,))
        native_program = place_parallel.native_program(program)

        fetch = []
        if fetch_list is not None:
            if isinstance(fetch_list, (str, framework.Variable)):
                raise TypeError("Executor.run: fetch_list must be a list of Variables or names")
            for i, item in enumerate(fetch_list):
                fetch.append(_fetch_name(program, item, i))

        feed_dict = None
        if feed:
            if not isinstance(feed, dict):
                raise TypeError(
                    "Executor.run: feed must be a dict of variable name -> value, got %r" % (feed,)
                )
            feed_dict = {}
            block0 = program.global_block()
            for key, value in feed.items():
                name = _feed_name(program, key)
                if isinstance(value, _PYTHON_VALUES):
                    # A Python number or list has no dtype of its own: it takes the declared one.
                    var = block0.vars.get(name)
                    if var is not None and var.dtype in _NUMPY_DTYPES:
                        value = np.asarray(value, dtype=_NUMPY_DTYPES[var.dtype])
                _check_feed_shape(block0.vars.get(name), value)
                feed_dict[name] = value

        native_scope = None
        if _has_persistable_tensors(program):
            native_scope = (global_scope() if scope is None else scope).native
        readers = _py_readers(program)
        channels = {}
        for r in readers:
            channels.update(r._bindings())
        try:
            outs = _native_executor().run(
                native_program, feed=feed_dict, fetch=fetch, timeout=timeout, scope=native_scope,
                channels=channels or None,
            )
        except _native.ChannelClosedError as e:
            # A py_reader's eof channel is always closed: the program sends on it when the pass
            # is over (see layers.io.PyReader). The error names the program variable whose
            # channel was closed.
            for r in readers:
                if e.channel == r.eof_var_name:
                    r._raise_end(e)
            raise
        if return_numpy:
            for i, t in enumerate(outs):
                if isinstance(t, _native.Channel):
                    raise _native.TypeError(
                        "Executor.run: fetch_list[%d] ('%s') is a channel, which has no NumPy "
                        "value; run with return_numpy=False to get it as a chanflow.Channel"
                        % (i, fetch[i])
                    )
            return [t.numpy().copy() for t in outs]
        return list(outs)


def _fetch_name(program, item, index):
    if isinstance(item, framework.Variable):
        # A variable of another program names the same variable of a clone (Fluid's
        # ``main.clone(for_test=True)`` is run with the main program's variables).
        if item.block.program is not program and item.name not in program.global_block().vars:
            raise ValueError(
                "Executor.run: fetch_list[%d] is variable '%s' of another Program"
                % (index, item.name)
            )
        if item.block.idx != 0:
            raise ValueError(
                "Executor.run: fetch_list[%d] is variable '%s' of block %d; only block 0 "
                "variables can be fetched" % (index, item.name, item.block.idx)
            )
        return item.name
    if isinstance(item, str):
        return item
    raise TypeError(
        "Executor.run: fetch_list[%d] must be a Variable or a name, got %r" % (index, item)
    )


def _feed_name(program, key):
    if isinstance(key, framework.Variable):
        if key.block.program is not program and key.name not in program.global_block().vars:
            raise ValueError(
                "Executor.run: feed key '%s' is a variable of another Program" % key.name
            )
        return key.name
    if isinstance(key, str):
        return key
    raise TypeError("Executor.run: feed keys must be variable names or Variables, got %r" % (key,))


def _py_readers(program):
    """The ``layers.py_reader`` readers whose channel variables block 0 of ``program``
    declares, each once."""
    from .layers import io as layers_io

    found = []
    for v in program.global_block().vars.values():
        if v.type == core.VarDesc.VarType.CHANNEL:
            r = layers_io.reader_of_var(v.name)
            if r is not None and r not in found:
                found.append(r)
    return found


def _has_persistable_tensors(program):
    for v in program.global_block().vars.values():
        if v.persistable and v.type == core.VarDesc.VarType.LOD_TENSOR:
            return True
    return False


def _check_feed_shape(var, value):
    """``chanflow.ShapeError`` when ``value``'s shape contradicts ``var``'s declared one."""
    if var is None or not var.shape or var.type != core.VarDesc.VarType.LOD_TENSOR:
        return
    shape = getattr(value, "shape", None)
    if shape is None:
        return
    shape = tuple(shape)
    declared = var.shape
    ok = len(shape) == len(declared) and all(
        d < 0 or d == s for d, s in zip(declared, shape)
    )
    if not ok:
        raise _native.ShapeError(
            "Executor.run: feed '%s' has shape %s; the variable is declared %s (-1: any extent)"
            % (var.name, list(shape), list(declared))
        )
