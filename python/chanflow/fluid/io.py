"""Fluid's ``fluid.io``: saving and loading parameters and inference models in Paddle's file
formats::

    fluid.io.save_inference_model('model_dir', ['img'], [prediction], exe)
    with fluid.scope_guard(fluid.core.Scope()):
        program, feed_names, fetch_vars = fluid.io.load_inference_model('model_dir', exe)
        out, = exe.run(program, feed={feed_names[0]: x}, fetch_list=fetch_vars)

**Files.** A variable is saved as Paddle's serialised ``LoDTensor``: ``uint32`` version 0,
``uint64`` LoD level count (0 here; chanflow has no LoD) and per level its byte size and
offsets, ``uint32`` tensor version 0, ``int32`` size of a ``VarType.TensorDesc`` protobuf
message (``data_type``, ``dims``) and the message, then the raw little-endian elements. With
``filename=None`` each variable goes to ``<dirname>/<variable name>``; with a ``filename``
all of them go, one after the other in the order of their sorted names, into
``<dirname>/<filename>`` (Paddle's ``save_combine``). ``save_inference_model`` writes the
program as a ``ProgramDesc`` protobuf binary (``__model__``, or ``model_filename``).

**Scopes.** Values are read from and written to ``fluid.global_scope()`` (what Fluid's
executor did with its ``save``/``load`` ops); the ``executor`` argument is accepted for
Fluid's signature.

**Feed and fetch.** The saved inference program is Fluid's: the forward ops the targets need
(``clone(for_test=True)``, then pruned), preceded by a ``feed`` op per feed variable (input the
``FEED_MINIBATCH`` variable ``feed``, attribute ``col``) and followed by a ``fetch`` op per
target (output the ``FETCH_LIST`` variable ``fetch``). chanflow's executor feeds and fetches
variables directly and has no ``feed``/``fetch`` kernels: ``load_inference_model`` reads the
names from those ops and returns the program without them.
"""

import os
import struct

import numpy as np

from .. import _native
from . import core
from . import framework
from .executor import global_scope

__all__ = [
    "save_vars",
    "save_params",
    "save_persistables",
    "load_vars",
    "load_params",
    "load_persistables",
    "save_inference_model",
    "load_inference_model",
    "serialize_lod_tensor",
    "deserialize_lod_tensor",
    "get_inference_program",
    "FormatError",
]

VarType = core.VarDesc.VarType


class FormatError(_native.Error, ValueError):
    """A saved file that is not what Paddle's formats say (wrong version, truncated, extra
    bytes): a ``chanflow.Error`` and a ``ValueError``."""


_NP_OF_TYPE = {
    VarType.BOOL: np.dtype(np.bool_),
    VarType.INT8: np.dtype(np.int8),
    VarType.UINT8: np.dtype(np.uint8),
    VarType.INT16: np.dtype(np.int16),
    VarType.INT32: np.dtype(np.int32),
    VarType.INT64: np.dtype(np.int64),
    VarType.FP16: np.dtype(np.float16),
    VarType.FP32: np.dtype(np.float32),
    VarType.FP64: np.dtype(np.float64),
}
_TYPE_OF_NP = {v: k for k, v in _NP_OF_TYPE.items()}


# ---- Paddle's LoDTensor serialisation ----


def _varint(value):
    value &= (1 << 64) - 1  # negative int64: ten bytes, two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data, pos, what):
    result = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise FormatError("%s: truncated TensorDesc varint" % what)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    if result >= 1 << 63:
        result -= 1 << 64
    return result, pos


def _tensor_desc(data_type, dims):
    """``VarType.TensorDesc`` (proto2: ``required Type data_type = 1; repeated int64 dims = 2``,
    unpacked) in the protobuf wire format."""
    out = b"\x08" + _varint(int(data_type))
    for d in dims:
        out += b"\x10" + _varint(int(d))
    return out


