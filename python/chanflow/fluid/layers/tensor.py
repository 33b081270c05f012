"""Fluid's tensor layers: ``fill_constant``, ``zeros``, ``ones``, ``assign``.

``dtype`` arguments take a ``core.VarDesc.VarType`` or a NumPy-style name, converted as Fluid's
``convert_np_dtype_to_dtype_`` did: ``'int'`` is INT64 (NumPy's ``int`` on Linux), ``'float32'``
FP32, ``'bool'`` BOOL.
"""

import numbers

from .. import framework
from ..layer_helper import LayerHelper

__all__ = ["fill_constant", "zeros", "ones", "assign"]


def fill_constant(shape, dtype, value, force_cpu=False, out=None):
    """A tensor of ``shape`` filled with ``value``, of element type ``dtype``, written into
    ``out`` when given (then ``out``'s declared dtype is the one used, as in Fluid) or into a
    new variable. ``value`` is written as Fluid's FLOAT attribute (float32). Returns the
    variable written; its ``stop_gradient`` is True."""
    try:
        shape = [int(d) for d in shape]
    except (TypeError, ValueError):
        raise TypeError("fill_constant: shape must be a list of ints, got %r" % (shape,))
    if not isinstance(value, numbers.Real):
        raise TypeError("fill_constant: value must be a number, got %r" % (value,))
    helper = LayerHelper("fill_constant", **locals())
    if out is None:
        out = helper.create_tmp_variable(dtype=dtype, shape=shape)
    else:
        if not isinstance(out, framework.Variable):
            raise TypeError("fill_constant: out must be a Variable, got %r" % (out,))
        if out.dtype is None:
            raise ValueError("fill_constant: out variable '%s' declares no dtype" % out.name)
    helper.append_op(
        type="fill_constant",
        inputs={},
        outputs={"Out": [out]},
        attrs={
            "shape": shape,
            "dtype": out.dtype,
            "value": float(value),
            "force_cpu": force_cpu,
        },
    )
    out.stop_gradient = True
    return out


def ones(shape, dtype, force_cpu=False):
    """``fill_constant(shape, dtype, 1.0)``."""
    return fill_constant(value=1.0, shape=shape, dtype=dtype, force_cpu=force_cpu)


def zeros(shape, dtype, force_cpu=False):
    """``fill_constant(shape, dtype, 0.0)``."""
    return fill_constant(value=0.0, shape=shape, dtype=dtype, force_cpu=force_cpu)


def assign(input, output=None):
    """Copies variable ``input`` into ``output`` (a new variable like ``input`` when None);
    returns ``output``. Tensors are copied by value; a channel variable's handle is copied (both
    name one channel).

    Fluid also took a NumPy array, which it wrote as an ``assign_value`` op; chanflow has no such
    op: feed the array instead (``Executor.run(feed=...)``)."""
    helper = LayerHelper("assign", **locals())
    if not isinstance(input, framework.Variable):
        kind = type(input).__name__
        raise TypeError(
            "assign: input must be a Variable, got %s (Fluid wrote a NumPy input as an "
            "'assign_value' op, which chanflow does not have: feed the array instead)" % kind
        )
    if output is None:
        if input.type == framework.VarType.LOD_TENSOR:
            output = helper.create_tmp_variable(dtype=input.dtype, shape=input.shape)
        else:  # a channel: the copy is a variable of the same kind
            output = helper.create_variable(
                name=framework.unique_name.generate(helper.name + ".tmp"),
                type=input.type,
                dtype=input.dtype,
            )
    elif not isinstance(output, framework.Variable):
        raise TypeError("assign: output must be a Variable, got %r" % (output,))
    helper.append_op(type="assign", inputs={"X": [input]}, outputs={"Out": [output]})
    return output
