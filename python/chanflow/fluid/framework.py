"""Paddle Fluid's program-building framework: ``Program``, ``Block``, ``Variable``, ``Operator``.

A ``Program`` is a list of blocks (block 0 is the main block, every other block has a parent);
a block declares variables and holds operators. Layers (``fluid.layers``, ``fluid.Go`` ...)
append to ``default_main_program().current_block()``; ``program_guard(p)`` makes ``p`` the
default main program for a ``with`` body::

    prog = fluid.Program()
    with fluid.program_guard(prog):
        x = fluid.layers.fill_constant(shape=[1], dtype='int64', value=7)
    print(prog.to_string(False))          # the ProgramDesc in the protobuf text format
    fluid.Executor(fluid.CPUPlace()).run(prog, fetch_list=[x])   # -> [array([7])]

What a program builds is chanflow's program format (Fluid's ``ProgramDesc``, docs/
program_format.md): a block lists its variables by name (Fluid's BlockDesc kept them sorted) and
an op its parameters and attributes by name (as Fluid's OpDesc wrote them). Every op carries the
framework's ``op_role`` (0, forward) and ``op_role_var`` ([]) and the defaults of its proto's
attributes, as ``Operator.__init__`` left them in Fluid (its ``check_attrs``).

The Python objects are the program: it is converted to a native ``chanflow.Program`` when it is
run, printed or saved, once per version (every change to the program makes a new version), so
running an unchanged program again reuses the native program and the executor's preparation.

Not thread-safe: build a program from one thread at a time (as in Fluid). Misuse raises at the
call that makes it: an op type chanflow does not register, a parameter or attribute its schema
does not have, a variable of another program or one not visible from the block.
"""

import collections
import contextlib
import types

import numpy as np

from .. import _native
from . import core
from . import unique_name

__all__ = [
    "Block",
    "Variable",
    "Program",
    "Operator",
    "Parameter",
    "OpRole",
    "default_startup_program",
    "default_main_program",
    "program_guard",
    "switch_startup_program",
    "switch_main_program",
    "get_var",
    "convert_np_dtype_to_dtype_",
]

VarType = core.VarDesc.VarType

# Attributes Fluid's framework wrote on every op whatever its type (chanflow's verifier accepts
# them on any op, src/ir/op_schema.cc framework_attr).
_FRAMEWORK_ATTRS = frozenset(
    (
        "op_role",
        "op_role_var",
        "op_namescope",
        "op_callstack",
        "op_device",
        "use_mkldnn",
        "x_data_format",
        "y_data_format",
    )
)

# The attribute defaults of Fluid's 2018 op protos for the ops its concurrency layers emit
# (restated from Paddle's operators, as tests/exec/fluid_front_end.h does): Operator.__init__
# ended with check_attrs(), which wrote every proto attribute the layer left out. Ops not listed
# take the defaults of chanflow's schema for them.
_PADDLE_PROTO_DEFAULTS = {
    "equal": (("axis", -1), ("force_cpu", False)),
    "less_than": (("axis", -1), ("force_cpu", False)),
    "elementwise_add": (
        ("axis", -1),
        ("use_mkldnn", False),
        ("x_data_format", ""),
        ("y_data_format", ""),
    ),
    "elementwise_sub": (
        ("axis", -1),
        ("use_mkldnn", False),
        ("x_data_format", ""),
        ("y_data_format", ""),
    ),
    "elementwise_mul": (
        ("axis", -1),
        ("use_mkldnn", False),
        ("x_data_format", ""),
        ("y_data_format", ""),
    ),
    "elementwise_div": (
        ("axis", -1),
        ("use_mkldnn", False),
        ("x_data_format", ""),
        ("y_data_format", ""),
    ),
    "channel_send": (("copy", False),),
    "fill_constant": (("force_cpu", False),),
    "increment": (("step", 1.0),),
    "assign": (),
    "print": (),
    "channel_create": (),
    "channel_recv": (),
    "channel_close": (),
    "go": (),
    "select": (),
    "while": (),
    "conditional_block": (),
}


