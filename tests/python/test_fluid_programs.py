"""chanflow.fluid writes the programs Fluid's front end wrote.

tests/exec/fluid_programs/*.pbtxt are concurrent programs as Paddle Fluid's Python front end
wrote them (made by tests/exec/fluid_front_end.h, the C++ restatement of its emission rules, and
run by the C++ tests). Here the same programs are written with chanflow.fluid, in Fluid's own
style, and must be the very same ProgramDesc (structural equality of the native programs: every
block, variable, op, parameter and attribute), give the value Paddle's tests asserted when run
by fluid.Executor, and give the same fetched values when saved (text and binary) and run by the
`chanflow run` command.
"""

import os
import pathlib
import subprocess

import numpy as np
import pytest

import chanflow
import chanflow.fluid as fluid
from chanflow.fluid import core, unique_name
from chanflow.fluid.layers import (
    While,
    assign,
    elementwise_add,
    fill_constant,
    increment,
    less_than,
    Print,
)

VT = core.VarDesc.VarType
SOURCE_DIR = pathlib.Path(
    os.environ.get("CHANFLOW_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2])
)
PROGRAMS = SOURCE_DIR / "tests" / "exec" / "fluid_programs"


def chanflow_cli():
    """The `chanflow` command of the build the module under test comes from."""
    explicit = os.environ.get("CHANFLOW_CLI")
    if explicit:
        return pathlib.Path(explicit)
    build = pathlib.Path(chanflow.__file__).resolve().parents[2]  # <build>/python/chanflow
    return build / "tools" / "chanflow"


def block():
    return fluid.default_main_program().current_block()


def return_value(dtype, key="return_value"):
    """A variable for a received value, as Paddle's tests made them (_create_tensor)."""
    return block().create_var(name=unique_name.generate(key), type=VT.LOD_TENSOR, dtype=dtype)


def persistable(key, dtype):
    return block().create_var(
        name=unique_name.generate(key), type=VT.LOD_TENSOR, dtype=dtype, persistable=True
    )


def whisper(right, left):
    with fluid.Go():
        one = fill_constant(shape=[1], dtype="int", value=1)
        got = return_value(VT.INT64)
        fluid.channel_recv(right, got)
        fluid.channel_send(left, elementwise_add(x=one, y=got))


def simple_routine():
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR)
    result = return_value(VT.INT64)
    with fluid.Go():
        v = fill_constant(shape=[1], dtype=VT.FP64, value=1234)
        fluid.channel_send(ch, v)
    fluid.channel_recv(ch, result)
    fluid.channel_close(ch)
    return result


def go_op():
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=10)
    result = return_value(VT.INT64)
    with fluid.Go():
        fluid.channel_send(ch, fill_constant(shape=[1], dtype=VT.INT64, value=99))
    fluid.channel_recv(ch, result)
    fluid.channel_close(ch)
    return result


def daisy_chain(n=100):
    leftmost = fluid.make_channel(dtype=VT.LOD_TENSOR)
    left = leftmost
    right = None
    for _ in range(n):
        right = fluid.make_channel(dtype=VT.LOD_TENSOR)
        whisper(right, left)
        left = right
    with fluid.Go():
        fluid.channel_send(right, fill_constant(shape=[1], dtype=VT.INT64, value=1))
    result = return_value(VT.INT64)
    fluid.channel_recv(leftmost, result)
    return result


def daisy_chain_while(n=1000):
    leftmost = fluid.make_channel(dtype=VT.LOD_TENSOR)
    left = block().create_var(name=unique_name.generate("left"), type=VT.CHANNEL)
    assign(leftmost, left)
    i = fill_constant(shape=[1], dtype=VT.INT64, value=0)
    limit = fill_constant(shape=[1], dtype=VT.INT64, value=n)
    cond = less_than(x=i, y=limit)
    loop = While(cond=cond)
    with loop.block():
        right = fluid.make_channel(dtype=VT.LOD_TENSOR)
        whisper(right, left)
        assign(right, left)
        increment(x=i)
        less_than(x=i, y=limit, cond=cond)
    with fluid.Go():
        fluid.channel_send(left, fill_constant(shape=[1], dtype=VT.INT64, value=1))
    result = return_value(VT.INT64)
    fluid.channel_recv(leftmost, result)
    return result


def select_free_slot():
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=1)
    result = return_value(VT.FP64)
    value = fill_constant(shape=[1], dtype=VT.FP64, value=10)
    with fluid.Select() as select:
        with select.case(fluid.channel_send, ch, value):
            pass
        with select.default():
            pass
    fluid.channel_recv(ch, result)
    fluid.channel_close(ch)
    return result


