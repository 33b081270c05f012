"""chanflow: Go-style concurrency for tensor programs.

The native API (``chanflow._native``, one extension module over the C++ library):

- ``Tensor`` and ``tensor(obj, dtype=None)`` / ``from_dlpack(obj)``: zero-copy exchange with
  NumPy, PyTorch and any DLPack producer;
- ``Program`` (``from_text``, ``from_binary``, ``load``, ``from_blocks``) and ``op_schema``;
- ``Executor.run(program, feed, fetch, channels, timeout)``, with the GIL released while it runs;
- ``make_chan`` / ``Channel``, ``recv_case`` / ``send_case`` and ``select``: Go's channels, shared
  by Python threads, green threads and running programs;
- the error classes, all under ``chanflow.Error``.

``chanflow.fluid`` offers PaddlePaddle Fluid's API by its names on top of these.
"""

# NumPy first: its BLAS threads then exist when the native module loads, which is when chanflow's
# deadlock detection records the threads that were there before it (those never wake a waiter).
import numpy as _numpy  # noqa: F401

from chanflow._native import (  # noqa: F401
    BlockRef,
    CanceledError,
    Channel,
    ChannelClosedError,
    DeadlineExceededError,
    DeadlockError,
    Error,
    Executor,
    LimitError,
    MachineError,
    Program,
    ProgramError,
    SelectCase,
    ShapeError,
    Tensor,
    TypeError,
    __version__,
    from_dlpack,
    make_chan,
    op_schema,
    recv_case,
    select,
    send_case,
    tensor,
)

__all__ = [
    "BlockRef", "CanceledError", "Channel", "ChannelClosedError", "DeadlineExceededError", "DeadlockError",
    "Error", "Executor", "LimitError", "MachineError", "Program", "ProgramError", "SelectCase",
    "ShapeError", "Tensor", "TypeError", "from_dlpack", "make_chan", "op_schema", "recv_case",
    "select", "send_case", "tensor",
]
