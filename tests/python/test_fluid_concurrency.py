"""What Paddle's concurrency tests checked (a go routine, a daisy chain, select, fibonacci,
ping-pong), written with chanflow.fluid with other values, dtypes and shapes, plus the
behaviours around them: select's default and random choice, closed channels, is_copy, channels
of channels, feeds, nested go blocks and repeated runs.
"""

import numpy as np
import pytest

import chanflow.fluid as fluid
from chanflow.fluid import core, layers, unique_name
from chanflow.fluid.layers import (
    While,
    assign,
    elementwise_add,
    fill_constant,
    increment,
    less_than,
)

VT = core.VarDesc.VarType


def new_var(name, dtype, shape=None, type=VT.LOD_TENSOR, persistable=None):
    return fluid.default_main_program().current_block().create_var(
        name=unique_name.generate(name),
        type=type,
        dtype=dtype,
        shape=shape,
        persistable=persistable,
    )


def run(program, fetch, feed=None):
    return fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, fetch_list=fetch)


@pytest.fixture
def program():
    p = fluid.Program()
    with fluid.program_guard(p):
        yield p


def test_go_block_sends_a_matrix_block0_receives_it(program):
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR)
    got = new_var("got", VT.FP32)
    with fluid.Go():
        value = fill_constant(shape=[2, 3], dtype="float32", value=2.5)
        fluid.channel_send(ch, value)
    got, status = fluid.channel_recv(ch, got)
    fluid.channel_close(ch)
    out, ok = run(program, [got, status])
    np.testing.assert_array_equal(out, np.full((2, 3), 2.5, np.float32))
    assert out.dtype == np.float32
    assert ok.tolist() == [True]


def test_received_variable_takes_the_dtype_sent_on_a_lod_tensor_channel(program):
    # Paddle's test_simple_routine: declared INT64, receives FP64 (Fluid did not check it).
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR)
    got = new_var("got", VT.INT64)
    with fluid.Go():
        fluid.channel_send(ch, fill_constant(shape=[1], dtype=VT.FP64, value=-7.25))
    fluid.channel_recv(ch, got)
    (out,) = run(program, [got])
    assert out.dtype == np.float64 and out.tolist() == [-7.25]


@pytest.mark.parametrize("n", [1, 37])
def test_daisy_chain_built_by_a_python_loop(program, n):
    leftmost = fluid.make_channel(dtype=VT.LOD_TENSOR)
    left = leftmost
    for _ in range(n):
        right = fluid.make_channel(dtype=VT.LOD_TENSOR)
        with fluid.Go():
            three = fill_constant(shape=[1], dtype="int32", value=3)
            got = new_var("got", VT.INT32)
            fluid.channel_recv(right, got)
            fluid.channel_send(left, elementwise_add(x=three, y=got))
        left = right
    with fluid.Go():
        fluid.channel_send(right, fill_constant(shape=[1], dtype="int32", value=5))
    result = new_var("result", VT.INT32)
    fluid.channel_recv(leftmost, result)
    (out,) = run(program, [result])
    assert out.dtype == np.int32 and out.tolist() == [5 + 3 * n]


def test_daisy_chain_built_by_a_while_loop(program):
    n = 250
    leftmost = fluid.make_channel(dtype=VT.LOD_TENSOR)
    left = new_var("left", None, type=VT.CHANNEL)
    assign(leftmost, left)
    i = fill_constant(shape=[1], dtype="int64", value=0)
    limit = fill_constant(shape=[1], dtype="int64", value=n)
    cond = less_than(x=i, y=limit)
    loop = While(cond=cond)
    with loop.block():
        right = fluid.make_channel(dtype=VT.LOD_TENSOR)
        with fluid.Go():
            two = fill_constant(shape=[1], dtype="float64", value=2)
            got = new_var("got", VT.FP64)
            fluid.channel_recv(right, got)
            fluid.channel_send(left, elementwise_add(x=two, y=got))
        assign(right, left)
        increment(x=i)
        less_than(x=i, y=limit, cond=cond)
    with fluid.Go():
        fluid.channel_send(left, fill_constant(shape=[1], dtype="float64", value=0.5))
    result = new_var("result", VT.FP64)
    fluid.channel_recv(leftmost, result)
    out, count = run(program, [result, i])
    assert out.tolist() == [0.5 + 2 * n]
    assert count.tolist() == [n]


def _flag(value=0):
    return fill_constant(shape=[1], dtype="int32", value=value)


def test_select_sends_into_a_free_buffer_slot(program):
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=2)
    value = fill_constant(shape=[3], dtype="int64", value=-4)
    ran = _flag()
    with fluid.Select() as select:
        with select.case(fluid.channel_send, ch, value):
            assign(fill_constant(shape=[1], dtype="int32", value=1), ran)
        with select.default():
            assign(fill_constant(shape=[1], dtype="int32", value=2), ran)
    got = new_var("got", VT.INT64)
    fluid.channel_recv(ch, got)
    out, which, chosen = run(program, [got, ran, select.case_to_execute])
    assert out.tolist() == [-4, -4, -4]
    assert which.tolist() == [1]
    assert chosen.tolist() == [0]


