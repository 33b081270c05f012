"""Fluid's elementwise layers: ``elementwise_add``, ``elementwise_sub``, ``elementwise_mul``,
``elementwise_div``.

``elementwise_<op>(x, y, axis=-1, use_mkldnn=False, act=None, name=None)``: ``x <op> y`` with
NumPy broadcasting (and Fluid's ``axis``: where ``y``'s dimensions line up in ``x``'s) into a new
variable of ``x``'s dtype (named ``name`` when given), then the activation ``act`` (an op type
such as ``'relu'``, or a dict with its ``type`` and attributes) when given.
"""

from .. import framework
from ..layer_helper import LayerHelper

__all__ = ["elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div"]


def _elementwise_op(op_type, x, y, axis, use_mkldnn, act, name):
    for arg, value in (("x", x), ("y", y)):
        if not isinstance(value, framework.Variable):
            raise TypeError("%s: %s must be a Variable, got %r" % (op_type, arg, value))
    helper = LayerHelper(op_type, name=name, act=act)
    if name is None:
        # Fluid's 2018 layer: a temporary "<op>_<n>.tmp_<m>".
        out = helper.create_tmp_variable(dtype=x.dtype, shape=x.shape)
    else:
        out = helper.create_variable(name=name, dtype=x.dtype, shape=x.shape, persistable=False)
    helper.append_op(
        type=op_type,
        inputs={"X": x, "Y": y},
        outputs={"Out": out},
        attrs={"axis": axis, "use_mkldnn": use_mkldnn},
    )
    return _append_activation(helper, out)


def _append_activation(helper, input_var):
    act = helper.kwargs.get("act", None)
    if act is None:
        return input_var
    if isinstance(act, str):
        act = {"type": act}
    elif not isinstance(act, dict) or "type" not in act:
        raise TypeError(
            "%s: act must be an op type (str) or a dict with a 'type', got %r"
            % (helper.layer_type, act)
        )
    act = dict(act)
    act_type = act.pop("type")
    tmp = helper.create_tmp_variable(dtype=input_var.dtype, shape=input_var.shape)
    helper.append_op(type=act_type, inputs={"X": [input_var]}, outputs={"Out": [tmp]}, attrs=act)
    return tmp


def elementwise_add(x, y, axis=-1, use_mkldnn=False, act=None, name=None):
    """``x + y``."""
    return _elementwise_op("elementwise_add", x, y, axis, use_mkldnn, act, name)


def elementwise_sub(x, y, axis=-1, use_mkldnn=False, act=None, name=None):
    """``x - y``."""
    return _elementwise_op("elementwise_sub", x, y, axis, use_mkldnn, act, name)


def elementwise_mul(x, y, axis=-1, use_mkldnn=False, act=None, name=None):
    """``x * y``."""
    return _elementwise_op("elementwise_mul", x, y, axis, use_mkldnn, act, name)


def elementwise_div(x, y, axis=-1, use_mkldnn=False, act=None, name=None):
    """``x / y`` (integers: truncated toward zero; a zero divisor is an error when run)."""
    return _elementwise_op("elementwise_div", x, y, axis, use_mkldnn, act, name)