def convert_np_dtype_to_dtype_(np_dtype):
    """The ``VarType`` element type of a NumPy dtype or anything ``numpy.dtype`` accepts
    (``'float32'``, ``'int'`` -- int64, as on Fluid's Linux --, ``numpy.bool_`` ...).
    Raises ``ValueError`` for a dtype chanflow has no element type for."""
    try:
        dtype = np.dtype(np_dtype)
    except TypeError as e:
        raise ValueError("not a data type: %r (%s)" % (np_dtype, e))
    table = {
        np.dtype(np.float32): VarType.FP32,
        np.dtype(np.float64): VarType.FP64,
        np.dtype(np.float16): VarType.FP16,
        np.dtype(np.int32): VarType.INT32,
        np.dtype(np.int16): VarType.INT16,
        np.dtype(np.int64): VarType.INT64,
        np.dtype(np.bool_): VarType.BOOL,
        np.dtype(np.uint8): VarType.UINT8,
        np.dtype(np.int8): VarType.INT8,
    }
    try:
        return table[dtype]
    except KeyError:
        raise ValueError("Not supported numpy dtype %s" % dtype)


def _to_var_type(value, what):
    """``value`` (a VarType, its int value, or a NumPy-style dtype) as a ``VarType``."""
    if isinstance(value, VarType):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        try:
            return VarType(int(value))
        except ValueError:
            raise ValueError("%s: %d is not a VarType value (0..21)" % (what, value))
    try:
        return convert_np_dtype_to_dtype_(value)
    except ValueError as e:
        raise ValueError("%s: %s" % (what, e))


def _element_type(value, what):
    """``value`` as a ``VarType`` that is an element type (a tensor's dtype)."""
    t = _to_var_type(value, what)
    if t not in core.ELEMENT_TYPES:
        raise ValueError(
            "%s: %r is not an element type (BOOL, INT*, UINT8, FP16/32/64)" % (what, t)
        )
    return t


class Variable(object):
    """A variable declared in a block: Fluid's ``Variable``. Create it with
    ``Block.create_var``; layers return the variables they write.

    ``name``, ``type`` (a ``VarType`` kind), ``dtype`` (the element type, or None), ``shape``
    (a tuple; ``()`` when not declared), ``lod_level``, ``persistable`` (settable) and
    ``block`` describe the declaration; ``stop_gradient`` (True: ``append_backward`` computes
    no gradient through it; data layers set it) and ``op``, the last operator that wrote the
    variable.
    """

    def __init__(
        self,
        block,
        type=VarType.LOD_TENSOR,
        name=None,
        shape=None,
        dtype=None,
        lod_level=None,
        capacity=None,
        persistable=None,
        error_clip=None,
        stop_gradient=False,
        is_data=False,
        **kwargs
    ):
        if kwargs:
            raise TypeError("create_var got unexpected arguments: %s" % ", ".join(sorted(kwargs)))
        if name is None:
            name = unique_name.generate("_generated_var")
        if not isinstance(name, str) or not name:
            raise TypeError("a variable's name must be a non-empty str, got %r" % (name,))
        self.block = block
        self._name = name
        self._type = _to_var_type(type, "variable '%s': type" % name)
        self._dtype = None
        if dtype is not None:
            what = "variable '%s': dtype" % name
            if self._type == VarType.CHANNEL:
                # A channel's element type: a tensor dtype, LOD_TENSOR (any tensor) or CHANNEL.
                self._dtype = _to_var_type(dtype, what)
            else:
                self._dtype = _element_type(dtype, what)
        self._shape = _shape_tuple(shape, name) if shape is not None else ()
        self._lod_level = 0 if lod_level is None else int(lod_level)
        self._capacity = 0 if capacity is None else int(capacity)
        self._persistable = bool(persistable) if persistable is not None else False
        self.error_clip = error_clip
        self.stop_gradient = stop_gradient
        self.is_data = is_data
        self.op = None

    def _check_same(self, type, shape, dtype, lod_level, persistable):
        """Fluid's check when ``create_var`` names a variable the block already declares."""
        mismatch = []
        if _to_var_type(type, "type") != self._type:
            mismatch.append("type %r, not %r" % (self._type, type))
        if shape is not None and _shape_tuple(shape, self._name) != self._shape:
            mismatch.append("shape %s, not %s" % (self._shape, tuple(shape)))
        if dtype is not None and _to_var_type(dtype, "dtype") != self._dtype:
            mismatch.append("dtype %r, not %r" % (self._dtype, dtype))
        if lod_level is not None and int(lod_level) != self._lod_level:
            mismatch.append("lod_level %d, not %d" % (self._lod_level, lod_level))
        if persistable is not None and bool(persistable) != self._persistable:
            mismatch.append("persistable %s, not %s" % (self._persistable, persistable))
        if mismatch:
            raise ValueError(
                "Variable '%s' has been created before in block %d with %s"
                % (self._name, self.block.idx, "; ".join(mismatch))
            )

    @property
    def name(self):
        return self._name

    @property
    def type(self):
        return self._type

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return self._shape

    @property
    def lod_level(self):
        return self._lod_level

    @property
    def persistable(self):
        return self._persistable

    @persistable.setter
    def persistable(self, value):
        self._persistable = bool(value)
        self.block.program._bump()

    def _to_native(self):
        d = {"name": self._name, "type": int(self._type)}
        if self._dtype is not None:
            d["data_type"] = int(self._dtype)
        if self._shape:
            d["dims"] = list(self._shape)
        if self._lod_level:
            d["lod_level"] = self._lod_level
        if self._capacity:
            d["capacity"] = self._capacity
        if self._persistable:
            d["persistable"] = True
        return d

    def __repr__(self):
        return "Variable(name=%r, type=%r, dtype=%r, shape=%r, block=%d%s)" % (
            self._name,
            self._type,
            self._dtype,
            self._shape,
            self.block.idx,
            ", persistable=True" if self._persistable else "",
        )


