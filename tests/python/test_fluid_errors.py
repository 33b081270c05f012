"""Misuse of chanflow.fluid raises a clear, typed exception naming what and where, at the call
that makes the mistake when it can be seen there, else from the run (chanflow's errors) --
never a crash or a hang."""

import numpy as np
import pytest

import chanflow
import chanflow.fluid as fluid
from chanflow.fluid import core, layers, unique_name
from chanflow.fluid.layers import While, fill_constant

VT = core.VarDesc.VarType


@pytest.fixture
def program():
    p = fluid.Program()
    with fluid.program_guard(p):
        yield p


def tensor(name, dtype="int64", shape=None):
    return fluid.default_main_program().current_block().create_var(
        name=unique_name.generate(name), dtype=dtype, shape=shape
    )


# ---- Select ---------------------------------------------------------------------------------


def test_select_case_takes_only_channel_send_or_channel_recv(program):
    ch = fluid.make_channel(VT.LOD_TENSOR)
    x = fill_constant([1], "int64", 1)
    with pytest.raises(TypeError, match="channel_send or fluid.channel_recv"):
        with fluid.Select() as select:
            with select.case(fluid.channel_close, ch, x):
                pass


def test_select_case_outside_its_select(program):
    ch = fluid.make_channel(VT.LOD_TENSOR)
    x = fill_constant([1], "int64", 1)
    select = fluid.Select()
    with pytest.raises(ValueError, match="select.case must be written directly inside"):
        select.case(fluid.channel_send, ch, x)
    with select:
        with select.default():
            pass
    with pytest.raises(ValueError, match="select.case must be written directly inside"):
        select.case(fluid.channel_send, ch, x)
    assert program.current_block().idx == 0


def test_select_case_inside_another_case(program):
    ch = fluid.make_channel(VT.LOD_TENSOR)
    x = fill_constant([1], "int64", 1)
    with pytest.raises(ValueError, match="directly inside"):
        with fluid.Select() as select:
            with select.case(fluid.channel_send, ch, x):
                with select.default():
                    pass
    assert program.current_block().idx == 0


def test_select_two_defaults(program):
    with pytest.raises(ValueError, match="at most one default"):
        with fluid.Select() as select:
            with select.default():
                pass
            with select.default():
                pass


def test_select_case_made_but_not_written(program):
    ch = fluid.make_channel(VT.LOD_TENSOR)
    x = fill_constant([1], "int64", 1)
    with pytest.raises(ValueError, match="case 0 was made but not written"):
        with fluid.Select() as select:
            select.case(fluid.channel_send, ch, x)


def test_select_case_on_a_non_channel(program):
    x = fill_constant([1], "int64", 1)
    with pytest.raises(TypeError, match="variable 'fill_constant_.*' is not a channel"):
        with fluid.Select() as select:
            with select.case(fluid.channel_recv, x, x):
                pass


def test_select_case_is_copy_on_a_receive(program):
    ch = fluid.make_channel(VT.LOD_TENSOR)
    x = fill_constant([1], "int64", 1)
    with pytest.raises(ValueError, match="is_copy applies to a send case only"):
        with fluid.Select() as select:
            select.case(fluid.channel_recv, ch, x, is_copy=True)


def test_an_exception_in_a_block_body_closes_the_blocks(program):
    ch = fluid.make_channel(VT.LOD_TENSOR)
    with pytest.raises(ZeroDivisionError):
        with fluid.Go():
            with fluid.Select() as select:
                with select.case(fluid.channel_recv, ch, fill_constant([1], "int64", 0)):
                    1 / 0
    assert program.current_block().idx == 0
    # Nothing was appended to block 0 for the abandoned go block.
    assert [op.type for op in program.global_block().ops] == ["channel_create"]


# ---- channels -------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", ["send", "recv", "close"])
def test_channel_ops_on_a_non_channel(program, fn):
    x = fill_constant([1], "int64", 1)
    call = {
        "send": lambda: fluid.channel_send(x, x),
        "recv": lambda: fluid.channel_recv(x, x),
        "close": lambda: fluid.channel_close(x),
    }[fn]
    expected = "channel_%s: variable '%s' is not a channel" % (fn, x.name)
    with pytest.raises(TypeError, match=expected):
        call()
    with pytest.raises(TypeError, match="must be a channel Variable"):
        fluid.channel_close("not a variable")


