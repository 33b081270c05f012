"""Fluid's ``LayerHelper``: what a layer function uses to name itself, make its temporaries and
append its ops to the current block of the default main program.

``LayerHelper("fill_constant")`` takes the next name for its layer type
(``unique_name.generate``: ``fill_constant_3``) unless ``name=`` is given; its temporaries are
``"<name>.tmp_<m>"`` (``fill_constant_3.tmp_0``), its parameters ``"<name>.w_<m>"`` and
``"<name>.b_<m>"`` (``fc_0.w_0``): declared in block 0 of the main program and of the startup
program, which also gets the parameter's initializer op.
"""

import copy

from . import framework
from . import unique_name
from .param_attr import ParamAttr

__all__ = ["LayerHelper"]


class LayerHelper(object):
    """Builds one layer: ``LayerHelper(layer_type, name=None, **kwargs)``."""

    def __init__(self, layer_type, **kwargs):
        self.kwargs = kwargs
        self.layer_type = layer_type
        name = self.kwargs.get("name", None)
        if name is None:
            self.kwargs["name"] = unique_name.generate(self.layer_type)

    @property
    def name(self):
        return self.kwargs["name"]

    @property
    def main_program(self):
        return framework.default_main_program()

    @property
    def startup_program(self):
        return framework.default_startup_program()

    def append_op(self, *args, **kwargs):
        """``Block.append_op`` on the current block of the main program."""
        return self.main_program.current_block().append_op(*args, **kwargs)

    def create_tmp_variable(self, dtype, stop_gradient=False, shape=None):
        """A new non-persistable LOD_TENSOR variable ``"<name>.tmp_<m>"`` in the current block.

        ``shape`` is what Fluid's compile-time shape inference (``infer_shape``, run when the
        op writing the variable was appended) declared for it; layers pass it."""
        return self.main_program.current_block().create_var(
            name=unique_name.generate(".".join([self.name, "tmp"])),
            dtype=dtype,
            shape=shape,
            persistable=False,
            stop_gradient=stop_gradient,
        )

    # Fluid's later name for the same thing.
    create_variable_for_type_inference = create_tmp_variable

    def create_variable(self, *args, **kwargs):
        """``Block.create_var`` in the current block."""
        return self.main_program.current_block().create_var(*args, **kwargs)

    def create_global_variable(self, persistable=False, *args, **kwargs):
        """``Block.create_var`` in block 0 of the main program."""
        return self.main_program.global_block().create_var(*args, persistable=persistable, **kwargs)

    def input(self, input_param_name="input"):
        inputs = self.kwargs.get(input_param_name, [])
        if isinstance(inputs, framework.Variable):
            return [inputs]
        return list(inputs)

    def input_dtype(self, input_param_name="input"):
        """The dtype shared by the layer's inputs; ``ValueError`` when they differ."""
        dtype = None
        for each in self.input(input_param_name):
            if dtype is None:
                dtype = each.dtype
            elif dtype != each.dtype:
                raise ValueError("Data Type mismatch: %s to %s" % (dtype, each.dtype))
        return dtype

    @property
    def param_attr(self):
        return ParamAttr._to_attr(self.kwargs.get("param_attr", None))

    @property
    def bias_attr(self):
        return ParamAttr._to_attr(self.kwargs.get("bias_attr", None))

    def multiple_param_attr(self, length):
        """The layer's ``param_attr`` once per input (a list of that length, or one attribute
        copied)."""
        attr = self.param_attr
        if isinstance(attr, ParamAttr):
            attr = [attr]
        if len(attr) != 1 and len(attr) != length:
            raise ValueError(
                "%s: %d param_attr for %d inputs" % (self.layer_type, len(attr), length)
            )
        if len(attr) == 1 and length != 1:
            attr = [attr[0]] + [copy.deepcopy(attr[0]) for _ in range(length - 1)]
        return attr

    def iter_inputs_and_params(self, input_param_name="input"):
        inputs = self.input(input_param_name)
        for pair in zip(inputs, self.multiple_param_attr(len(inputs))):
            yield pair

    def create_parameter(self, attr, shape, dtype, is_bias=False, default_initializer=None):
        """A parameter ``attr`` describes (False: None), declared in block 0 of the main program
        and of the startup program, whose block 0 gets the initializer op (``attr``'s, else
        ``default_initializer``, else Xavier for a weight and Constant(0) for a bias)."""
        if attr is False:
            return None
        attr = copy.copy(ParamAttr._to_attr(attr))
        if default_initializer is None:
            if is_bias:
                attr._set_default_bias_initializer()
            else:
                attr._set_default_param_initializer()
        else:
            attr._set_default_initializer(default_initializer)
        if attr.name is None:
            suffix = "b" if is_bias else "w"
            attr.name = unique_name.generate(".".join([self.name, suffix]))
        shape = [int(d) for d in shape]
        self.startup_program.global_block().create_parameter(
            dtype=dtype, shape=shape, **attr._to_kwargs(with_initializer=True)
        )
        return self.main_program.global_block().create_parameter(
            dtype=dtype, shape=shape, **attr._to_kwargs()
        )

    def set_variable_initializer(self, var, initializer):
        """Declares ``var`` (persistable) in the startup program's block 0 and appends
        ``initializer``'s op there."""
        startup = self.startup_program.global_block().create_var(
            name=var.name,
            type=var.type,
            dtype=var.dtype,
            shape=var.shape,
            persistable=True,
        )
        initializer(startup, self.startup_program.global_block())
        return startup

    def append_bias_op(self, input_var, dim_start=1, dim_end=None):
        """``input_var + b`` (``elementwise_add`` with ``axis=dim_start``), ``b`` a parameter of
        shape ``input_var.shape[dim_start:dim_end]``; ``input_var`` itself when ``bias_attr`` is
        False."""
        size = list(input_var.shape[dim_start:dim_end])
        bias_attr = self.bias_attr
        if not bias_attr:
            return input_var
        b = self.create_parameter(attr=bias_attr, shape=size, dtype=input_var.dtype, is_bias=True)
        tmp = self.create_tmp_variable(dtype=input_var.dtype, shape=input_var.shape)
        self.append_op(
            type="elementwise_add",
            inputs={"X": [input_var], "Y": [b]},
            outputs={"Out": [tmp]},
            attrs={"axis": dim_start},
        )
        return tmp

    def append_activation(self, input_var):
        """The layer's ``act`` (an op type such as ``'relu'``, or a dict with its ``type`` and
        attributes) applied to ``input_var``; ``input_var`` when there is none."""
        act = self.kwargs.get("act", None)
        if act is None:
            return input_var
        if isinstance(act, str):
            act = {"type": act}
        elif not isinstance(act, dict) or "type" not in act:
            raise TypeError(
                "%s: act must be an op type (str) or a dict with a 'type', got %r"
                % (self.layer_type, act)
            )
        act = dict(act)
        act_type = act.pop("type")
        tmp = self.create_tmp_variable(dtype=input_var.dtype, shape=input_var.shape)
        self.append_op(type=act_type, inputs={"X": [input_var]}, outputs={"Out": [tmp]}, attrs=act)
        return tmp
