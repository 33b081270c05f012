"""Fluid's weight decay: ``L2Decay(coeff)`` adds ``coeff * param`` to a parameter's gradient
before the optimiser op (a ``scale`` op and a ``sum`` op writing the gradient variable),
``L1Decay(coeff)`` adds ``coeff * sign(param)`` (a ``sign`` op, a ``scale`` op, the ``sum``)::

    fluid.optimizer.SGD(0.1, regularization=fluid.regularizer.L2Decay(1e-4)).minimize(loss)

A parameter's own ``ParamAttr(regularizer=...)`` takes precedence over the optimiser's.
"""

from . import framework

__all__ = [
    "L1Decay",
    "L1DecayRegularizer",
    "L2Decay",
    "L2DecayRegularizer",
    "append_regularization_ops",
]


class WeightDecayRegularizer(object):
    """The base of the regularizers: ``reg(param, grad, block)`` appends the ops computing the
    decay term and returns its variable."""

    def __call__(self, param, grad, block):
        raise NotImplementedError()


class L2DecayRegularizer(WeightDecayRegularizer):
    """``coeff * param``: the gradient of ``coeff / 2 * sum(param ** 2)``."""

    def __init__(self, regularization_coeff=0.0):
        self._regularization_coeff = float(regularization_coeff)

    def __call__(self, param, grad, block):
        decay = block.create_var(
            name=framework.unique_name.generate(param.name + "@L2DECAY"),
            dtype=param.dtype,
            shape=param.shape,
            lod_level=param.lod_level,
        )
        block.append_op(
            type="scale",
            inputs={"X": param},
            outputs={"Out": decay},
            attrs={"scale": self._regularization_coeff},
        )
        return decay

    def __str__(self):
        return "L2Decay, regularization_coeff=%f" % self._regularization_coeff


class L1DecayRegularizer(WeightDecayRegularizer):
    """``coeff * sign(param)``: the (sub)gradient of ``coeff * sum(|param|)``, which pushes
    weights to exactly zero. A ``sign`` op then a ``scale`` op in place on the decay variable."""

    def __init__(self, regularization_coeff=0.0):
        if regularization_coeff is None:
            raise ValueError("L1Decay: regularization_coeff is not set")
        self._regularization_coeff = float(regularization_coeff)

    def __call__(self, param, grad, block):
        decay = block.create_var(
            name=framework.unique_name.generate(param.name + "@L1DECAY"),
            dtype=param.dtype,
            shape=param.shape,
            lod_level=param.lod_level,
        )
        block.append_op(type="sign", inputs={"X": param}, outputs={"Out": decay})
        block.append_op(
            type="scale",
            inputs={"X": decay},
            outputs={"Out": decay},
            attrs={"scale": self._regularization_coeff},
        )
        return decay

    def __str__(self):
        return "L1Decay, regularization_coeff=%f" % self._regularization_coeff


def append_regularization_ops(parameters_and_grads, regularization=None):
    """For each ``(param, grad)`` with a regularizer (the parameter's own, else
    ``regularization``): ``grad = grad + reg(param)`` (a ``sum`` op into the gradient variable).
    Returns the pairs (the gradient variables are the same objects)."""
    out = []
    for param, grad in parameters_and_grads:
        if grad is None:
            out.append((param, grad))
            continue
        reg = getattr(param, "regularizer", None) or regularization
        if reg is None:
            out.append((param, grad))
            continue
        if not isinstance(reg, WeightDecayRegularizer):
            raise TypeError("regularization must be a fluid regularizer, got %r" % (reg,))
        block = grad.block
        with block.program._optimized_guard([param, grad]):
            term = reg(param, grad, block)
            block.append_op(type="sum", inputs={"X": [grad, term]}, outputs={"Out": grad})
        out.append((param, grad))
    return out


L2Decay = L2DecayRegularizer
L1Decay = L1DecayRegularizer
