"""Fluid's "go_op Design" document, its "How to use it" listing completed into a program written
with chanflow.fluid and run.

The listing (verbatim but for its typo: it receives from `ch`, the channel is `channel`)::

    channel = fluid.make_channel(dtype=core.VarDesc.VarType.LOD_TENSOR)

    with fluid.Go():
        # Send a tensor of value 99 to "channel" on a detached thread
        tensor = fill_constant(shape=[1], dtype='int', value=99)
        tensor.stop_gradient = True
        fluid.channel_send(channel, tensor)

    # Receive sent tensor from "channel" on the main thread
    result = fill_constant(shape=[1], dtype='int', value=-1)
    fluid.channel_recv(ch, result)

The design's "How it Works" says what the program looks like: a `go` op in block 0 with a
`sub_block` attribute naming block 1 (a child of block 0) and the channel in its `X`; block 1
holds the `fill_constant` (dtype INT64, value 99, shape [1], force_cpu false) and the
`channel_send` (copy false); block 0 creates the channel (`channel_create`, data_type
LOD_TENSOR, capacity 0) and receives into `result` with a BOOL status. The design's listing also
shows a `Status` output on `channel_send`: that is an earlier operator than the one Fluid's
`concurrency.py` wrote (no outputs), which is what chanflow.fluid writes.

"Current Limitations" says a go block may outlive the block that started it only if the
variables it uses are not destroyed first (Paddle issue 8502); chanflow's scopes keep them alive,
which the last test shows.
"""

import chanflow.fluid as fluid
from chanflow.fluid import core
from chanflow.fluid.layers import fill_constant

VT = core.VarDesc.VarType


def build_listing():
    program = fluid.Program()
    with fluid.program_guard(program):
        channel = fluid.make_channel(dtype=core.VarDesc.VarType.LOD_TENSOR)

        with fluid.Go():
            # Send a tensor of value 99 to "channel" on a detached thread
            tensor = fill_constant(shape=[1], dtype="int", value=99)
            tensor.stop_gradient = True
            fluid.channel_send(channel, tensor)

        # Receive sent tensor from "channel" on the main thread
        result = fill_constant(shape=[1], dtype="int", value=-1)
        fluid.channel_recv(channel, result)
    return program, channel, tensor, result


def test_the_listing_receives_99_on_the_main_thread():
    program, _, _, result = build_listing()
    (out,) = fluid.Executor(core.CPUPlace()).run(program, fetch_list=[result])
    assert out.tolist() == [99]
    assert out.dtype.name == "int64"  # dtype='int' is INT64, as Fluid converted it


def test_the_program_is_the_one_the_design_describes():
    program, channel, tensor, result = build_listing()
    assert program.num_blocks == 2
    block0, block1 = program.global_block(), program.block(1)
    assert block1.parent_idx == 0

    create, go, fill_result, recv = block0.ops
    assert create.type == "channel_create"
    assert create.output("Out") == [channel.name]
    assert (create.attr("data_type"), create.attr("capacity")) == (VT.LOD_TENSOR, 0)
    assert channel.type == VT.CHANNEL and channel.persistable

    assert go.type == "go"
    assert go.input("X") == [channel.name]
    assert go.attr("sub_block") is block1
    assert go.output_names == []

    assert fill_result.type == "fill_constant" and fill_result.output("Out") == [result.name]
    assert recv.type == "channel_recv"
    assert recv.input("Channel") == [channel.name]
    assert recv.output("Out") == [result.name]
    (status,) = recv.output("Status")
    assert block0.var(status).dtype == VT.BOOL

    fill, send = block1.ops
    assert fill.type == "fill_constant"
    assert fill.output("Out") == [tensor.name]
    assert (fill.attr("dtype"), fill.attr("value"), fill.attr("shape"), fill.attr("force_cpu")) == (
        VT.INT64,
        99.0,
        [1],
        False,
    )
    assert tensor.name in block1.vars  # the go block's own variable
    assert send.type == "channel_send"
    assert send.input("Channel") == [channel.name] and send.input("X") == [tensor.name]
    assert send.attr("copy") is False
    assert send.output_names == []


def test_the_program_text_has_the_designs_go_op():
    program, channel, _, _ = build_listing()
    text = program.to_string(throw_on_error=False)
    go_op = text[text.index('type: "go"') - 80 :]
    assert 'parameter: "X"' in go_op and ('arguments: "%s"' % channel.name) in go_op
    assert "block_idx: 1" in go_op


def test_a_go_block_may_outlive_the_block_that_started_it():
    # The design's block-capture limitation: a go block started inside a While body keeps
    # using the body's variables after the loop moved on; chanflow keeps them alive.
    program = fluid.Program()
    with fluid.program_guard(program):
        results = fluid.make_channel(dtype=VT.LOD_TENSOR, capacity=5)
        i = fill_constant(shape=[1], dtype="int64", value=0)
        n = fill_constant(shape=[1], dtype="int64", value=5)
        cond = fluid.layers.less_than(x=i, y=n)
        loop = fluid.layers.While(cond=cond)
        with loop.block():
            local = fluid.layers.elementwise_mul(x=i, y=i)  # a variable of the loop body
            with fluid.Go():
                fluid.channel_send(results, local)
            fluid.layers.increment(x=i)
            fluid.layers.less_than(x=i, y=n, cond=cond)
        total = fill_constant(shape=[1], dtype="int64", value=0)
        got = fill_constant(shape=[1], dtype="int64", value=0)
        for _ in range(5):
            fluid.channel_recv(results, got)
            fluid.layers.assign(fluid.layers.elementwise_add(x=total, y=got), total)
    (out,) = fluid.Executor(core.CPUPlace()).run(program, fetch_list=[total])
    assert out.tolist() == [0 + 1 + 4 + 9 + 16]