def test_select_takes_default_when_no_case_is_ready(program):
    unbuffered = fluid.make_channel(dtype=VT.LOD_TENSOR)
    empty = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=1)
    value = fill_constant(shape=[1], dtype="float32", value=1)
    into = new_var("into", VT.FP32)
    ran = _flag()
    with fluid.Select() as select:
        with select.case(fluid.channel_send, unbuffered, value):
            assign(fill_constant(shape=[1], dtype="int32", value=1), ran)
        with select.case(fluid.channel_recv, empty, into):
            assign(fill_constant(shape=[1], dtype="int32", value=2), ran)
        with select.default():
            assign(fill_constant(shape=[1], dtype="int32", value=3), ran)
    which, chosen = run(program, [ran, select.case_to_execute])
    assert which.tolist() == [3]
    assert chosen.tolist() == [2]


def test_select_receive_case_writes_the_value_then_runs_its_body(program):
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=1)
    fluid.channel_send(ch, fill_constant(shape=[2], dtype="int32", value=20))
    got = new_var("got", VT.INT32, persistable=True)
    fill_constant(shape=[2], dtype="int32", value=0, out=got)
    doubled = new_var("doubled", VT.INT32)
    fill_constant(shape=[2], dtype="int32", value=0, out=doubled)
    with fluid.Select() as select:
        with select.case(fluid.channel_recv, ch, got):
            assign(elementwise_add(x=got, y=got), doubled)
    g, d = run(program, [got, doubled])
    assert g.tolist() == [20, 20] and d.tolist() == [40, 40]


def test_select_picks_among_ready_cases_at_random(program):
    # Both channels always hold a value: over 200 selects each case must be taken (the chance
    # that a uniform choice never takes one of them is 2 * 2^-200).
    a = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=1)
    b = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=1)
    one = fill_constant(shape=[1], dtype="int64", value=1)
    fluid.channel_send(a, one, is_copy=True)
    fluid.channel_send(b, one, is_copy=True)
    from_a = fill_constant(shape=[1], dtype="int64", value=0)
    from_b = fill_constant(shape=[1], dtype="int64", value=0)
    got = fill_constant(shape=[1], dtype="int64", value=0)
    i = fill_constant(shape=[1], dtype="int64", value=0)
    limit = fill_constant(shape=[1], dtype="int64", value=200)
    cond = less_than(x=i, y=limit)
    loop = While(cond=cond)
    with loop.block():
        with fluid.Select() as select:
            with select.case(fluid.channel_recv, a, got):
                increment(x=from_a)
                fluid.channel_send(a, got)
            with select.case(fluid.channel_recv, b, got):
                increment(x=from_b)
                fluid.channel_send(b, got)
        increment(x=i)
        less_than(x=i, y=limit, cond=cond)
    na, nb = run(program, [from_a, from_b])
    assert na[0] + nb[0] == 200
    assert na[0] > 0 and nb[0] > 0


def fibonacci_program(count):
    quit_input = new_var("quit_input", VT.INT64, persistable=True)
    fill_constant(shape=[1], dtype="int64", value=0, out=quit_input)
    result = new_var("result", VT.INT64, persistable=True)
    fill_constant(shape=[1], dtype="int64", value=-1, out=result)
    x = fill_constant(shape=[1], dtype="int64", value=0)
    y = fill_constant(shape=[1], dtype="int64", value=1)
    while_cond = fill_constant(shape=[1], dtype="bool", value=True)
    while_false = fill_constant(shape=[1], dtype="bool", value=False)
    x_tmp = fill_constant(shape=[1], dtype="int64", value=0)
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR)
    quit_ch = fluid.make_channel(dtype=VT.LOD_TENSOR)
    with fluid.Go():
        for _ in range(count):
            fluid.channel_recv(ch, result)
            layers.Print(result, message="fib")
        fluid.channel_send(quit_ch, quit_input)
    loop = While(cond=while_cond)
    with loop.block():
        got = fill_constant(shape=[1], dtype="int64", value=0)
        with fluid.Select() as select:
            with select.case(fluid.channel_send, ch, x, is_copy=True):
                assign(input=x, output=x_tmp)
                assign(input=y, output=x)
                assign(elementwise_add(x=x_tmp, y=y), output=y)
            with select.case(fluid.channel_recv, quit_ch, got):
                fluid.layer_helper.LayerHelper("assign").append_op(
                    type="assign", inputs={"X": [while_false]}, outputs={"Out": [while_cond]}
                )
    fluid.channel_close(ch)
    fluid.channel_close(quit_ch)
    return result, x


def test_fibonacci_over_select_prints_each_value(program, capfd):
    result, x = fibonacci_program(15)
    last, x_after = run(program, [result, x])
    fib = [0, 1]
    while len(fib) < 16:
        fib.append(fib[-1] + fib[-2])
    assert last.tolist() == [fib[14]]  # 377
    assert x_after.tolist() == [fib[15]]  # the value whose send was not received
    printed = [line for line in capfd.readouterr().out.splitlines() if "fib" in line]
    assert len(printed) == 15
    for line, value in zip(printed, fib):
        assert ("[%d]" % value) in line, line


