"""Fluid's tensor layers: ``fill_constant``, ``zeros``, ``ones``, ``assign``, ``cast``,
``concat``, ``sums``, ``create_tensor``, ``create_global_var``, ``create_parameter``.

``dtype`` arguments take a ``core.VarDesc.VarType`` or a NumPy-style name, converted as Fluid's
``convert_np_dtype_to_dtype_`` did: ``'int'`` is INT64 (NumPy's ``int`` on Linux), ``'float32'``
FP32, ``'bool'`` BOOL.
"""

import numbers

from .. import framework
from ..initializer import Constant
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr

__all__ = [
    "fill_constant",
    "zeros",
    "ones",
    "assign",
    "cast",
    "concat",
    "sums",
    "create_tensor",
    "create_global_var",
    "create_parameter",
]


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


def cast(x, dtype):
    """``x`` converted to element type ``dtype``."""
    if not isinstance(x, framework.Variable):
        raise TypeError("cast: x must be a Variable, got %r" % (x,))
    helper = LayerHelper("cast", **locals())
    out = helper.create_tmp_variable(dtype=dtype, shape=x.shape)
    helper.append_op(
        type="cast",
        inputs={"X": [x]},
        outputs={"Out": [out]},
        attrs={"in_dtype": x.dtype, "out_dtype": out.dtype},
    )
    return out


def concat(input, axis=0, name=None):
    """The variables of ``input`` (a list) joined along ``axis``."""
    if isinstance(input, framework.Variable) or not input:
        raise TypeError("concat: input must be a non-empty list of Variables, got %r" % (input,))
    helper = LayerHelper("concat", **locals())
    first = input[0]
    shape = list(first.shape)
    if shape:
        a = axis + len(shape) if axis < 0 else axis
        sizes = [v.shape[a] if len(v.shape) > a else -1 for v in input]
        shape[a] = -1 if any(d < 0 for d in sizes) else sum(sizes)
    out = helper.create_tmp_variable(dtype=helper.input_dtype(), shape=shape or None)
    helper.append_op(
        type="concat", inputs={"X": list(input)}, outputs={"Out": [out]}, attrs={"axis": axis}
    )
    return out


def sums(input, out=None):
    """The elementwise sum of the variables of ``input`` (a ``sum`` op), into ``out`` when
    given."""
    if isinstance(input, framework.Variable):
        input = [input]
    helper = LayerHelper("sum", **locals())
    if out is None:
        out = helper.create_tmp_variable(dtype=helper.input_dtype(), shape=input[0].shape)
    helper.append_op(type="sum", inputs={"X": list(input)}, outputs={"Out": out})
    return out


def create_tensor(dtype, name=None, persistable=False):
    """A new tensor variable of element type ``dtype`` (nothing writes it)."""
    helper = LayerHelper("create_tensor", **locals())
    return helper.create_variable(
        name=helper.name, dtype=dtype, persistable=persistable
    )


def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    """A block 0 variable of ``shape`` holding ``value``.

    Persistable (what optimisers use for the learning rate): initialised by a ``fill_constant``
    in the startup program and kept in the scope from run to run. Not persistable: a variable
    lives for one run in chanflow, so the ``fill_constant`` goes to the front of the main
    program's block 0 and the value is set anew at the start of every run."""
    helper = LayerHelper("global_var", **locals())
    var = helper.create_global_variable(
        dtype=dtype,
        shape=shape,
        persistable=persistable,
        name=name if name is not None else framework.unique_name.generate("global_var"),
    )
    var.stop_gradient = True
    initializer = Constant(value=float(value), force_cpu=force_cpu)
    if persistable:
        helper.set_variable_initializer(var, initializer)
    else:
        block = helper.main_program.global_block()
        op = initializer(var, block)
        block.ops.remove(op)
        block.ops.insert(0, op)
    return var


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    """A parameter of ``shape`` and ``dtype`` as a layer makes it (``attr`` a ParamAttr)."""
    helper = LayerHelper("create_parameter", **locals())
    if attr is None:
        attr = ParamAttr(name=name)
    return helper.create_parameter(attr, shape, dtype, is_bias, default_initializer)