def _shape_tuple(shape, name):
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError("variable '%s': shape must be a sequence of ints, got %r" % (name, shape))
    for d in dims:
        if d < -1:
            raise ValueError("variable '%s': shape %s has a dimension below -1" % (name, dims))
    return dims


class OpRole(object):
    """Fluid's ``op_role`` attribute values: what part of training an op belongs to (bits)."""

    Forward = 0x0000
    Backward = 0x0001
    Optimize = 0x0002
    RPC = 0x0004
    Dist = 0x0008
    LRSched = 0x0010
    Loss = 0x0100


class Parameter(Variable):
    """A trainable variable of block 0: Fluid's ``Parameter``. Create it with
    ``Block.create_parameter`` (layers do, through ``LayerHelper.create_parameter``).

    Always persistable, so it outlives a run in the executor's scope. ``trainable`` (False:
    no gradient, no optimiser update), ``optimize_attr`` (``{'learning_rate': factor}``),
    ``regularizer``, ``gradient_clip_attr`` and ``do_model_average`` are Fluid's attributes.
    ``shape`` and ``dtype`` are required and the shape must be fully known (no -1).
    """

    def __init__(self, block, shape, dtype, **kwargs):
        if shape is None or dtype is None:
            raise ValueError("Parameter: shape and dtype must be given")
        for d in shape:
            if int(d) <= 0:
                raise ValueError(
                    "Parameter '%s': each dimension of shape %s must be positive"
                    % (kwargs.get("name"), list(shape))
                )
        self.trainable = kwargs.pop("trainable", True)
        self.optimize_attr = kwargs.pop("optimize_attr", {"learning_rate": 1.0})
        self.regularizer = kwargs.pop("regularizer", None)
        self.gradient_clip_attr = kwargs.pop("gradient_clip_attr", None)
        self.do_model_average = kwargs.pop("do_model_average", None)
        kwargs.pop("persistable", None)
        Variable.__init__(self, block, persistable=True, shape=shape, dtype=dtype, **kwargs)

    def __repr__(self):
        return "Parameter(name=%r, dtype=%r, shape=%r, trainable=%s)" % (
            self.name,
            self.dtype,
            self.shape,
            self.trainable,
        )


def _attr_value_to_native(value):
    if isinstance(value, Block):
        return _native.BlockRef(value.idx)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):  # VarType members included
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_attr_value_to_native(v) for v in value]
    return value


