"""chanflow: Go-style concurrency for tensor programs.

The native API (``chanflow._native``, one extension module over the C++ library):

- ``Tensor`` and ``tensor(obj, dtype=None)`` / ``from_dlpack(obj)``: zero-copy exchange with
  NumPy, PyTorch and any DLPack producer;
- ``Program`` (``from_text``, ``from_binary``, ``load``, ``from_blocks``) and ``op_schema``;
- ``Executor.run(program, feed, fetch, timeout)``, with the GIL released while it runs;
- ``Function``, ``get_global_func``, ``register_func``, ``list_global_funcs``,
  ``remove_global_func``: the global function registry shared with C++ and the C ABI;
- the error classes, all under ``chanflow.Error``.

``chanflow.fluid`` offers PaddlePaddle Fluid's API by its names on top of these.
"""

# NumPy first: its BLAS threads then exist when the native module loads, which is when chanflow's
# deadlock detection records the threads that were there before it (those never wake a waiter).
import numpy as _numpy  # noqa: F401

from chanflow._native import (  # noqa: F401
    BlockRef,
    CanceledError,
    ChannelClosedError,
    DeadlineExceededError,
    DeadlockError,
    Error,
    Executor,
    Function,
    LimitError,
    MachineError,
    Program,
    ProgramError,
    ShapeError,
    Tensor,
    TypeError,
    __version__,
    from_dlpack,
    get_global_func,
    list_global_funcs,
    op_schema,
    register_func,
    remove_global_func,
    tensor,
)

__all__ = [
    "BlockRef", "CanceledError", "ChannelClosedError", "DeadlineExceededError", "DeadlockError",
    "Error", "Executor", "LimitError", "MachineError", "Program", "ProgramError", "ShapeError",
    "Tensor", "TypeError", "from_dlpack", "op_schema", "tensor",
    "Function", "get_global_func", "list_global_funcs", "register_func", "remove_global_func",
]
