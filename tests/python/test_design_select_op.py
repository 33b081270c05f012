"""Fluid's "select_op Design" document, its example completed into a program written with
chanflow.fluid and run.

The design's example is the body of Go's fibonacci generator (the tour's "concurrency/5"); it
uses `channel`, `quit_channel` and `result2` without defining them, and nobody receives from
the channel or sends on quit. Completed here: `channel` is `ch1`, `quit_channel` is `quit_ch`,
`result2` a variable to receive into, and a go block receives ten numbers and then sends on
`quit_ch`, as the tour's `main` does. The example's lines are kept as the design wrote them
(`x_tmp` and `while_false` made inside the case bodies, `x` sent without a copy).

"How it Works" describes the program: before the select, a `fill_constant` (INT32, -1) makes
`case_to_execute`; the `select` op lists what the cases read as `X` (with `case_to_execute`),
`case_to_execute` as its own input, its `sub_block` and `cases`, each serialized
"<index>,<type>,<channel>,<value>" with type 1 for send and 2 for receive; in the sub-block
each case is `fill_constant(INT32, <index>)`, `equal(that, case_to_execute)` (axis -1) and a
`conditional_block` with `is_scalar_condition` true over the case body. (The design's listing
also has `case_to_execute` in the select's `Out`; Fluid's `Select` as released lists there the
enclosing block's variables the cases write, which is what chanflow.fluid writes.)
"""

import chanflow.fluid as fluid
from chanflow.fluid import core, framework, layer_helper
from chanflow.fluid.layers import While, assign, elementwise_add, fill_constant

VT = core.VarDesc.VarType


def build_example(count=10):
    program = framework.Program()
    with framework.program_guard(program):
        ch1 = fluid.make_channel(dtype=core.VarDesc.VarType.LOD_TENSOR)
        quit_ch = fluid.make_channel(dtype=core.VarDesc.VarType.LOD_TENSOR)

        channel, quit_channel = ch1, quit_ch
        block0 = program.current_block()
        result2 = block0.create_var(name="result2", type=VT.LOD_TENSOR, dtype=VT.INT32)
        received = block0.create_var(name="received", type=VT.LOD_TENSOR, dtype=VT.INT32)
        quit_value = fill_constant(shape=[1], dtype=VT.INT32, value=0)

        # The tour's main: print ten numbers, then quit.
        with fluid.Go():
            for _ in range(count):
                fluid.channel_recv(ch1, received)
                fluid.layers.Print(received, message="fibonacci")
            fluid.channel_send(quit_ch, quit_value)

        # The design's example.
        x = fill_constant(shape=[1], dtype=core.VarDesc.VarType.INT32, value=0)
        y = fill_constant(shape=[1], dtype=core.VarDesc.VarType.INT32, value=1)

        while_cond = fill_constant(shape=[1], dtype=core.VarDesc.VarType.BOOL, value=True)
        while_op = While(cond=while_cond)

        with while_op.block():
            with fluid.Select() as select:
                with select.case(fluid.channel_send, channel, x):
                    # Send x, then perform Fibonacci calculation on x and y
                    x_tmp = fill_constant(shape=[1], dtype=core.VarDesc.VarType.INT32, value=0)
                    assign(input=x, output=x_tmp)
                    assign(input=y, output=x)
                    assign(elementwise_add(x=x_tmp, y=y), output=y)
                with select.case(fluid.channel_recv, quit_channel, result2):
                    # Exit out of While loop
                    while_false = fill_constant(
                        shape=[1], dtype=core.VarDesc.VarType.BOOL, value=False
                    )
                    helper = layer_helper.LayerHelper("assign")
                    helper.append_op(
                        type="assign", inputs={"X": [while_false]}, outputs={"Out": [while_cond]}
                    )
        fluid.channel_close(ch1)
        fluid.channel_close(quit_ch)
    return program, select, received, x, y


def test_the_example_generates_fibonacci_numbers(capfd):
    program, _, received, x, y = build_example()
    exe = fluid.Executor(core.CPUPlace())
    last, x_after, y_after = exe.run(program, fetch_list=[received, x, y])
    assert last.tolist() == [34]
    # x was sent ten times; the eleventh value (55) was ready when quit arrived.
    assert (x_after.tolist(), y_after.tolist()) == ([55], [89])
    printed = [line for line in capfd.readouterr().out.splitlines() if "fibonacci" in line]
    fib = [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
    assert len(printed) == len(fib)
    for line, value in zip(printed, fib):
        assert ("[%d]" % value) in line


def test_the_program_is_the_one_the_design_describes():
    program, select, _, x, y = build_example()
    creates = [op for op in program.global_block().ops if op.type == "channel_create"]
    ch1, quit_ch = [op.output("Out")[0] for op in creates]
    while_op = [op for op in program.global_block().ops if op.type == "while"][0]
    while_block = while_op.attr("sub_block")

    # case_to_execute: fill_constant(INT32, -1) just before the select op.
    fill, select_op = while_block.ops
    assert fill.type == "fill_constant"
    assert (fill.attr("dtype"), fill.attr("value"), fill.attr("shape")) == (VT.INT32, -1.0, [1])
    case_to_execute = fill.output("Out")[0]
    assert select.case_to_execute.name == case_to_execute

    assert select_op.type == "select"
    assert select_op.input("case_to_execute") == [case_to_execute]
    # X: what the case bodies read before writing (x, y), then case_to_execute.
    assert select_op.input("X") == sorted([x.name, y.name]) + [case_to_execute]
    assert select_op.attr("cases") == [
        "0,1,%s,%s" % (ch1, x.name),
        "1,2,%s,result2" % quit_ch,
    ]
    cases_block = select_op.attr("sub_block")
    assert cases_block.parent_idx == while_block.idx

    # Each case: fill_constant(INT32, index), equal(index, case_to_execute), conditional_block.
    ops = cases_block.ops
    assert [op.type for op in ops] == ["fill_constant", "equal", "conditional_block"] * 2
    for index in range(2):
        index_op, equal_op, cond_op = ops[3 * index : 3 * index + 3]
        assert (index_op.attr("dtype"), index_op.attr("value")) == (VT.INT32, float(index))
        assert equal_op.input("X") == index_op.output("Out")
        assert equal_op.input("Y") == [case_to_execute]
        assert equal_op.attr("axis") == -1
        assert cond_op.input("X") == equal_op.output("Out")
        assert cond_op.input("Params") == []
        assert cond_op.attr("is_scalar_condition") is True
        body = cond_op.attr("sub_block")
        assert body.parent_idx == cases_block.idx
        (scope,) = cond_op.output("Scope")
        assert cases_block.var(scope).type == VT.STEP_SCOPES

    send_body = ops[2].attr("sub_block")
    assert [op.type for op in send_body.ops] == [
        "fill_constant",
        "assign",
        "assign",
        "elementwise_add",
        "assign",
    ]
    quit_body = ops[5].attr("sub_block")
    assert [op.type for op in quit_body.ops] == ["fill_constant", "assign"]


def test_the_design_text_form_round_trips_through_chanflow():
    program, _, received, _, _ = build_example(count=3)
    text = program.to_string(False)
    assert 'strings: "0,1,' in text and 'type: "select"' in text
    from chanflow import Program

    again = Program.from_text(text)
    assert again == program._native_program()
    import chanflow

    (out,) = chanflow.Executor().run(again, fetch=[received.name])
    assert out.numpy().tolist() == [1]  # the third number of 0, 1, 1