class Operator(object):
    """An operator of a block: Fluid's ``Operator``. Create it with ``Block.append_op``.

    ``type``, ``input(param)`` / ``output(param)`` (argument names), ``input_names`` /
    ``output_names`` (parameters), ``attr(name)``, ``attrs`` (a read-only mapping, ``Block``
    objects for block attributes), ``set_attr``. Its parameters and attributes are checked
    against chanflow's schema of the op type when it is made.
    """

    def __init__(self, block, type=None, inputs=None, outputs=None, attrs=None):
        self.block = block
        where = "block %d, op %d" % (block.idx, len(block.ops))
        if not isinstance(type, str) or not type:
            raise ValueError(
                "%s: an operator needs a type (a non-empty str), got %r" % (where, type)
            )
        schema = _native.op_schema(type)
        if schema is None:
            raise ValueError('%s: Operator "%s" has not been registered.' % (where, type))
        where = "%s ('%s')" % (where, type)
        self.type = type
        self._inputs = collections.OrderedDict()
        self._outputs = collections.OrderedDict()
        if inputs is not None:
            self._inputs = self._arguments(inputs, schema["inputs"], "input", where)
            # Fluid set every input parameter of the proto, with no arguments when not given.
            for param in schema["inputs"]:
                self._inputs.setdefault(param, [])
        if outputs is not None:
            self._outputs = self._arguments(outputs, schema["outputs"], "output", where)

        given = {} if attrs is None else attrs
        if not isinstance(given, dict):
            raise TypeError("%s: attrs must be a dict, got %r" % (where, given))
        known = schema["attrs"]
        self._attrs = {}
        for name, value in given.items():
            if value is None:  # Fluid skips an attribute given as None: its default applies
                continue
            if name not in known and name not in _FRAMEWORK_ATTRS:
                raise ValueError(
                    "%s: op '%s' has no attribute '%s' (its attributes: %s)"
                    % (where, type, name, ", ".join(sorted(known)) or "none")
                )
            if isinstance(value, Block) and value.program is not block.program:
                raise ValueError("%s: attribute '%s' is a block of another Program" % (where, name))
            self._attrs[name] = value
        program = block.program
        self._attrs.setdefault("op_role", program._op_role)
        self._attrs.setdefault("op_role_var", list(program._op_role_var))
        if type in _PADDLE_PROTO_DEFAULTS:
            defaults = _PADDLE_PROTO_DEFAULTS[type]
        else:
            defaults = [(n, spec[1]) for n, spec in known.items() if spec[1] is not None]
        for name, value in defaults:
            self._attrs.setdefault(name, value)

        for names in self._outputs.values():
            for n in names:
                block._find_var_recursive(n).op = self

    def _arguments(self, args, params, kind, where):
        if not isinstance(args, dict):
            raise TypeError(
                "%s: %ss must be a dict of parameter -> variables, got %r" % (where, kind, args)
            )
        out = collections.OrderedDict()
        for param, value in args.items():
            if param not in params:
                raise ValueError(
                    "%s: op '%s' has no %s parameter '%s' (its %ss: %s)"
                    % (where, self.type, kind, param, kind, ", ".join(params) or "none")
                )
            if value is None:
                continue
            if not isinstance(value, (list, tuple)):
                value = [value]
            what = "%s: %s '%s'" % (where, kind, param)
            out[param] = [self.block._argument_name(v, what) for v in value]
        return out

    def input(self, name):
        return list(self._inputs.get(name, []))

    def output(self, name):
        return list(self._outputs.get(name, []))

    @property
    def input_names(self):
        return list(self._inputs)

    @property
    def output_names(self):
        return list(self._outputs)

    @property
    def input_arg_names(self):
        return [n for names in self._inputs.values() for n in names]

    @property
    def output_arg_names(self):
        return [n for names in self._outputs.values() for n in names]

    @property
    def attrs(self):
        return types.MappingProxyType(self._attrs)

    @property
    def attr_names(self):
        return sorted(self._attrs)

    def has_attr(self, name):
        return name in self._attrs

    def attr(self, name):
        return self._attrs[name]

    def all_attrs(self):
        return dict(self._attrs)

    def set_attr(self, name, value):
        """Sets attribute ``name`` (one the op's schema or the framework has)."""
        schema = _native.op_schema(self.type)
        if name not in schema["attrs"] and name not in _FRAMEWORK_ATTRS:
            raise ValueError("op '%s' has no attribute '%s'" % (self.type, name))
        self._attrs[name] = value
        self.block.program._bump()

    @property
    def idx(self):
        for i, op in enumerate(self.block.ops):
            if op is self:
                return i
        raise ValueError("the operator is not in its block")

    def _to_native(self):
        return {
            "type": self.type,
            "inputs": sorted(self._inputs.items()),
            "outputs": sorted(self._outputs.items()),
            "attrs": [(n, _attr_value_to_native(self._attrs[n])) for n in sorted(self._attrs)],
        }

    def __repr__(self):
        return "Operator(%s, block=%d, inputs=%s, outputs=%s)" % (
            self.type,
            self.block.idx,
            dict(self._inputs),
            dict(self._outputs),
        )