def fibonacci():
    quit_input = persistable("quit_ch_input", VT.INT32)
    fill_constant(shape=[1], dtype=VT.INT32, value=0, out=quit_input)
    result = persistable("result", VT.INT32)
    fill_constant(shape=[1], dtype=VT.INT32, value=0, out=result)
    x = fill_constant(shape=[1], dtype=VT.INT32, value=0)
    y = fill_constant(shape=[1], dtype=VT.INT32, value=1)
    while_cond = fill_constant(shape=[1], dtype=VT.BOOL, value=True)
    while_false = fill_constant(shape=[1], dtype=VT.BOOL, value=False)
    x_tmp = fill_constant(shape=[1], dtype=VT.INT32, value=0)
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR)
    quit_ch = fluid.make_channel(dtype=VT.LOD_TENSOR)
    with fluid.Go():
        for _ in range(10):
            fluid.channel_recv(ch, result)
            Print(result)
        fluid.channel_send(quit_ch, quit_input)
    loop = While(cond=while_cond)
    with loop.block():
        got = fill_constant(shape=[1], dtype=VT.INT32, value=0)
        with fluid.Select() as select:
            with select.case(fluid.channel_send, ch, x, is_copy=True):
                assign(input=x, output=x_tmp)
                assign(input=y, output=x)
                assign(elementwise_add(x=x_tmp, y=y), output=y)
            with select.case(fluid.channel_recv, quit_ch, got):
                helper = fluid.layer_helper.LayerHelper("assign")
                helper.append_op(
                    type="assign", inputs={"X": [while_false]}, outputs={"Out": [while_cond]}
                )
    fluid.channel_close(ch)
    fluid.channel_close(quit_ch)
    return result


def ping_pong():
    result = return_value(VT.FP64)
    ping_result = return_value(VT.FP64, "ping_return_value")
    pings = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=1)
    pongs = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=1)
    msg = fill_constant(shape=[1], dtype=VT.FP64, value=9)
    fluid.channel_send(pings, msg, is_copy=True)
    fluid.channel_recv(pings, ping_result)
    fluid.channel_send(pongs, ping_result, is_copy=True)
    fluid.channel_recv(pongs, result)
    fluid.channel_close(pings)
    fluid.channel_close(pongs)
    return result


def select_in_go():
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=1)
    v = persistable("v", VT.INT64)
    fill_constant(shape=[1], dtype=VT.INT64, value=-1, out=v)
    w = persistable("w", VT.INT64)
    fill_constant(shape=[1], dtype=VT.INT64, value=-1, out=w)
    fluid.channel_send(ch, fill_constant(shape=[1], dtype=VT.INT64, value=5))
    with fluid.Go():
        with fluid.Select() as select:
            with select.case(fluid.channel_recv, ch, v):
                assign(elementwise_add(x=v, y=v), output=w)
    return v


# name -> (builder, the fetched variable's name, Paddle's value)
CASES = {
    "simple_routine": (simple_routine, "return_value_0", 1234),
    "go_op": (go_op, "return_value_0", 99),
    "daisy_chain": (daisy_chain, "return_value_100", 101),
    "daisy_chain_while": (daisy_chain_while, "return_value_1", 1001),
    "select_free_slot": (select_free_slot, "return_value_0", 10),
    "fibonacci": (fibonacci, "result_0", 34),
    "select_in_go": (select_in_go, "v_0", 5),
    "ping_pong": (ping_pong, "return_value_0", 9),
}


def build(name):
    """The case's program, built with fresh names (as the C++ writer numbers them)."""
    builder = CASES[name][0]
    program = fluid.Program()
    with unique_name.guard(), fluid.program_guard(program):
        fetched = builder()
    return program, fetched


def test_every_checked_in_program_has_a_case():
    assert sorted(p.stem for p in PROGRAMS.glob("*.pbtxt")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_program_as_fluids_front_end_wrote(name):
    program, fetched = build(name)
    assert fetched.name == CASES[name][1]
    expected = chanflow.Program.load(str(PROGRAMS / (name + ".pbtxt")))
    mine = program._native_program()
    if mine != expected:
        # Show where they differ: the text forms, line by line.
        a, b = mine.to_text().splitlines(), expected.to_text().splitlines()
        first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        pytest.fail(
            "%s differs from %s at line %d:\nmine:     %s\nexpected: %s"
            % (name, PROGRAMS / (name + ".pbtxt"), first + 1, a[first:][:3], b[first:][:3])
        )


@pytest.mark.parametrize("name", sorted(CASES))
def test_runs_to_paddles_value(name):
    program, fetched = build(name)
    out = fluid.Executor(core.CPUPlace()).run(program, fetch_list=[fetched])
    assert len(out) == 1
    assert out[0].shape == (1,)
    assert out[0][0] == CASES[name][2]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("suffix", [".pbtxt", ".pb"])
def test_chanflow_run_fetches_the_same_values(name, suffix, tmp_path):
    cli = chanflow_cli()
    if not cli.exists():
        pytest.fail(
            "the chanflow command is not built at %s (build the 'chanflow' target or set "
            "CHANFLOW_CLI)" % cli
        )
    program, fetched = build(name)
    path = tmp_path / (name + suffix)
    if suffix == ".pbtxt":
        program.save(str(path))
        assert path.read_text() == program.to_string(False)
    else:
        path.write_bytes(program.desc.serialize_to_string())
    out_dir = tmp_path / "out"
    proc = subprocess.run(
        [str(cli), "run", str(path), "--fetch", fetched.name, "--out", str(out_dir)]
        + ["--timeout", "60s"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    from_cli = np.load(out_dir / (fetched.name + ".npy"))
    (from_python,) = fluid.Executor(core.CPUPlace()).run(program, fetch_list=[fetched.name])
    assert from_cli.dtype == from_python.dtype
    np.testing.assert_array_equal(from_cli, from_python)
    assert from_python[0] == CASES[name][2]