def _parse_tensor_desc(data, what):
    pos = 0
    data_type = None
    dims = []
    while pos < len(data):
        key, pos = _read_varint(data, pos, what)
        field, wire = key >> 3, key & 7
        if field == 1 and wire == 0:
            data_type, pos = _read_varint(data, pos, what)
        elif field == 2 and wire == 0:
            d, pos = _read_varint(data, pos, what)
            dims.append(d)
        elif field == 2 and wire == 2:  # packed dims
            n, pos = _read_varint(data, pos, what)
            end = pos + n
            while pos < end:
                d, pos = _read_varint(data, pos, what)
                dims.append(d)
        else:
            raise FormatError("%s: unexpected TensorDesc field %d (wire type %d)"
                                     % (what, field, wire))
    if data_type is None:
        raise FormatError("%s: TensorDesc without data_type" % what)
    return data_type, dims


def serialize_lod_tensor(array):
    """``array`` (a NumPy array of an element type Fluid has) as Paddle's serialised
    ``LoDTensor`` with no LoD (bytes)."""
    a = np.require(np.asarray(array), requirements="C")  # keeps 0-d arrays 0-d
    dtype = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    t = _TYPE_OF_NP.get(np.dtype(dtype.name))
    if t is None:
        raise _native.TypeError("serialize_lod_tensor: dtype %s has no Fluid data type" % a.dtype)
    desc = _tensor_desc(t, a.shape)
    return b"".join(
        (
            struct.pack("<I", 0),  # LoDTensor version
            struct.pack("<Q", 0),  # LoD levels
            struct.pack("<I", 0),  # Tensor version
            struct.pack("<i", len(desc)),
            desc,
            a.astype(np.dtype(dtype.name).newbyteorder("<"), copy=False).tobytes(),
        )
    )


def deserialize_lod_tensor(data, offset=0, what="tensor"):
    """Parses one serialised ``LoDTensor`` from ``data`` at ``offset``: ``(array, end
    offset)``. A non-empty LoD is read and dropped (chanflow tensors have none); a wrong version
    or truncated data raises ``FormatError`` naming ``what``."""
    def take(n):
        nonlocal offset
        if offset + n > len(data):
            raise FormatError("%s: truncated (needs %d more bytes at offset %d of %d)"
                                     % (what, n, offset, len(data)))
        chunk = data[offset:offset + n]
        offset += n
        return chunk

    (version,) = struct.unpack("<I", take(4))
    if version != 0:
        raise FormatError("%s: LoDTensor version %d (only 0 is known)" % (what, version))
    (levels,) = struct.unpack("<Q", take(8))
    for _ in range(levels):
        (size,) = struct.unpack("<Q", take(8))
        take(size)
    (version,) = struct.unpack("<I", take(4))
    if version != 0:
        raise FormatError("%s: Tensor version %d (only 0 is known)" % (what, version))
    (size,) = struct.unpack("<i", take(4))
    if size < 0:
        raise FormatError("%s: negative TensorDesc size %d" % (what, size))
    data_type, dims = _parse_tensor_desc(take(size), what)
    dtype = _NP_OF_TYPE.get(data_type)
    if dtype is None:
        raise FormatError("%s: data type %d is not a tensor element type" % (what, data_type))
    if any(d < 0 for d in dims):
        raise FormatError("%s: negative dims %s" % (what, dims))
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    raw = take(count * dtype.itemsize)
    array = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(dims)
    return array, offset


# ---- which variables ----


def is_parameter(var):
    """True for a ``framework.Parameter``."""
    return isinstance(var, framework.Parameter)


def is_persistable(var):
    """True for a persistable tensor variable (not the feed/fetch holders, not channels)."""
    if var.type in (VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.RAW, VarType.CHANNEL):
        return False
    return var.persistable and var.type == VarType.LOD_TENSOR