class Block(object):
    """A block of a program: its variables (``vars``, by name) and operators (``ops``).

    Blocks see the variables of their ancestors (``parent_idx``); ``var_recursive`` resolves a
    name the way the executor does.
    """

    def __init__(self, program, idx, parent_idx):
        self.program = program
        self._idx = idx
        self._parent_idx = parent_idx
        self.vars = collections.OrderedDict()
        self.ops = []

    @property
    def idx(self):
        return self._idx

    @property
    def parent_idx(self):
        return self._parent_idx

    @property
    def forward_block_idx(self):
        return -1

    def var(self, name):
        """The variable ``name`` declared in this block; ``ValueError`` if there is none."""
        if not isinstance(name, str):
            raise TypeError("var() takes a variable name (str), got %r" % (name,))
        v = self.vars.get(name)
        if v is None:
            raise ValueError("var %s not in this block" % name)
        return v

    def has_var(self, name):
        return name in self.vars

    def _find_var_recursive(self, name):
        block = self
        while True:
            v = block.vars.get(name)
            if v is not None:
                return v
            if block._parent_idx < 0:
                return None
            block = self.program.blocks[block._parent_idx]

    def var_recursive(self, name):
        """The variable ``name`` resolves to from this block (this block, then its ancestors)."""
        v = self._find_var_recursive(name)
        if v is None:
            raise ValueError("Var %s is not found recursively from block %d" % (name, self._idx))
        return v

    _var_recursive = var_recursive

    def create_var(self, *args, **kwargs):
        """Declares a variable in this block (Fluid's arguments: ``name``, ``type``, ``dtype``,
        ``shape``, ``persistable``, ``lod_level``, ``capacity``, ``stop_gradient`` ...). Naming
        a variable the block already declares returns it, after checking the arguments agree."""
        name = kwargs.get("name")
        if name is not None and name in self.vars:
            existing = self.vars[name]
            existing._check_same(
                kwargs.get("type", VarType.LOD_TENSOR),
                kwargs.get("shape"),
                kwargs.get("dtype"),
                kwargs.get("lod_level"),
                kwargs.get("persistable"),
            )
            if "stop_gradient" in kwargs:
                existing.stop_gradient = kwargs["stop_gradient"]
            return existing
        var = Variable(self, *args, **kwargs)
        self.vars[var.name] = var
        self.program._bump()
        return var

    def create_parameter(self, *args, **kwargs):
        """Declares a ``Parameter`` (Fluid's arguments: ``name``, ``shape``, ``dtype``,
        ``trainable``, ``optimize_attr``, ``regularizer`` ...) in this block; with
        ``initializer=`` the initializer writes its op into this block (the startup program's
        block 0 when called by ``LayerHelper.create_parameter``)."""
        initializer = kwargs.pop("initializer", None)
        name = kwargs.get("name")
        if name is not None and name in self.vars:
            existing = self.vars[name]
            if not isinstance(existing, Parameter):
                raise ValueError(
                    "create_parameter: block %d already declares '%s' as a variable that is "
                    "not a parameter" % (self._idx, name)
                )
            existing._check_same(
                VarType.LOD_TENSOR, kwargs.get("shape"), kwargs.get("dtype"), None, None
            )
            return existing
        param = Parameter(self, *args, **kwargs)
        self.vars[param.name] = param
        self.program._bump()
        if initializer is not None:
            initializer(param, self)
        return param

    def all_parameters(self):
        """The ``Parameter`` variables of this block, in declaration order."""
        return [v for v in self.vars.values() if isinstance(v, Parameter)]

    def _import_native(self, native_block, first_op):
        """Declares the variables of ``native_block`` (a ``chanflow.Program``'s block with the
        same index) this block lacks and appends its ops from index ``first_op`` on: how a
        native rewrite of the program (``chanflow.append_backward``) comes back into it."""
        for v in native_block.vars:
            if v.name in self.vars:
                continue
            self.create_var(
                name=v.name,
                type=VarType(int(v.type)),
                dtype=int(v.data_type) if int(v.type) == VarType.LOD_TENSOR else None,
                shape=[int(d) for d in v.dims],
                lod_level=int(v.lod_level),
                persistable=bool(v.persistable),
            )
        for i, op in enumerate(native_block.ops):
            if i < first_op:
                continue
            self.append_op(
                type=op.type,
                inputs={k: list(names) for k, names in op.inputs.items()},
                outputs={k: list(names) for k, names in op.outputs.items()},
                attrs={k: _native_attr_value(a.value) for k, a in op.attrs.items()},
            )

    def append_op(self, type=None, inputs=None, outputs=None, attrs=None):
        """Appends an operator: ``inputs`` and ``outputs`` map parameter names to a variable, a
        variable name, or a list of them; ``attrs`` maps attribute names to values (a ``Block``
        for a block attribute)."""
        op = Operator(self, type=type, inputs=inputs, outputs=outputs, attrs=attrs)
        self.ops.append(op)
        self.program._bump()
        return op

    def prepend_op(self, type=None, inputs=None, outputs=None, attrs=None):
        """Like ``append_op``, at the front of the block."""
        op = Operator(self, type=type, inputs=inputs, outputs=outputs, attrs=attrs)
        self.ops.insert(0, op)
        self.program._bump()
        return op

    def _argument_name(self, arg, where):
        """The name of an op argument, checked: a variable of this program visible from this
        block, or the name of one."""
        if isinstance(arg, Variable):
            if arg.block.program is not self.program:
                raise ValueError(
                    "%s: variable '%s' belongs to another Program (declared in its block %d)"
                    % (where, arg.name, arg.block.idx)
                )
            if self._find_var_recursive(arg.name) is not arg:
                raise ValueError(
                    "%s: variable '%s' is declared in block %d, which block %d cannot see "
                    "(a block sees its own variables and its ancestors')"
                    % (where, arg.name, arg.block.idx, self._idx)
                )
            return arg.name
        if isinstance(arg, str):
            if self._find_var_recursive(arg) is None:
                raise ValueError(
                    "%s: no variable '%s' is visible from block %d" % (where, arg, self._idx)
                )
            return arg
        raise TypeError("%s: expected a Variable or a variable name, got %r" % (where, arg))

    def _to_native(self):
        return {
            "idx": self._idx,
            "parent_idx": self._parent_idx,
            "vars": [self.vars[n]._to_native() for n in sorted(self.vars)],
            "ops": [op._to_native() for op in self.ops],
        }

    def to_string(self, throw_on_error=True, with_details=False):
        """This block's ``blocks { ... }`` entry of ``Program.to_string``."""
        text = self.program.to_string(throw_on_error, with_details)
        return _block_text(text, self._idx)

    def __repr__(self):
        return "Block(idx=%d, parent_idx=%d, vars=%d, ops=%d)" % (
            self._idx,
            self._parent_idx,
            len(self.vars),
            len(self.ops),
        )