def test_channel_send_of_a_python_value(program):
    ch = fluid.make_channel(VT.LOD_TENSOR)
    with pytest.raises(TypeError, match="channel_send: value must be a Variable, got 100"):
        fluid.channel_send(ch, 100)


def test_channel_recv_into_a_python_value(program):
    ch = fluid.make_channel(VT.LOD_TENSOR)
    with pytest.raises(TypeError, match="return_value must be a Variable"):
        fluid.channel_recv(ch, "int32")


@pytest.mark.parametrize(
    "dtype,capacity,error,message",
    [
        ("complex64", 0, TypeError, "Not supported numpy dtype complex64"),
        (VT.STEP_SCOPES, 0, TypeError, "neither an element type, LOD_TENSOR nor CHANNEL"),
        (VT.LOD_TENSOR, -1, ValueError, "capacity must be an int >= 0, got -1"),
        (VT.LOD_TENSOR, 1.5, ValueError, "capacity must be an int >= 0, got 1.5"),
    ],
)
def test_make_channel_bad_arguments(program, dtype, capacity, error, message):
    with pytest.raises(error, match=message):
        fluid.make_channel(dtype, capacity)


# ---- variables, ops, blocks ------------------------------------------------------------------


def test_a_variable_of_another_program(program):
    other = fluid.Program()
    with fluid.program_guard(other):
        foreign = fill_constant([1], "int64", 1)
    ch = fluid.make_channel(VT.LOD_TENSOR)
    with pytest.raises(ValueError, match="variable '%s' belongs to another Program" % foreign.name):
        fluid.channel_send(ch, foreign)
    with pytest.raises(ValueError, match="belongs to another Program"):
        layers.elementwise_add(foreign, foreign)


def test_a_variable_of_a_sibling_block(program):
    with fluid.Go():
        inner = fill_constant([1], "int64", 1)
    ch = fluid.make_channel(VT.LOD_TENSOR)
    expected = "'%s' is declared in block 1, which block 0 cannot see" % inner.name
    with pytest.raises(ValueError, match=expected):
        fluid.channel_send(ch, inner)


def test_an_unregistered_op(program):
    with pytest.raises(ValueError, match='block 0, op 0: Operator "fc" has not been registered'):
        program.global_block().append_op(type="fc", inputs={}, outputs={})


def test_an_unknown_parameter_or_attribute(program):
    x = fill_constant([1], "int64", 1)
    block = program.global_block()
    with pytest.raises(ValueError, match=r"\('assign'\): op 'assign' has no input parameter 'Y'"):
        block.append_op(type="assign", inputs={"X": x, "Y": x}, outputs={"Out": x})
    with pytest.raises(ValueError, match="op 'assign' has no output parameter 'Status'"):
        block.append_op(type="assign", inputs={"X": x}, outputs={"Status": x})
    with pytest.raises(ValueError, match="op 'assign' has no attribute 'scale'"):
        block.append_op(type="assign", inputs={"X": x}, outputs={"Out": x}, attrs={"scale": 2.0})
    with pytest.raises(ValueError, match="no variable 'nowhere' is visible from block 0"):
        block.append_op(type="assign", inputs={"X": "nowhere"}, outputs={"Out": x})


def test_an_attribute_of_the_wrong_type_fails_when_converted(program):
    x = program.global_block().create_var(name="x", dtype="int64")
    program.global_block().append_op(
        type="fill_constant", outputs={"Out": x}, attrs={"shape": [1], "dtype": 3, "value": "high"}
    )
    with pytest.raises(chanflow.TypeError, match="value"):
        program.to_string()