def _program_or_default(main_program, what):
    if main_program is None:
        return framework.default_main_program()
    if not isinstance(main_program, framework.Program):
        raise TypeError("%s: main_program must be a fluid Program, got %r" % (what, main_program))
    return main_program


def _select(main_program, vars, predicate, what):
    if vars is None:
        program = _program_or_default(main_program, what)
        seen = {}
        for v in program.list_vars():
            if predicate is None or predicate(v):
                seen.setdefault(v.name, v)
        return list(seen.values())
    return list(vars)


def _var_name(v):
    return v.name if isinstance(v, framework.Variable) else v


# ---- save / load ----


def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None):
    """Saves variables of ``global_scope()``: ``vars`` (Variables or names), else those of
    ``main_program`` (default main program) for which ``predicate(var)`` is true. One file per
    variable (``<dirname>/<name>``), or all in ``<dirname>/<filename>`` in sorted-name order.
    A variable the scope has no value for raises ``chanflow.NotFoundError`` naming it."""
    selected = _select(main_program, vars, predicate, "save_vars")
    if not os.path.isdir(dirname):
        os.makedirs(dirname)
    scope = global_scope()
    names = [_var_name(v) for v in selected]

    def value(name):
        var = scope.find_var(name)
        if var is None:
            raise _native.NotFoundError(
                "save_vars: the scope holds no value for '%s' (run the startup program first)"
                % name)
        return np.array(var.get_tensor())

    if filename is None:
        for name in names:
            with open(os.path.join(dirname, name), "wb") as f:
                f.write(serialize_lod_tensor(value(name)))
    else:
        with open(os.path.join(dirname, os.path.basename(filename)), "wb") as f:
            for name in sorted(names):
                f.write(serialize_lod_tensor(value(name)))


def save_params(executor, dirname, main_program=None, filename=None):
    """``save_vars`` of the program's parameters."""
    save_vars(executor, dirname, main_program, None, is_parameter, filename)


def save_persistables(executor, dirname, main_program=None, filename=None):
    """``save_vars`` of the program's persistable tensor variables (parameters, optimiser
    state, batch-norm statistics ...)."""
    save_vars(executor, dirname, main_program, None, is_persistable, filename)


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None):
    """Loads what ``save_vars`` wrote into ``global_scope()``: the same selection rules. A
    missing file raises ``chanflow.NotFoundError``; a combined file with more or fewer tensors
    than selected variables, or a tensor whose shape contradicts its variable's declared one,
    raises ``FormatError``/``chanflow.ShapeError`` naming the variable."""
    selected = _select(main_program, vars, predicate, "load_vars")
    scope = global_scope()
    declared = {_var_name(v): v for v in selected}

    def store(name, array):
        v = declared[name]
        if isinstance(v, framework.Variable) and v.shape:
            shape = tuple(v.shape)
            if len(shape) != array.ndim or any(
                d >= 0 and d != s for d, s in zip(shape, array.shape)
            ):
                raise _native.ShapeError(
                    "load_vars: '%s' holds shape %s; the variable is declared %s"
                    % (name, list(array.shape), list(shape)))
        scope.var(name).get_tensor().set(array)

    if filename is None:
        for name in declared:
            path = os.path.join(dirname, name)
            if not os.path.isfile(path):
                raise _native.NotFoundError("load_vars: no file %s for variable '%s'"
                                            % (path, name))
            with open(path, "rb") as f:
                data = f.read()
            array, end = deserialize_lod_tensor(data, 0, path)
            if end != len(data):
                raise FormatError("load_vars: %s has %d bytes after the tensor"
                                         % (path, len(data) - end))
            store(name, array)
    else:
        path = os.path.join(dirname, os.path.basename(filename))
        if not os.path.isfile(path):
            raise _native.NotFoundError("load_vars: no file %s" % path)
        with open(path, "rb") as f:
            data = f.read()
        offset = 0
        for name in sorted(declared):
            if offset >= len(data):
                raise FormatError("load_vars: %s ends before the tensor of '%s'"
                                         % (path, name))
            array, offset = deserialize_lod_tensor(data, offset, "%s ('%s')" % (path, name))
            store(name, array)
        if offset != len(data):
            raise FormatError("load_vars: %s holds more tensors than the %d variables"
                                     % (path, len(declared)))


