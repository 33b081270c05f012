"""Go's daisy chain ("whispers", talks.golang.org/2012/concurrency.slide#39) written in Paddle
Fluid's style with chanflow.fluid: a While loop starts N go blocks, each receiving a number from
the channel on its right and passing it plus one to its left; 1 enters at the right end, N + 1
comes out at the left.

Fluid's own test built its chain with a Python loop (100 go ops in the program) because its go
blocks did not bind their arguments (Paddle issue 8502). chanflow binds a go block's arguments
when it starts, so the chain is built by the program itself: a While loop whose body makes a
channel, starts a go block and moves `left` along -- 10,000 green threads from one go op.

    PYTHONPATH=<build>/python python3 examples/python/daisy_chain.py [N]

Prints the result and the time of the run; exits 1 if the result is not N + 1.
"""

import sys
import time

import chanflow.fluid as fluid
from chanflow.fluid import core, unique_name
from chanflow.fluid.layers import (
    While,
    assign,
    elementwise_add,
    fill_constant,
    increment,
    less_than,
)

VT = core.VarDesc.VarType


def daisy_chain(n):
    """The program and the variable that receives the chain's result."""
    program = fluid.Program()
    with fluid.program_guard(program):
        block = program.current_block()
        leftmost = fluid.make_channel(dtype=VT.LOD_TENSOR)
        left = block.create_var(name=unique_name.generate("left"), type=VT.CHANNEL)
        assign(leftmost, left)

        i = fill_constant(shape=[1], dtype="int64", value=0)
        limit = fill_constant(shape=[1], dtype="int64", value=n)
        cond = less_than(x=i, y=limit)
        loop = While(cond=cond)
        with loop.block():
            right = fluid.make_channel(dtype=VT.LOD_TENSOR)
            with fluid.Go():  # binds this turn's `right` and `left`
                one = fill_constant(shape=[1], dtype="int64", value=1)
                got = fluid.default_main_program().current_block().create_var(
                    name=unique_name.generate("got"), type=VT.LOD_TENSOR, dtype=VT.INT64
                )
                fluid.channel_recv(right, got)
                fluid.channel_send(left, elementwise_add(x=one, y=got))
            assign(right, left)
            increment(x=i)
            less_than(x=i, y=limit, cond=cond)

        with fluid.Go():  # 1 enters at the right end
            fluid.channel_send(left, fill_constant(shape=[1], dtype="int64", value=1))
        result = block.create_var(name="result", type=VT.LOD_TENSOR, dtype=VT.INT64)
        fluid.channel_recv(leftmost, result)
    return program, result


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 10000
    program, result = daisy_chain(n)
    exe = fluid.Executor(fluid.CPUPlace())
    start = time.perf_counter()
    (out,) = exe.run(program, fetch_list=[result])
    elapsed = time.perf_counter() - start
    print("daisy chain of %d go blocks: %d (%.1f ms)" % (n, out[0], elapsed * 1e3))
    if out.tolist() != [n + 1]:
        print("wrong result: expected %d" % (n + 1), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