def _native_attr_value(value):
    if isinstance(value, _native.BlockRef):
        raise ValueError("a native op with a block attribute cannot be imported")
    if isinstance(value, (str, bytes, bool, int, float)):
        return value
    try:
        return [_native_attr_value(v) for v in value]
    except TypeError:
        return value


def _block_text(program_text, idx):
    """The ``blocks { ... }`` entry of block ``idx`` in a program's text format."""
    entries = []
    current = None
    depth = 0
    for line in program_text.splitlines(True):
        if current is None and depth == 0 and line.startswith("blocks {"):
            current = []
        if current is not None:
            current.append(line)
        depth += line.count("{") - line.count("}")
        if current is not None and depth == 0:
            entries.append("".join(current))
            current = None
    return entries[idx]


class _ProgramDesc(object):
    """What Fluid's ``Program.desc`` (a ``core.ProgramDesc``) offered for serialisation."""

    def __init__(self, program):
        self._program = program

    def serialize_to_string(self):
        """The program in the protobuf binary format (bytes), as ``chanflow run`` reads it."""
        return self._program._native_program().to_binary()

    def num_blocks(self):
        return len(self._program.blocks)


class Program(object):
    """A program under construction: Fluid's ``Program``. Layers write into
    ``current_block()``; control-flow layers (``While``, ``Go``, ``Select``) open a new block
    with ``create_block()`` and return to its parent with ``rollback()``.

    ``to_string()`` gives the ProgramDesc in the protobuf text format, ``desc.
    serialize_to_string()`` in the binary format, ``save(path)`` writes either (by extension);
    ``chanflow run`` runs what they write.
    """

    def __init__(self):
        self.blocks = [Block(self, 0, -1)]
        self.current_block_idx = 0
        self._seed = 0
        self._op_role = 0  # Fluid's OpRole.Forward
        self._op_role_var = []
        self._version = 0
        self._native = None  # (version, chanflow Program) of the last conversion
        # The shards of a batch ParallelExecutor and ParallelDo cut: the block 0 variables of
        # each shard (name -> shard index) and the place of each shard. Executor.run runs the
        # places' ops concurrently (place_parallel.py).
        self._var_shards = {}
        self._shard_places = []
        self._concurrent = None  # (version, chanflow Program) of place_parallel's rewrite

    def _bump(self):
        self._version += 1

    def _native_program(self):
        """The native ``chanflow.Program`` of this version of the program (made once per
        version)."""
        cached = self._native
        if cached is not None and cached[0] == self._version:
            return cached[1]
        native = _native.Program.from_blocks([b._to_native() for b in self.blocks])
        self._native = (self._version, native)
        return native

    @property
    def desc(self):
        return _ProgramDesc(self)

    @property
    def op_role(self):
        return self._op_role

    @property
    def op_role_var(self):
        return self._op_role_var

    @property
    def random_seed(self):
        return self._seed

    @random_seed.setter
    def random_seed(self, seed):
        if not isinstance(seed, int):
            raise ValueError("Seed must be a integer.")
        self._seed = seed

    @property
    def num_blocks(self):
        return len(self.blocks)

    def global_block(self):
        return self.blocks[0]

    def block(self, index):
        if not 0 <= index < len(self.blocks):
            raise IndexError("block %d: the program has %d blocks" % (index, len(self.blocks)))
        return self.blocks[index]

    def current_block(self):
        return self.blocks[self.current_block_idx]

    def create_block(self, parent_idx=None):
        """Adds a block whose parent is the current block (or ``parent_idx``) and makes it
        current."""
        parent = self.current_block() if parent_idx is None else self.block(parent_idx)
        block = Block(self, len(self.blocks), parent.idx)
        self.blocks.append(block)
        self.current_block_idx = block.idx
        self._bump()
        return block

    def rollback(self):
        """Makes the parent of the current block current."""
        parent = self.current_block().parent_idx
        if parent < 0:
            raise ValueError("rollback: the current block is block 0, which has no parent")
        self.current_block_idx = parent

    _create_block = create_block
    _rollback = rollback

    def to_string(self, throw_on_error=True, with_details=False):
        """The program in the protobuf text format (what ``chanflow run`` reads).

        ``throw_on_error`` is Fluid's: raise when a required field of the description is unset;
        the program writes every required field, so it never raises for that. ``with_details``
        appends, as ``#`` comment lines (the text still loads), what Fluid printed besides the
        description: each variable's ``stop_gradient`` and ``error_clip``.
        """
        if not isinstance(throw_on_error, bool) or not isinstance(with_details, bool):
            raise TypeError("to_string(throw_on_error: bool, with_details: bool)")
        text = self._native_program().to_text()
        if with_details:
            lines = []
            for b in self.blocks:
                for name, v in b.vars.items():
                    lines.append(
                        "# block %d var %s: stop_gradient: %s error_clip: %s\n"
                        % (b.idx, name, v.stop_gradient, v.error_clip)
                    )
            text += "".join(lines)
        return text

    def __str__(self):
        return self.to_string(True)

    def __repr__(self):
        ops = sum(len(b.ops) for b in self.blocks)
        return "Program(blocks=%d, ops=%d)" % (len(self.blocks), ops)

    def save(self, path):
        """Writes the program to ``path``: the text format for ``.pbtxt``/``.prototxt``/
        ``.txt``, the binary format for ``.pb``/``.bin`` (chanflow's rule)."""
        self._native_program().save(path)

    def verify(self):
        """Checks the program as the executor will before running it; raises
        ``chanflow.ProgramError`` naming block, op and problem."""
        self._native_program().verify()

    def clone(self, for_test=False):
        """A copy of the program (blocks, variables, parameters, ops).

        With ``for_test`` the copy is the program for evaluation, as Fluid's
        ``clone(for_test=True)``: the ops whose ``op_role`` marks them backward, optimiser or
        learning-rate schedule ops are left out (with the ``@GRAD`` variables only they used),
        and every remaining op that has an ``is_test`` attribute (dropout, batch_norm ...) gets
        it set to True. Clone before or after ``minimize``: both give the forward program."""
        p = Program()
        p.blocks = []
        for b in self.blocks:
            p.blocks.append(Block(p, b.idx, b.parent_idx))
        dropped = OpRole.Backward | OpRole.Optimize | OpRole.LRSched
        kept_ops = []
        for b in self.blocks:
            ops = b.ops
            if for_test:
                ops = [op for op in ops if not int(op._attrs.get("op_role", 0)) & dropped]
            kept_ops.append(ops)
        used = set()
        for ops in kept_ops:
            for op in ops:
                used.update(op.input_arg_names)
                used.update(op.output_arg_names)
        for b, nb in zip(self.blocks, p.blocks):
            for name, v in b.vars.items():
                if for_test and "@GRAD" in name and name not in used:
                    continue
                nv = type(v).__new__(type(v))
                nv.__dict__.update(v.__dict__)
                nv.block = nb
                nv.op = None
                nb.vars[name] = nv
        for ops, nb in zip(kept_ops, p.blocks):
            for op in ops:
                nop = Operator.__new__(Operator)
                nop.block = nb
                nop.type = op.type
                nop._inputs = collections.OrderedDict((k, list(v)) for k, v in op._inputs.items())
                nop._outputs = collections.OrderedDict((k, list(v)) for k, v in op._outputs.items())
                nop._attrs = {
                    k: (p.blocks[v.idx] if isinstance(v, Block) else v)
                    for k, v in op._attrs.items()
                }
                if for_test and "is_test" in nop._attrs:
                    nop._attrs["is_test"] = True
                nb.ops.append(nop)
                for n in nop.output_arg_names:
                    nb._find_var_recursive(n).op = nop
        p.current_block_idx = 0
        p._seed = self._seed
        p._var_shards = dict(self._var_shards)
        p._shard_places = list(self._shard_places)
        return p

    @contextlib.contextmanager
    def _op_role_guard(self, role, role_var=()):
        """Ops appended in the body carry ``op_role`` ``role`` and ``op_role_var``
        ``role_var`` (variable names)."""
        previous = (self._op_role, self._op_role_var)
        self._op_role = role
        self._op_role_var = [v.name if isinstance(v, Variable) else v for v in role_var]
        try:
            yield
        finally:
            self._op_role, self._op_role_var = previous

    def _optimized_guard(self, param_and_grads):
        """Fluid's guard for optimiser ops: role Optimize, ``op_role_var`` [param, grad]."""
        return self._op_role_guard(OpRole.Optimize, param_and_grads)

    def _lr_schedule_guard(self):
        return self._op_role_guard(OpRole.LRSched)

    def all_parameters(self):
        """Every ``Parameter`` of the program (block 0's)."""
        return self.global_block().all_parameters()

    def list_vars(self):
        for b in self.blocks:
            for v in b.vars.values():
                yield v


