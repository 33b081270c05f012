"""Fluid's input layers: ``data`` (the variables a program is fed) and ``py_reader`` /
``read_file`` (batches a Python thread sends into the program over chanflow channels)::

    img = fluid.layers.data(name='img', shape=[1, 28, 28])        # declared [-1, 1, 28, 28]
    label = fluid.layers.data(name='label', shape=[1], dtype='int64')

    reader = fluid.layers.py_reader(capacity=8, shapes=[(-1, 784), (-1, 1)],
                                    dtypes=['float32', 'int64'])
    img, label = fluid.layers.read_file(reader)
    reader.decorate_paddle_reader(chanflow.batch(train_reader, 64))
    reader.start()
    try:
        while True:
            exe.run(fetch_list=[loss])      # each run receives one batch
    except fluid.core.EOFException:
        reader.reset()                      # the pass is over; start() begins the next
"""

import threading
import weakref

import numpy as np

from ... import _native
from .. import core
from .. import framework
from .. import unique_name
from ..layer_helper import LayerHelper

__all__ = ["data", "py_reader", "read_file"]

VarType = core.VarDesc.VarType


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


# Readers by the names of their block 0 channel variables: Executor.run binds the channels of the
# readers a program (or a clone of it) declares. Weak: a reader nobody holds is dropped.
_readers_by_var = weakref.WeakValueDictionary()


def reader_of_var(name):
    """The ``PyReader`` whose channel variable is ``name``, or None."""
    return _readers_by_var.get(name)


class PyReader(object):
    """What ``py_reader`` returns: the source of one batch per ``Executor.run``.

    **How batches travel.** One chanflow channel per slot (``capacity`` tensors each) carries
    that slot's tensor of every batch; a producer thread sends a batch's tensors slot by slot
    and the program's ``channel_recv`` ops (added by ``read_file``) receive them in the same
    order, so the i-th tensors of all slots form the i-th batch. A run is the only receiver, so
    slots never interleave. When the provider is exhausted (or raises) the producer closes the
    slot channels; the program then finds the receive's status false and sends on the reader's
    ``eof`` channel, which is always closed: the run fails before any later op runs (nothing is
    trained on the zero values of a closed receive), and ``Executor.run`` raises
    ``core.EOFException`` -- or the provider's own exception, re-raised as is.

    Not thread-safe: start/reset from one thread, between runs.
    """

    def __init__(self, name, shapes, dtypes, lod_levels, capacity):
        self.name = name
        self.shapes = [list(s) for s in shapes]
        self.dtypes = [framework._to_var_type(d, "py_reader: dtypes") for d in dtypes]
        self.lod_levels = list(lod_levels)
        self.capacity = capacity
        self.slot_var_names = ["%s_slot%d" % (name, i) for i in range(len(self.shapes))]
        self.eof_var_name = name + "_eof"
        self._provider = None
        self._thread = None
        self._channels = None
        self._eof = None
        self._stop = None
        self._error = None
        self._exhausted = False
        for n in self.slot_var_names + [self.eof_var_name]:
            _readers_by_var[n] = self

    # -- feeding -----------------------------------------------------------------------------

    def decorate_tensor_provider(self, provider):
        """``provider()`` yields one batch per item: a tuple (or list) of one array-like per
        slot, in the order of ``shapes``."""
        if not callable(provider):
            raise TypeError("py_reader: decorate_tensor_provider takes a callable, got %r"
                            % (provider,))
        self._provider = provider

    def decorate_paddle_reader(self, paddle_reader):
        """``paddle_reader()`` yields batches as Paddle's batched readers do (``chanflow.batch``):
        lists of samples, each a tuple with one field per slot; each slot's fields are stacked
        into a tensor of the slot's shape (its leading -1 taking the batch size)."""
        if not callable(paddle_reader):
            raise TypeError("py_reader: decorate_paddle_reader takes a callable, got %r"
                            % (paddle_reader,))

        def provider():
            for batch in paddle_reader():
                slots = []
                for i, shape in enumerate(self.shapes):
                    arr = np.array([sample[i] for sample in batch],
                                   dtype=_numpy_dtype(self.dtypes[i]))
                    slots.append(arr.reshape([-1] + [int(d) for d in shape[1:]]))
                yield slots

        self._provider = provider

    # -- passes -------------------------------------------------------------------------------

    def start(self):
        """Starts a pass: new channels and a producer thread that runs the provider.
        ``RuntimeError`` when no provider is set or a pass is running (``reset`` first)."""
        if self._provider is None:
            raise RuntimeError("py_reader '%s': start() before decorate_paddle_reader or "
                               "decorate_tensor_provider" % self.name)
        if self._thread is not None:
            raise RuntimeError("py_reader '%s': start() while a pass is running; call reset() "
                               "first" % self.name)
        self._channels = [_native.make_chan(self.capacity, "Tensor") for _ in self.shapes]
        self._eof = _native.make_chan(0, "Tensor")
        self._eof.close()
        self._stop = threading.Event()
        self._error = None
        self._exhausted = False
        self._thread = threading.Thread(target=self._produce, name="py_reader:" + self.name,
                                        daemon=True)
        self._thread.start()

    def reset(self):
        """Ends the pass (exhausted or not): stops and joins the producer thread and drops what
        the channels still buffer. ``start()`` then begins a new pass."""
        if self._thread is None:
            return
        self._stop.set()
        for ch in self._channels:
            try:
                ch.close()
            except _native.ChannelClosedError:
                pass
        self._thread.join()
        self._thread = None
        self._channels = None

    def _produce(self):
        channels = self._channels
        try:
            for batch in self._provider():
                if self._stop.is_set():
                    return
                if len(batch) != len(channels):
                    raise ValueError("py_reader '%s': the provider gave a batch of %d slots; "
                                     "the reader has %d" % (self.name, len(batch), len(channels)))
                for i, (ch, value) in enumerate(zip(channels, batch)):
                    tensor = np.array(_as_array(value), dtype=_numpy_dtype(self.dtypes[i]))
                    if not self._send(ch, tensor):
                        return
        except BaseException as e:  # the provider's error: re-raised by the run that meets it
            if not self._stop.is_set():
                self._error = e
        finally:
            self._exhausted = True
            for ch in channels:
                try:
                    ch.close()
                except _native.ChannelClosedError:
                    pass

    def _send(self, ch, tensor):
        """Sends until it is taken, the reader is reset (False) or the channel closed."""
        while True:
            try:
                ch.send(tensor, timeout=0.5)
                return True
            except (_native.DeadlineExceededError, _native.DeadlockError):
                # Nothing receives yet (the trainer is between runs): wait on unless reset.
                if self._stop.is_set():
                    return False
            except _native.ChannelClosedError:
                return False

    # -- for Executor.run ------------------------------------------------------------------------

    def _bindings(self):
        if self._channels is None:
            raise RuntimeError("py_reader '%s': the program reads from it but it is not started "
                               "(call reader.start() before the run)" % self.name)
        out = dict(zip(self.slot_var_names, self._channels))
        out[self.eof_var_name] = self._eof
        return out

    def _raise_end(self, cause):
        """Raises what a run that met the closed eof channel means: the provider's error, or
        EOFException."""
        if self._error is not None:
            raise self._error
        raise core.EOFException(
            "py_reader '%s': there is no batch left in this pass (call reset() then start() "
            "for the next)" % self.name) from cause


