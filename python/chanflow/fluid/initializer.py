"""Fluid's initializers: how a parameter gets its first value. Each is a callable
``init(var, block)`` that appends one op writing ``var`` to ``block`` (the startup program's
block 0 when a layer creates the parameter)::

    w = fluid.layers.fc(x, size=10,
                        param_attr=fluid.ParamAttr(initializer=fluid.initializer.Normal(0., .01)))

``Constant`` writes a ``fill_constant`` op, ``Uniform`` a ``uniform_random``, ``Normal`` a
``gaussian_random``; ``Xavier`` and ``MSRA`` one of the random ops with the bound or standard
deviation computed from the variable's fans (``fan_in``, ``fan_out``: for a 2-D ``[in, out]``
weight its two dims; for a convolution filter ``[out_c, in_c, k...]`` ``in_c * prod(k)`` and
``out_c * prod(k)``). A ``seed`` of 0 takes the program's ``random_seed`` (0 as well: a
different draw on every run).
"""

import math

from . import framework

__all__ = [
    "Constant",
    "Uniform",
    "Normal",
    "Xavier",
    "MSRA",
    "ConstantInitializer",
    "UniformInitializer",
    "NormalInitializer",
    "XavierInitializer",
    "MSRAInitializer",
    "force_init_on_cpu",
    "init_on_cpu",
]

_force_init_on_cpu_ = False


def force_init_on_cpu():
    """Fluid's flag for initialising on the CPU; chanflow runs on the CPU, so always False."""
    return _force_init_on_cpu_


class init_on_cpu(object):
    """Fluid's ``with init_on_cpu():``; no effect (chanflow runs on the CPU)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Initializer(object):
    """The base of the initializers: ``init(var, block)`` appends the op writing ``var``."""

    def __call__(self, var, block):
        raise NotImplementedError()

    def _check(self, var, block):
        if not isinstance(var, framework.Variable):
            raise TypeError("%s: var must be a Variable, got %r" % (type(self).__name__, var))
        if not isinstance(block, framework.Block):
            raise TypeError("%s: block must be a Block, got %r" % (type(self).__name__, block))
        if any(d < 0 for d in var.shape):
            raise ValueError(
                "%s: variable '%s' has shape %s; an initializer needs every dimension"
                % (type(self).__name__, var.name, list(var.shape))
            )

    def _seed_of(self, block):
        return self._seed if self._seed != 0 else block.program.random_seed

    @staticmethod
    def _compute_fans(var):
        shape = var.shape
        if len(shape) == 0:
            return 1, 1
        if len(shape) == 1:
            return shape[0], shape[0]
        if len(shape) == 2:
            return shape[0], shape[1]
        receptive = 1
        for d in shape[2:]:
            receptive *= d
        return shape[1] * receptive, shape[0] * receptive

    def _random(self, var, block, uniform, bound):
        """A ``uniform_random`` on [-bound, bound] or a ``gaussian_random`` of std ``bound``."""
        if uniform:
            return block.append_op(
                type="uniform_random",
                outputs={"Out": var},
                attrs={
                    "shape": list(var.shape),
                    "dtype": int(var.dtype),
                    "min": -float(bound),
                    "max": float(bound),
                    "seed": self._seed_of(block),
                },
            )
        return block.append_op(
            type="gaussian_random",
            outputs={"Out": var},
            attrs={
                "shape": list(var.shape),
                "dtype": int(var.dtype),
                "mean": 0.0,
                "std": float(bound),
                "seed": self._seed_of(block),
            },
        )


class ConstantInitializer(Initializer):
    """Every element ``value``: a ``fill_constant`` op."""

    def __init__(self, value=0.0, force_cpu=False):
        self._value = float(value)
        self._force_cpu = force_cpu

    def __call__(self, var, block):
        self._check(var, block)
        return block.append_op(
            type="fill_constant",
            outputs={"Out": var},
            attrs={
                "shape": list(var.shape),
                "dtype": int(var.dtype),
                "value": self._value,
                "force_cpu": self._force_cpu or force_init_on_cpu(),
            },
        )


class UniformInitializer(Initializer):
    """Uniform on ``[low, high]``: a ``uniform_random`` op."""

    def __init__(self, low=-1.0, high=1.0, seed=0):
        if low > high:
            raise ValueError("Uniform: low (%s) must not exceed high (%s)" % (low, high))
        self._low = float(low)
        self._high = float(high)
        self._seed = int(seed)

    def __call__(self, var, block):
        self._check(var, block)
        return block.append_op(
            type="uniform_random",
            outputs={"Out": var},
            attrs={
                "shape": list(var.shape),
                "dtype": int(var.dtype),
                "min": self._low,
                "max": self._high,
                "seed": self._seed_of(block),
            },
        )


class NormalInitializer(Initializer):
    """Normal of mean ``loc`` and standard deviation ``scale``: a ``gaussian_random`` op."""

    def __init__(self, loc=0.0, scale=1.0, seed=0):
        if scale < 0:
            raise ValueError("Normal: scale (%s) must not be negative" % scale)
        self._mean = float(loc)
        self._std_dev = float(scale)
        self._seed = int(seed)

    def __call__(self, var, block):
        self._check(var, block)
        return block.append_op(
            type="gaussian_random",
            outputs={"Out": var},
            attrs={
                "shape": list(var.shape),
                "dtype": int(var.dtype),
                "mean": self._mean,
                "std": self._std_dev,
                "seed": self._seed_of(block),
            },
        )


class XavierInitializer(Initializer):
    """Glorot's initialisation: uniform on ``[-sqrt(6 / (fan_in + fan_out)), +...]``, or normal
    of std ``sqrt(2 / (fan_in + fan_out))``; the fans are the variable's unless given."""

    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0):
        self._uniform = uniform
        self._fan_in = fan_in
        self._fan_out = fan_out
        self._seed = int(seed)

    def __call__(self, var, block):
        self._check(var, block)
        f_in, f_out = self._compute_fans(var)
        fan_in = f_in if self._fan_in is None else self._fan_in
        fan_out = f_out if self._fan_out is None else self._fan_out
        if self._uniform:
            return self._random(var, block, True, math.sqrt(6.0 / (fan_in + fan_out)))
        return self._random(var, block, False, math.sqrt(2.0 / (fan_in + fan_out)))


class MSRAInitializer(Initializer):
    """He's initialisation: uniform on ``[-sqrt(6 / fan_in), +...]``, or normal of std
    ``sqrt(2 / fan_in)``."""

    def __init__(self, uniform=True, fan_in=None, seed=0):
        self._uniform = uniform
        self._fan_in = fan_in
        self._seed = int(seed)

    def __call__(self, var, block):
        self._check(var, block)
        f_in, _ = self._compute_fans(var)
        fan_in = f_in if self._fan_in is None else self._fan_in
        if self._uniform:
            return self._random(var, block, True, math.sqrt(6.0 / fan_in))
        return self._random(var, block, False, math.sqrt(2.0 / fan_in))


Constant = ConstantInitializer
Uniform = UniformInitializer
Normal = NormalInitializer
Xavier = XavierInitializer
MSRA = MSRAInitializer