def test_create_var_again_with_other_arguments(program):
    block = program.global_block()
    block.create_var(name="v", dtype="int64", shape=[2])
    assert block.create_var(name="v", dtype="int64") is block.var("v")
    with pytest.raises(ValueError, match="'v' has been created before in block 0 with dtype"):
        block.create_var(name="v", dtype="float32")
    with pytest.raises(ValueError, match="shape"):
        block.create_var(name="v", shape=[3])


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        (dict(dtype="complex128"), ValueError, "Not supported numpy dtype"),
        (dict(dtype=VT.LOD_TENSOR), ValueError, "is not an element type"),
        (dict(dtype="int64", shape="ab"), TypeError, "shape must be a sequence of ints"),
        (dict(dtype="int64", shape=[-2]), ValueError, "dimension below -1"),
        (dict(type=99), ValueError, "99 is not a VarType value"),
        (dict(name=""), TypeError, "non-empty str"),
        (dict(colour="red"), TypeError, "unexpected arguments: colour"),
    ],
)
def test_create_var_bad_arguments(program, kwargs, error, message):
    kwargs.setdefault("name", "w")
    with pytest.raises(error, match=message):
        program.global_block().create_var(**kwargs)


def test_go_block_reading_its_own_unwritten_variable(program):
    expected = "reads variable 'u' before writing it, but no enclosing block declares it"
    with pytest.raises(ValueError, match=expected):
        with fluid.Go():
            u = fluid.default_main_program().current_block().create_var(name="u", dtype="int64")
            layers.Print(u)
    assert program.current_block().idx == 0


def test_block_left_open_inside_a_go_block(program):
    expected = "fluid.Go: the current block is block 2, not the block 1 it opened"
    with pytest.raises(ValueError, match=expected):
        with fluid.Go():
            program.create_block()
    assert program.current_block().idx == 0


def test_rollback_from_block_0_and_block_out_of_range(program):
    with pytest.raises(ValueError, match="block 0, which has no parent"):
        program.rollback()
    with pytest.raises(IndexError, match="block 3: the program has 1 blocks"):
        program.block(3)


# ---- layers ---------------------------------------------------------------------------------


def test_while_condition_must_be_a_bool_scalar(program):
    with pytest.raises(TypeError, match="condition should be a variable"):
        While(cond=True)
    with pytest.raises(TypeError, match="should be a bool variable"):
        While(cond=fill_constant([1], "int64", 1))
    with pytest.raises(TypeError, match=r"should be a bool scalar, its shape is \(2,\)"):
        While(cond=fill_constant([2], "bool", True))


def test_while_block_entered_twice(program):
    cond = fill_constant([1], "bool", False)
    loop = While(cond=cond)
    with loop.block():
        pass
    with pytest.raises(ValueError, match="entered once per While"):
        with loop.block():
            pass
    assert program.current_block().idx == 0


def test_fill_constant_bad_arguments(program):
    with pytest.raises(TypeError, match="shape must be a list of ints"):
        fill_constant(shape=3, dtype="int64", value=1)
    with pytest.raises(TypeError, match="value must be a number"):
        fill_constant(shape=[1], dtype="int64", value="1")
    with pytest.raises(ValueError, match="Not supported numpy dtype"):
        fill_constant(shape=[1], dtype="str", value=1)
    untyped = program.global_block().create_var(name="untyped")
    with pytest.raises(ValueError, match="out variable 'untyped' declares no dtype"):
        fill_constant(shape=[1], dtype="int64", value=1, out=untyped)


def test_assign_of_a_numpy_array(program):
    with pytest.raises(TypeError, match="assign_value"):
        layers.assign(np.ones(3))


def test_print_phase(program):
    with pytest.raises(ValueError, match="print_phase must be"):
        layers.Print(fill_constant([1], "int64", 1), print_phase="sideways")


def test_elementwise_of_a_non_variable(program):
    with pytest.raises(TypeError, match="elementwise_mul: y must be a Variable, got 2"):
        layers.elementwise_mul(fill_constant([1], "int64", 1), 2)


def test_activation_that_is_not_an_op(program):
    x = fill_constant([1], "float32", 1)
    with pytest.raises(ValueError, match='Operator "swish" has not been registered'):
        layers.elementwise_add(x, x, act="swish")


# ---- executor -------------------------------------------------------------------------------


def test_executor_place_must_be_the_cpu():
    with pytest.raises(TypeError, match="CPU only"):
        fluid.Executor("gpu:0")