def test_ping_pong_of_an_int32_vector(program):
    pings = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=1)
    pongs = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=1)
    ping_result = new_var("ping_result", VT.INT32)
    result = new_var("result", VT.INT32)
    msg = new_var("msg", VT.INT32, shape=[3])
    fluid.channel_send(pings, msg, is_copy=True)
    fluid.channel_recv(pings, ping_result)
    fluid.channel_send(pongs, ping_result, is_copy=True)
    fluid.channel_recv(pongs, result)
    fluid.channel_close(pings)
    fluid.channel_close(pongs)
    (out,) = run(program, [result], feed={msg.name: np.array([3, -1, 4], np.int32)})
    assert out.tolist() == [3, -1, 4] and out.dtype == np.int32


def test_is_copy_sends_the_value_before_later_writes(program):
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=1)
    x = fill_constant(shape=[1], dtype="int64", value=1)
    fluid.channel_send(ch, x, is_copy=True)
    fill_constant(shape=[1], dtype="int64", value=7, out=x)
    got = new_var("got", VT.INT64)
    fluid.channel_recv(ch, got)
    g, now = run(program, [got, x])
    assert g.tolist() == [1] and now.tolist() == [7]
    copies = [n for n in program.global_block().vars if n.startswith(x.name + "_copy_")]
    assert len(copies) == 1


def test_receive_from_a_closed_channel_gives_zero_and_status_false(program):
    ch = fluid.make_channel(dtype="float64", capacity=3)
    fluid.channel_send(ch, fill_constant(shape=[1], dtype="float64", value=8))
    fluid.channel_close(ch)
    first = new_var("first", VT.FP64)
    second = new_var("second", VT.FP64)
    first, ok1 = fluid.channel_recv(ch, first)
    second, ok2 = fluid.channel_recv(ch, second)
    a, s1, b, s2 = run(program, [first, ok1, second, ok2])
    assert a.tolist() == [8.0] and s1.tolist() == [True]
    assert b.tolist() == [0.0] and s2.tolist() == [False]


def test_channel_of_channels(program):
    # A go block receives a reply channel and answers on it (Go's request/response idiom).
    requests = fluid.make_channel(dtype=VT.CHANNEL)
    reply = fluid.make_channel(dtype=VT.LOD_TENSOR)
    with fluid.Go():
        back = new_var("back", None, type=VT.CHANNEL)
        fluid.channel_recv(requests, back)
        fluid.channel_send(back, fill_constant(shape=[1], dtype="int32", value=42))
    fluid.channel_send(requests, reply)
    answer = new_var("answer", VT.INT32)
    fluid.channel_recv(reply, answer)
    (out,) = run(program, [answer])
    assert out.tolist() == [42]


def test_nested_go_blocks_pass_a_fed_value_through(program):
    x = new_var("x", VT.FP32, shape=[4])
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR)
    with fluid.Go():
        inner = fluid.make_channel(dtype=VT.LOD_TENSOR)
        with fluid.Go():
            fluid.channel_send(inner, elementwise_add(x=x, y=x))
        got = new_var("got", VT.FP32)
        fluid.channel_recv(inner, got)
        fluid.channel_send(ch, got)
    out = new_var("out", VT.FP32)
    fluid.channel_recv(ch, out)
    feed = np.array([1, 2, 3, 4.5], np.float32)
    (o,) = run(program, [out], feed={x: feed})
    np.testing.assert_array_equal(o, feed * 2)
    go_ops = [op for b in program.blocks for op in b.ops if op.type == "go"]
    assert len(go_ops) == 2
    # The outer go block reads x (through the inner go op's X) and ch: its arguments.
    outer = [op for op in go_ops if op.block.idx == 0][0]
    assert sorted(outer.input("X")) == sorted([x.name, ch.name])


def test_running_again_makes_new_channels_and_gives_the_same_result(program):
    result, _ = fibonacci_program(6)
    exe = fluid.Executor(fluid.CPUPlace())
    first = exe.run(program, fetch_list=[result])
    second = exe.run(program, fetch_list=[result])
    assert first[0].tolist() == second[0].tolist() == [5]


def test_go_block_writes_to_an_enclosing_variable_it_did_not_read_are_shared(program):
    # A go block that receives into a block 0 variable (writes it before reading it) shares it,
    # as a Go closure and Fluid's scopes did: the value is there after the run.
    ch = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=1)
    shared = new_var("shared", VT.INT64, persistable=True)
    fill_constant(shape=[1], dtype="int64", value=-1, out=shared)
    fluid.channel_send(ch, fill_constant(shape=[1], dtype="int64", value=11))
    done = fluid.make_channel(dtype=VT.LOD_TENSOR)
    with fluid.Go():
        fluid.channel_recv(ch, shared)
        fluid.channel_send(done, fill_constant(shape=[1], dtype="bool", value=True))
    ack = new_var("ack", VT.BOOL)
    fluid.channel_recv(done, ack)
    (out,) = run(program, [shared])
    assert out.tolist() == [11]