def load_params(executor, dirname, main_program=None, filename=None):
    """``load_vars`` of the program's parameters."""
    load_vars(executor, dirname, main_program, None, is_parameter, filename)


def load_persistables(executor, dirname, main_program=None, filename=None):
    """``load_vars`` of the program's persistable tensor variables."""
    load_vars(executor, dirname, main_program, None, is_persistable, filename)


# ---- inference models ----


def _prune(program, target_names):
    """Keeps the block 0 ops of ``program`` (a copy, modified in place) that the targets need,
    and the variables those ops use."""
    block = program.global_block()
    for op in block.ops:
        for value in op._attrs.values():
            if isinstance(value, framework.Block):
                raise ValueError("save_inference_model: op '%s' has a sub-block; programs with "
                                 "control flow cannot be saved for inference" % op.type)
    needed = set(target_names)
    kept = []
    for op in reversed(block.ops):
        if needed.intersection(op.output_arg_names):
            kept.append(op)
            needed.update(op.input_arg_names)
    kept.reverse()
    block.ops = kept
    used = set(target_names)
    for op in kept:
        used.update(op.input_arg_names)
        used.update(op.output_arg_names)
    for name in list(block.vars):
        if name not in used:
            del block.vars[name]
    del program.blocks[1:]
    program._bump()
    return needed


def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, export_for_deployment=True):
    """Saves the program computing ``target_vars`` (Variables) from ``feeded_var_names``
    (names) and its persistable variables' values: the model as a ProgramDesc binary in
    ``<dirname>/<model_filename or '__model__'>`` with Fluid's feed/fetch ops, the values by
    ``save_persistables`` (one file each, or ``params_filename``). Returns the target names.

    The program is ``main_program`` (default main program) cloned for test (backward and
    optimiser ops dropped, ``is_test`` set) and pruned to what the targets need. A feed name
    the program does not declare raises ``ValueError``; a target the feeds cannot compute is
    not checked (as in Fluid)."""
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    if not all(isinstance(n, str) for n in feeded_var_names):
        raise TypeError("save_inference_model: feeded_var_names must be names (str)")
    if isinstance(target_vars, framework.Variable):
        target_vars = [target_vars]
    if not all(isinstance(v, framework.Variable) for v in target_vars):
        raise TypeError("save_inference_model: target_vars must be Variables")
    main_program = _program_or_default(main_program, "save_inference_model")
    program = main_program.clone(for_test=True)
    target_names = [v.name for v in target_vars]
    for n in target_names:
        if n not in program.global_block().vars:
            raise ValueError("save_inference_model: target '%s' is not a block 0 variable" % n)
    _prune(program, target_names)
    block = program.global_block()
    for n in feeded_var_names:
        if n not in block.vars:
            raise ValueError("save_inference_model: feed '%s' is not a variable the pruned "
                             "program uses" % n)
    if not os.path.isdir(dirname):
        os.makedirs(dirname)

    native_blocks = [block._to_native()]
    nb = native_blocks[0]
    nb["vars"].append({"name": "feed", "type": int(VarType.FEED_MINIBATCH), "persistable": True})
    nb["vars"].append({"name": "fetch", "type": int(VarType.FETCH_LIST), "persistable": True})
    feeds = [
        {"type": "feed", "inputs": [("X", ["feed"])], "outputs": [("Out", [n])],
         "attrs": [("col", i)]}
        for i, n in enumerate(feeded_var_names)
    ]
    fetches = [
        {"type": "fetch", "inputs": [("X", [n])], "outputs": [("Out", ["fetch"])],
         "attrs": [("col", i)]}
        for i, n in enumerate(target_names)
    ]
    nb["ops"] = list(reversed(feeds)) + nb["ops"] + fetches  # Fluid prepends feed ops one by one
    model = _native.Program.from_blocks(native_blocks).to_binary()
    model_path = os.path.join(dirname, os.path.basename(model_filename or "__model__"))
    with open(model_path, "wb") as f:
        f.write(model)
    save_persistables(executor, dirname, program, params_filename)
    return target_names