def test_fetch_of_an_unknown_name(program):
    fill_constant([1], "int64", 1)
    with pytest.raises(chanflow.Error, match="fetch 'missing': block 0 declares no such variable"):
        fluid.Executor(fluid.CPUPlace()).run(program, fetch_list=["missing"])


def test_fetch_of_a_variable_of_another_program_or_block(program):
    with fluid.Go():
        inner = fill_constant([1], "int64", 1)
    other = fluid.Program()
    with fluid.program_guard(other):
        foreign = fill_constant([1], "int64", 1)
    exe = fluid.Executor(fluid.CPUPlace())
    expected = r"fetch_list\[0\] is variable '%s' of another Program" % foreign.name
    with pytest.raises(ValueError, match=expected):
        exe.run(program, fetch_list=[foreign])
    expected = r"fetch_list\[1\] is variable '%s' of block 1" % inner.name
    with pytest.raises(ValueError, match=expected):
        exe.run(program, fetch_list=[inner.name, inner])
    with pytest.raises(TypeError, match="fetch_list must be a list"):
        exe.run(program, fetch_list=inner)


def test_feed_of_the_wrong_dtype_or_an_unknown_name(program):
    x = tensor("x", "float32", [2])
    y = layers.elementwise_add(x, x)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(chanflow.TypeError, match="feed '%s'" % x.name):
        exe.run(program, feed={x.name: np.zeros(2, np.int64)}, fetch_list=[y])
    with pytest.raises(chanflow.Error, match="nope"):
        exe.run(program, feed={"nope": np.zeros(2, np.float32)}, fetch_list=[y])
    # A Python list takes the declared dtype.
    (out,) = exe.run(program, feed={x.name: [1.5, 2]}, fetch_list=[y])
    assert out.dtype == np.float32 and out.tolist() == [3.0, 4.0]


def test_deadlock_is_reported_naming_the_waiting_op(program):
    ch = fluid.make_channel(VT.LOD_TENSOR)
    fluid.channel_recv(ch, tensor("r"))
    with pytest.raises(chanflow.DeadlockError, match=r"block 0, op 1 \('channel_recv'\)"):
        fluid.Executor(fluid.CPUPlace()).run(program)


def test_timeout(program):
    # A go block keeps the program alive (blocked on a channel nobody sends on) while block 0
    # waits on another: with a timer pending it is not a deadlock, and the timeout ends it.
    ch = fluid.make_channel(VT.LOD_TENSOR)
    fluid.channel_recv(ch, tensor("r"))
    with pytest.raises(chanflow.DeadlineExceededError, match="channel_recv"):
        fluid.Executor(fluid.CPUPlace()).run(program, timeout=0.2)


def test_send_on_a_closed_channel(program):
    ch = fluid.make_channel(VT.LOD_TENSOR, capacity=1)
    fluid.channel_close(ch)
    fluid.channel_send(ch, fill_constant([1], "int64", 1))
    with pytest.raises(chanflow.ProgramError, match="send on closed channel") as info:
        fluid.Executor(fluid.CPUPlace()).run(program)
    assert (info.value.block, info.value.op, info.value.op_type) == (0, 3, "channel_send")


def test_typed_channel_rejects_another_dtype(program):
    ch = fluid.make_channel("float64")
    with fluid.Go():
        fluid.channel_send(ch, fill_constant([1], "int64", 3))
    fluid.channel_recv(ch, tensor("r", "float64"))
    with pytest.raises(chanflow.ProgramError, match="carries FP64 tensors") as info:
        fluid.Executor(fluid.CPUPlace()).run(program)
    assert info.value.block == 1 and info.value.op_type == "channel_send"


def test_scope_argument(program):
    with pytest.raises(TypeError, match="scope must be a fluid.core.Scope"):
        fluid.Executor(fluid.CPUPlace()).run(program, scope=object())


def test_closed_executor(program):
    exe = fluid.Executor(fluid.CPUPlace())
    exe.close()
    with pytest.raises(RuntimeError, match="closed Executor"):
        exe.run(program)


def test_program_guard_takes_a_program():
    with pytest.raises(TypeError, match="main_program should be Program"):
        with fluid.program_guard("main"):
            pass
