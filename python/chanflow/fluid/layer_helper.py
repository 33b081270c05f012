"""Fluid's ``LayerHelper``: what a layer function uses to name itself, make its temporaries and
append its ops to the current block of the default main program.

``LayerHelper("fill_constant")`` takes the next name for its layer type
(``unique_name.generate``: ``fill_constant_3``) unless ``name=`` is given; its temporaries are
``"<name>.tmp_<m>"`` (``fill_constant_3.tmp_0``).
"""

from . import framework
from . import unique_name

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
