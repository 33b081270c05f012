"""Fluid's ``Executor``: runs a ``fluid.Program`` on chanflow's executor and returns the fetched
variables as NumPy arrays.

::

    exe = fluid.Executor(fluid.CPUPlace())
    out, = exe.run(program, feed={'x': np.ones(3)}, fetch_list=[y])
"""

import threading

import numpy as np

from .. import _native
from . import core
from . import framework

__all__ = ["Executor", "global_scope"]

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


def global_scope():
    """Fluid's global scope does not exist in chanflow: see ``Executor`` (variables do not
    outlive a run)."""
    raise NotImplementedError(
        "chanflow.fluid has no global scope: every Executor.run starts from fresh variables "
        "(fetch a value and feed it to the next run to carry it over)"
    )


class Executor(object):
    """Runs programs: ``Executor(place)`` where ``place`` is ``core.CPUPlace()`` (chanflow runs
    on the CPU; None means the same).

    **Variables live for one run.** Fluid's executor kept every variable in a global scope
    across runs, so a persistable variable (or any variable of block 0) kept its value from one
    ``run`` to the next, and a startup program run once initialised them for later runs.
    chanflow does not emulate that: each ``run`` starts with every variable unset, runs the
    whole program, and returns what ``fetch_list`` names; ``persistable`` is kept in the
    program (and its text and binary forms) but carries nothing between runs. Programs that
    write their variables before reading them -- every program Fluid's concurrency layers and
    tests build, which create their channels and values with ``channel_create`` and
    ``fill_constant`` -- give Fluid's results. To carry a value from one run to the next, fetch
    it and feed it back (``feed={'name': value}``). The reason: emulating the scope would mean
    fetching and feeding every persistable variable on every run, and channels (persistable in
    Fluid's ``make_channel``) cannot be carried at all -- a channel closed by one run would
    stay closed for the next.
    """

    def __init__(self, place=None):
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
        chanflow feeds and fetches variables directly and ignores them. ``scope`` must be None
        (there is no global scope: see the class documentation).
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Executor")
        if scope is not None:
            raise NotImplementedError(
                "Executor.run: chanflow.fluid has no scopes (every run starts from fresh "
                "variables); pass scope=None"
            )
        if program is None:
            program = framework.default_main_program()
        elif not isinstance(program, framework.Program):
            raise TypeError("Executor.run: program must be a fluid Program, got %r" % (program,))
        native_program = program._native_program()

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
                feed_dict[name] = value

        outs = _native_executor().run(native_program, feed=feed_dict, fetch=fetch, timeout=timeout)
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
        if item.block.program is not program:
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
        if key.block.program is not program:
            raise ValueError(
                "Executor.run: feed key '%s' is a variable of another Program" % key.name
            )
        return key.name
    if isinstance(key, str):
        return key
    raise TypeError("Executor.run: feed keys must be variable names or Variables, got %r" % (key,))
