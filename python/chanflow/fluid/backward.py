"""Fluid's ``append_backward``: the gradient ops of a loss, appended to its program::

    loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
    params_grads = fluid.backward.append_backward(loss)     # [(fc_0.w_0, fc_0.w_0@GRAD), ...]

The gradient ops are those of the op table's gradient rules (docs/ops.md), emitted by chanflow's
native ``append_backward`` on the program's block 0 and brought back into the Python program
(its variables and ops), so the layers and optimiser ops appended afterwards see the
``x@GRAD`` variables. Backward ops carry ``op_role`` Backward (the loss gradient's
``fill_constant`` Backward|Loss).
"""

from .. import _native
from . import framework

__all__ = ["append_backward"]


def _names(items, what):
    out = []
    for item in items:
        if isinstance(item, framework.Variable):
            out.append(item.name)
        elif isinstance(item, str):
            out.append(item)
        else:
            raise TypeError("append_backward: %s takes Variables or names, got %r" % (what, item))
    return out


def append_backward(loss, parameter_list=None, no_grad_set=None, callbacks=None):
    """Appends the ops computing the gradients of ``loss`` (a one-element variable of block 0)
    to its program and returns ``[(parameter, gradient)]`` (Variables) for the parameters in
    ``parameter_list`` (names or Variables; default: every trainable parameter) that ``loss``
    depends on.

    No gradient flows through a variable in ``no_grad_set`` or whose ``stop_gradient`` is True
    (data layers, non-trainable parameters). Errors: ``ValueError`` for a loss of another block,
    ``chanflow.ProgramError`` (from the native pass) naming an op that has no gradient on the
    way to the loss (e.g. a ``while``)."""
    if not isinstance(loss, framework.Variable):
        raise TypeError("append_backward: loss must be a Variable, got %r" % (loss,))
    if callbacks is not None:
        raise ValueError("append_backward: callbacks (error clipping) are not supported")
    program = loss.block.program
    if loss.block.idx != 0:
        raise ValueError(
            "append_backward: loss '%s' is a variable of block %d; it must be of block 0"
            % (loss.name, loss.block.idx)
        )
    block = program.global_block()
    if parameter_list is None:
        params = [p.name for p in block.all_parameters() if p.trainable]
    else:
        params = _names(parameter_list, "parameter_list")
    no_grad = set(_names(no_grad_set or (), "no_grad_set"))
    for v in block.vars.values():
        if v.stop_gradient or (isinstance(v, framework.Parameter) and not v.trainable):
            no_grad.add(v.name)
    no_grad.discard(loss.name)
    params = [p for p in params if p not in no_grad]
    if not params:
        return []
    first_new = len(block.ops)
    native, pairs = _native.append_backward(
        program._native_program(), loss.name, params, sorted(no_grad)
    )
    block._import_native(native.blocks[0], first_new)
    return [(block.var(p), block.var(g)) for p, g in pairs]
