"""Shared helpers of the Python suites: building small programs with Program.from_blocks.

Fluid's numbering: VarType element types BOOL 0, INT16 1, INT32 2, INT64 3, FP16 4, FP32 5,
FP64 6, UINT8 20, INT8 21; kinds LOD_TENSOR 7, CHANNEL 16.
"""
import os
import sys
import types

import pytest

VT = types.SimpleNamespace(BOOL=0, INT16=1, INT32=2, INT64=3, FP16=4, FP32=5, FP64=6, UINT8=20,
                           INT8=21, LOD_TENSOR=7, CHANNEL=16)

# NumPy dtype name -> Fluid VarType, for every chanflow dtype.
DTYPE_VT = {"bool": VT.BOOL, "int8": VT.INT8, "int16": VT.INT16, "int32": VT.INT32,
            "int64": VT.INT64, "uint8": VT.UINT8, "float16": VT.FP16, "float32": VT.FP32,
            "float64": VT.FP64}


def tvar(name, vt=VT.FP32, dims=()):
    return {"name": name, "type": VT.LOD_TENSOR, "data_type": vt, "dims": list(dims)}


def chvar(name, vt=VT.INT64, capacity=0):
    return {"name": name, "type": VT.CHANNEL, "data_type": vt, "capacity": capacity}


def op(type_, inputs=(), outputs=(), attrs=()):
    return {"type": type_, "inputs": list(inputs), "outputs": list(outputs), "attrs": list(attrs)}


def block(idx, parent, vars_=(), ops=()):
    return {"idx": idx, "parent_idx": parent, "vars": list(vars_), "ops": list(ops)}


def assign_program(vt):
    """y = assign(x), both of element type vt."""
    import chanflow
    return chanflow.Program.from_blocks([block(0, -1, [tvar("x", vt), tvar("y", vt)],
                                               [op("assign", [("X", ["x"])], [("Out", ["y"])])])])


def forever_program(ready_message="ready"):
    """Runs until stopped, without a deadlock: a go block spins in a `while` whose condition
    stays true while block 0 waits in a receive nobody answers. Prints `ready_message` (a line
    on stdout) once the go block started and just before block 0 blocks."""
    import chanflow
    b0 = block(0, -1, [chvar("ch"), tvar("cond", VT.BOOL, [1]), tvar("out", VT.INT64, [1]),
                       tvar("status", VT.BOOL)], [
        op("channel_create", outputs=[("Out", ["ch"])], attrs=[("data_type", VT.INT64),
                                                                ("capacity", 0)]),
        op("fill_constant", outputs=[("Out", ["cond"])],
           attrs=[("shape", [1]), ("dtype", VT.BOOL), ("value", 1.0)]),
        op("go", inputs=[("X", ["cond"])], attrs=[("sub_block", chanflow.BlockRef(1))]),
        op("print", inputs=[("In", ["cond"])],
           attrs=[("message", ready_message), ("print_tensor_name", False)]),
        op("channel_recv", inputs=[("Channel", ["ch"])],
           outputs=[("Out", ["out"]), ("Status", ["status"])]),
    ])
    b1 = block(1, 0, [], [op("while", inputs=[("X", ["cond"]), ("Condition", ["cond"])],
                              attrs=[("sub_block", chanflow.BlockRef(2))])])
    b2 = block(2, 1, [], [op("assign", [("X", ["cond"])], [("Out", ["cond"])])])
    return chanflow.Program.from_blocks([b0, b1, b2])


@pytest.fixture
def cf():
    import chanflow
    return chanflow


@pytest.fixture(scope="session")
def source_dir():
    d = os.environ.get("CHANFLOW_SOURCE_DIR")
    if d is None:
        d = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    return d


# The helpers are importable by the suites as `from conftest import ...` (pytest puts this
# directory on sys.path, rootdir-relative).
sys.path.insert(0, os.path.dirname(__file__))