_main_program_ = Program()
_startup_program_ = Program()


def default_startup_program():
    """The default startup program: layers put the initialisers of their parameters there (and
    optimisers those of their accumulators); run it once into a scope before the main program."""
    return _startup_program_


def default_main_program():
    """The program layers write into unless ``program_guard`` says otherwise."""
    return _main_program_


def switch_main_program(program):
    """Makes ``program`` the default main program; returns the previous one."""
    global _main_program_
    if not isinstance(program, Program):
        raise TypeError("main_program should be Program, got %r" % (program,))
    previous = _main_program_
    _main_program_ = program
    return previous


def switch_startup_program(program):
    """Makes ``program`` the default startup program; returns the previous one."""
    global _startup_program_
    if not isinstance(program, Program):
        raise TypeError("startup_program should be Program, got %r" % (program,))
    previous = _startup_program_
    _startup_program_ = program
    return previous


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Makes ``main_program`` (and ``startup_program`` when given) the default for the body of
    a ``with`` statement; the previous defaults come back afterwards, also on an exception."""
    if not isinstance(main_program, Program):
        raise TypeError("main_program should be Program, got %r" % (main_program,))
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError("startup_program should be Program, got %r" % (startup_program,))
    previous_main = switch_main_program(main_program)
    previous_startup = None
    if startup_program is not None:
        previous_startup = switch_startup_program(startup_program)
    try:
        yield
    finally:
        switch_main_program(previous_main)
        if startup_program is not None:
            switch_startup_program(previous_startup)


def get_var(name, program=None):
    """The variable ``name`` of ``program``'s block 0 (the default main program's)."""
    if program is None:
        program = default_main_program()
    if not isinstance(program, Program):
        raise TypeError("program should be Program, got %r" % (program,))
    return program.global_block().var(name)