def _as_array(value):
    if isinstance(value, core.LoDTensor):
        return np.array(value)
    return value


def _numpy_dtype(var_type):
    from ..executor import _NUMPY_DTYPES

    return _NUMPY_DTYPES[var_type]


def py_reader(capacity, shapes, dtypes, lod_levels=None, name=None, use_double_buffer=True):
    """Paddle's ``fluid.layers.py_reader``: a reader a Python thread fills with batches,
    ``capacity`` of them buffered (an int >= 1). ``shapes`` (one per slot, the batch extent
    -1), ``dtypes`` and ``lod_levels`` (default 0 each) describe the slots. Returns a
    ``PyReader``; ``read_file(reader)`` gives the slots' variables. ``use_double_buffer`` is
    accepted for Paddle's signature: the channel buffer already overlaps producing and
    training."""
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ValueError("py_reader: capacity must be an int >= 1, got %r" % (capacity,))
    if len(shapes) != len(dtypes):
        raise ValueError("py_reader: %d shapes but %d dtypes" % (len(shapes), len(dtypes)))
    if lod_levels is None:
        lod_levels = [0] * len(shapes)
    if len(lod_levels) != len(shapes):
        raise ValueError("py_reader: %d shapes but %d lod_levels" % (len(shapes), len(lod_levels)))
    if name is None:
        name = unique_name.generate("py_reader")
    reader = PyReader(name, shapes, dtypes, lod_levels, capacity)
    block = framework.default_main_program().global_block()
    for n in reader.slot_var_names + [reader.eof_var_name]:
        block.create_var(name=n, type=VarType.CHANNEL)
    return reader


def read_file(reader):
    """The slot variables of ``reader`` (a list, or the variable when there is one slot),
    received by ops appended to the current block of the main program: each run receives one
    batch, and a run after the pass ended fails as ``EOFException`` before the ops that follow
    (see ``PyReader``)."""
    if not isinstance(reader, PyReader):
        raise TypeError("read_file takes what py_reader returns, got %r" % (reader,))
    from .control_flow import While
    from ..concurrency import channel_recv, channel_send

    helper = LayerHelper("read_file")
    block = helper.main_program.current_block()
    outs = []
    status = None
    for i, shape in enumerate(reader.shapes):
        chan = block.var(reader.slot_var_names[i])
        var = block.create_var(
            name=unique_name.generate("%s_data%d" % (reader.name, i)),
            shape=[int(d) for d in shape],
            dtype=reader.dtypes[i],
            lod_level=reader.lod_levels[i],
            type=VarType.LOD_TENSOR,
        )
        var.stop_gradient = True
        _, s = channel_recv(chan, var)
        if status is None:
            status = s
        outs.append(var)
    ended = block.create_var(name=unique_name.generate("%s_ended" % reader.name),
                             type=VarType.LOD_TENSOR, dtype=VarType.BOOL, shape=[1])
    block.append_op(type="logical_not", inputs={"X": status}, outputs={"Out": ended})
    loop = While(cond=ended)
    with loop.block():
        channel_send(block.var(reader.eof_var_name), status)
    return outs[0] if len(outs) == 1 else outs