def _program_from_native(native):
    """A Python Program of a native one (block 0 only), the ``feed``/``fetch`` ops and holder
    variables taken out: ``(program, feed names by col, fetch names by col)``."""
    if native.num_blocks != 1:
        raise ValueError("load_inference_model: the model has %d blocks; only programs without "
                         "control flow are supported" % native.num_blocks)
    nblock = native.blocks[0]
    program = framework.Program()
    block = program.global_block()
    holders = set()
    for v in nblock.vars:
        t = int(v.type)
        if t in (VarType.FEED_MINIBATCH, VarType.FETCH_LIST):
            holders.add(v.name)
            continue
        block.create_var(
            name=v.name,
            type=VarType(t),
            dtype=int(v.data_type) if t == VarType.LOD_TENSOR else None,
            shape=[int(d) for d in v.dims],
            lod_level=int(v.lod_level),
            persistable=bool(v.persistable),
        )
    feeds, fetches = {}, {}
    for op in nblock.ops:
        attrs = {k: framework._native_attr_value(a.value) for k, a in op.attrs.items()}
        if op.type == "feed":
            feeds[int(attrs.get("col", len(feeds)))] = list(dict(op.outputs.items())["Out"])[0]
            continue
        if op.type == "fetch":
            fetches[int(attrs.get("col", len(fetches)))] = list(dict(op.inputs.items())["X"])[0]
            continue
        for name in [a for _, ns in list(op.inputs.items()) + list(op.outputs.items()) for a in ns]:
            if name in holders:
                raise ValueError("load_inference_model: op '%s' uses the feed/fetch holder '%s'"
                                 % (op.type, name))
        block.append_op(
            type=op.type,
            inputs={k: list(names) for k, names in op.inputs.items()},
            outputs={k: list(names) for k, names in op.outputs.items()},
            attrs=attrs,
        )
    return program, [feeds[c] for c in sorted(feeds)], [fetches[c] for c in sorted(fetches)]


def load_inference_model(dirname, executor, model_filename=None, params_filename=None,
                         pserver_endpoints=None):
    """Loads what ``save_inference_model`` wrote (or Fluid wrote, for ops chanflow has):
    ``[program, feed_target_names, fetch_targets]``, the persistable values put in
    ``global_scope()``. ``program`` has no feed/fetch ops: run it with
    ``exe.run(program, feed={feed_target_names[0]: x}, fetch_list=fetch_targets)``. A missing
    directory or model file raises ``chanflow.NotFoundError``."""
    if not os.path.isdir(dirname):
        raise _native.NotFoundError("load_inference_model: no directory %s" % dirname)
    model_path = os.path.join(dirname, os.path.basename(model_filename or "__model__"))
    if not os.path.isfile(model_path):
        raise _native.NotFoundError("load_inference_model: no model file %s" % model_path)
    with open(model_path, "rb") as f:
        native = _native.Program.from_binary(f.read(), model_path)
    program, feed_names, fetch_names = _program_from_native(native)
    load_persistables(executor, dirname, program, params_filename)
    block = program.global_block()
    return [program, feed_names, [block.var(n) for n in fetch_names]]


def get_inference_program(target_vars, main_program=None):
    """The program computing ``target_vars``: ``main_program`` cloned for test and pruned."""
    if isinstance(target_vars, framework.Variable):
        target_vars = [target_vars]
    program = _program_or_default(main_program, "get_inference_program").clone(for_test=True)
    _prune(program, [v.name for v in target_vars])
    return program
