"""chanflow: Go-style concurrency for tensor programs.

The native API (``chanflow._native``, one extension module over the C++ library):

- ``Tensor`` and ``tensor(obj, dtype=None)`` / ``from_dlpack(obj)``: zero-copy exchange with
  NumPy, PyTorch and any DLPack producer;
- ``Program`` (``from_text``, ``from_binary``, ``load``, ``from_blocks``), ``load_program``,
  ``op_schema`` / ``op_types`` and ``ProgramBuilder`` (the C++ builder: ``Var``, ``VarType``, block guards);
- ``Executor.run(program, feed, fetch, channels, timeout)``, with the GIL released while it runs;
- ``Object`` and one class per object type (``types``, ``object_class``), ``Array`` and ``Map``,
  ``to_object``, ``to_json`` / ``from_json``;
- ``Graph``, ``Node``, the graph op functions (``matmul``, ``relu``, ``sum`` ... one per entry of
  the C++ op list, chanflow/graph/op_list.h), ``grad``, ``GoMachine`` and ``TapeMachine``;
- ``make_chan`` / ``Channel``, ``recv_case`` / ``send_case`` and ``select``: Go's channels, shared
  by Python threads, green threads and running programs;
- ``Function``, ``get_global_func``, ``register_func``, ``list_global_funcs``,
  ``remove_global_func``: the global function registry shared with C++ and the C ABI;
- ``trace_start`` / ``trace_stop`` / ``trace_json``: the runtime's trace (green threads, channels,
  program ops, GoMachine nodes; docs/runtime.md, "Tracing");
- the error classes, all under ``chanflow.Error``.

``chanflow.fluid`` offers PaddlePaddle Fluid's API by its names on top of these.
"""

# NumPy first: its BLAS threads then exist when the native module loads, which is when chanflow's
# deadlock detection records the threads that were there before it (those never wake a waiter).
import numpy as _numpy  # noqa: F401

from chanflow._native import (  # noqa: F401
    Array,
    BlockGuard,
    BlockRef,
    CanceledError,
    Channel,
    ChannelClosedError,
    DeadlineExceededError,
    DeadlockError,
    Error,
    Executor,
    Function,
    JSONError,
    LimitError,
    MachineError,
    NotFoundError,
    Map,
    Object,
    GoMachine,
    Graph,
    Node,
    OpContext,
    PersistentScope,
    Program,
    ProgramBuilder,
    ProgramError,
    SelectCase,
    SelectGuard,
    ShapeError,
    Tensor,
    TapeMachine,
    TypeError,
    Var,
    VarType,
    __version__,
    append_backward,
    from_dlpack,
    from_json,
    get_global_func,
    list_global_funcs,
    load_program,
    make_chan,
    grad,
    object_class,
    op,
    op_outputs,
    op_schema,
    op_types,
    recv_case,
    register_func,
    remove_global_func,
    select,
    send_case,
    table_op_types,
    tensor,
    to_json,
    to_object,
    trace_json,
    trace_start,
    trace_stop,
    types,
)

__all__ = [
    "BlockRef", "CanceledError", "ChannelClosedError", "DeadlineExceededError", "DeadlockError",
    "Error", "Executor", "LimitError", "MachineError", "NotFoundError", "Program", "ProgramError",
    "ShapeError", "Tensor", "TypeError", "from_dlpack", "op_schema", "op_types", "tensor",
    # objects
    "Array", "JSONError", "Map", "Object", "from_json", "object_class", "to_json", "to_object",
    "types",
    # programs
    "BlockGuard", "PersistentScope", "ProgramBuilder", "SelectGuard", "Var", "VarType",
    "append_backward", "load_program",
    # graphs and machines (the op functions are added below); the op table's ops
    "GoMachine", "Graph", "Node", "OpContext", "TapeMachine", "grad", "op", "op_outputs",
    "table_op_types",
    # channels
    "Channel", "SelectCase", "make_chan", "recv_case", "select", "send_case",
    # functions
    "Function", "get_global_func", "list_global_funcs", "register_func", "remove_global_func",
    # the runtime's trace
    "trace_json", "trace_start", "trace_stop",
    # data: readers of mini-batches (chanflow.reader and chanflow.dataset are submodules)
    "batch",
]


def _program_error(kind, args):
    """Rebuilds a pickled ProgramError of an op that failed with `kind` ('ShapeError' ...): its
    class is named as the kind, so pickle cannot find it by name (chanflow.ShapeError is the
    kind itself)."""
    from chanflow._native import _program_error as rebuild

    return rebuild(kind, args)


# The graph op functions, one per entry of the C++ op list: a new op appears here by itself.
# graph_ops names them in the list's order. Those named like a Python builtin (abs, max, min, pow,
# sum) are chanflow.sum ... but are left out of __all__, so `from chanflow import *` does not
# shadow the builtins.
import builtins as _builtins  # noqa: E402

from chanflow import _native as _native_module  # noqa: E402

graph_ops = tuple(name for name, _kind, _doc in _native_module._graph_ops)
__all__.append("graph_ops")
for _name in graph_ops:
    globals()[_name] = getattr(_native_module, _name)
    if not hasattr(_builtins, _name):
        __all__.append(_name)
del _name, _native_module, _builtins

# Paddle's data side: paddle.batch, paddle.reader, paddle.dataset (pure Python, no file is read
# at import).
from chanflow._batch import batch  # noqa: E402
from chanflow import reader  # noqa: E402,F401
from chanflow import dataset  # noqa: E402,F401


def __getattr__(name):
    """``chanflow.fluid`` after a plain ``import chanflow`` (as ``paddle.fluid`` after
    ``import paddle``), imported on first access so ``import chanflow`` does not pay for it and
    chanflow.fluid's own ``import chanflow`` makes no cycle."""
    if name == "fluid":
        import importlib

        return importlib.import_module("chanflow.fluid")
    raise AttributeError("module 'chanflow' has no attribute %r" % (name,))
