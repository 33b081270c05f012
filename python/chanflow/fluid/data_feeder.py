"""``DataFeeder``: turns a mini-batch of samples (what ``chanflow.batch`` gives) into the feed
dictionary of ``Executor.run``, by the feed variables' names, dtypes and shapes (Fluid's
``fluid.DataFeeder``)::

    import chanflow
    import chanflow.fluid as fluid
    from chanflow.dataset import fashion_mnist

    block = fluid.default_main_program().global_block()
    image = block.create_var(name="image", shape=[-1, 784], dtype="float32")
    label = block.create_var(name="label", shape=[-1, 1], dtype="int64")
    feeder = fluid.DataFeeder(feed_list=[image, label], place=fluid.CPUPlace())
    for minibatch in chanflow.batch(fashion_mnist.train(), 64)():
        feed = feeder.feed(minibatch)   # {'image': float32 (64, 784), 'label': int64 (64, 1)}

Each sample is a tuple or list with one field per feed variable, in ``feed_list``'s order. The
fields of a variable are stacked into one array of its dtype; a declared shape with one ``-1``
(Fluid's batch dimension) is then reshaped to it, so scalar labels become ``(N, 1)``. A shape
without ``-1`` must hold the whole batch; with several ``-1`` the stacked array is kept as it is
when its known dimensions agree.
"""

import numpy as np

from chanflow import _native

from . import core
from .executor import _NUMPY_DTYPES
from .framework import Variable, default_main_program

__all__ = ["DataFeeder"]


class DataFeeder(object):
    """Converts mini-batches for the variables of ``feed_list`` (``Variable``s, or names of
    variables of ``program``'s global block; ``program`` defaults to the default main program).
    ``place`` is kept for Fluid's API: chanflow feeds the CPU.

    Errors, when constructed: a name the program does not declare is ``ValueError``; an entry
    that is neither a name nor a ``Variable`` is ``TypeError``; a variable without a tensor
    dtype, or with a ``lod_level`` above 0 (sequences are not supported), is ``ValueError``
    naming it.
    """

    def __init__(self, feed_list, place, program=None):
        if program is None:
            program = default_main_program()
        self.feed_names = []
        self.feed_dtypes = []
        self.feed_shapes = []
        self.feed_lod_level = []
        for i, var in enumerate(feed_list):
            if isinstance(var, str):
                var = program.global_block().var(var)
            if not isinstance(var, Variable):
                raise TypeError(
                    "DataFeeder: feed_list[%d] must be a Variable or a variable name, got %r"
                    % (i, var)
                )
            if var.dtype not in _NUMPY_DTYPES:
                raise ValueError(
                    "DataFeeder: variable '%s' has no tensor dtype (%r)" % (var.name, var.dtype)
                )
            if var.lod_level != 0:
                raise ValueError(
                    "DataFeeder: variable '%s' has lod_level %d; only lod_level 0 is supported"
                    % (var.name, var.lod_level)
                )
            self.feed_names.append(var.name)
            self.feed_dtypes.append(var.dtype)
            self.feed_shapes.append(tuple(var.shape))
            self.feed_lod_level.append(var.lod_level)
        self.place = place if place is not None else core.CPUPlace()

    def _describe(self, i):
        return "variable '%s' (%s, shape %s)" % (
            self.feed_names[i],
            np.dtype(_NUMPY_DTYPES[self.feed_dtypes[i]]).name,
            self.feed_shapes[i],
        )

    def feed(self, iterable):
        """``{name: numpy array}`` for a mini-batch: an iterable of samples, each a tuple or list
        with one field per feed variable.

        Errors: a sample with another number of fields is ``chanflow.ShapeError`` naming the
        sample's index and the variables; fields that do not convert to a variable's dtype
        (text for a number, ragged lists, a non-integral float for an integer variable) are
        ``chanflow.TypeError`` naming the variable; a stacked array that does not fit the
        declared shape is ``chanflow.ShapeError`` naming the variable and both shapes.
        """
        n_fields = len(self.feed_names)
        slots = [[] for _ in range(n_fields)]
        for k, sample in enumerate(iterable):
            try:
                got = len(sample)
            except TypeError:
                got = None
            if isinstance(sample, (str, bytes)) or got != n_fields:
                raise _native.ShapeError(
                    "DataFeeder: sample %d has %s field(s); feed_list has %d (%s)"
                    % (
                        k,
                        "no" if got is None else got,
                        n_fields,
                        ", ".join(self.feed_names),
                    )
                )
            for slot, field in zip(slots, sample):
                slot.append(field)
        return {self.feed_names[i]: self._convert(i, slots[i]) for i in range(n_fields)}

    def _convert(self, i, values):
        dtype = np.dtype(_NUMPY_DTYPES[self.feed_dtypes[i]])
        try:
            if dtype.kind in "biu":
                raw = np.asarray(values)
                if raw.dtype.kind == "f" and not np.all(np.isfinite(raw) & (raw == np.round(raw))):
                    bad = raw[~(np.isfinite(raw) & (raw == np.round(raw)))].flat[0]
                    raise ValueError("%r is not an integer" % (bad,))
                if raw.dtype.kind not in "biuf":
                    raise ValueError("values of kind %s" % raw.dtype)
                arr = raw.astype(dtype)
            else:
                arr = np.asarray(values, dtype=dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise _native.TypeError(
                "DataFeeder: %s: the fields do not convert: %s" % (self._describe(i), e)
            )
        shape = self.feed_shapes[i]
        if not shape:
            return arr
        unknown = sum(1 for d in shape if d < 0)
        if unknown <= 1:
            try:
                out = arr.reshape(shape)
            except ValueError:
                out = None
            # A batch dimension that took up part of the fields is a misfit too.
            if out is not None and (shape[0] >= 0 or out.shape[0] == len(values)):
                return out
        elif arr.ndim == len(shape) and all(d < 0 or d == a for d, a in zip(shape, arr.shape)):
            return arr
        raise _native.ShapeError(
            "DataFeeder: %s: a batch of shape %s does not fit" % (self._describe(i), arr.shape)
        )
