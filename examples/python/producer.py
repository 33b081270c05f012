"""A producer in a Python thread feeding a running program over a bound channel.

The program, written with chanflow.fluid, starts W go blocks (green threads). Each receives
float32 batches from the channel `batches`, squares them, and sends the squares to a channel of
the program's own; block 0 receives exactly N squares, adds them up and ends. Python makes
`batches` with chanflow.make_chan and binds it into the run (Executor.run(channels=...)); a
Python thread sends the N batches while the main thread waits in Executor.run (GIL released),
then closes the channel, which tells the go blocks to finish. The run returns the sum, checked
against NumPy.

    PYTHONPATH=<build>/python python3 examples/python/producer.py [N] [W]

Prints the result and the time of the run; exits 1 if the sum is not NumPy's.
"""

import sys
import threading
import time

import numpy as np

import chanflow as cf
import chanflow.fluid as fluid
from chanflow.fluid import core, unique_name
from chanflow.fluid.layers import (
    While,
    assign,
    elementwise_add,
    elementwise_mul,
    fill_constant,
    increment,
    less_than,
)

VT = core.VarDesc.VarType
DIM = 256  # floats a batch


def sum_of_squares_program(workers):
    """The program: `batches` (bound by the caller) -> W squaring go blocks -> block 0's sum.
    Feed `n` (int64[1], the number of batches); fetch `total` (float32[DIM])."""
    program = fluid.Program()
    with fluid.program_guard(program):
        block = program.current_block()
        # Declared, not created: the caller binds a channel to it.
        batches = block.create_var(name="batches", type=VT.CHANNEL)
        squares = fluid.make_channel(dtype=VT.FP32, capacity=workers)
        for _ in range(workers):
            with fluid.Go():
                go_block = fluid.default_main_program().current_block()
                x = go_block.create_var(name=unique_name.generate("x"), type=VT.LOD_TENSOR,
                                        dtype=VT.FP32)
                x, more = fluid.channel_recv(batches, x)
                loop = While(cond=more)  # until `batches` is closed and drained
                with loop.block():
                    fluid.channel_send(squares, elementwise_mul(x, x))
                    _, status = fluid.channel_recv(batches, x)
                    assign(status, more)

        n = block.create_var(name="n", type=VT.LOD_TENSOR, dtype=VT.INT64, shape=[1])
        total = block.create_var(name="total", type=VT.LOD_TENSOR, dtype=VT.FP32, shape=[DIM])
        fill_constant(shape=[DIM], dtype="float32", value=0.0, out=total)
        square = block.create_var(name="square", type=VT.LOD_TENSOR, dtype=VT.FP32)
        i = fill_constant(shape=[1], dtype="int64", value=0)
        cond = less_than(x=i, y=n)
        loop = While(cond=cond)
        with loop.block():
            fluid.channel_recv(squares, square)
            assign(elementwise_add(total, square), total)
            increment(x=i)
            less_than(x=i, y=n, cond=cond)
    return cf.Program.from_binary(program.desc.serialize_to_string())


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 20000
    workers = int(argv[2]) if len(argv) > 2 else 4
    program = sum_of_squares_program(workers)
    rng = np.random.default_rng(7)
    data = rng.standard_normal((n, DIM)).astype(np.float32)

    batches = cf.make_chan(capacity=16, elem="Tensor(float32)")

    def produce():
        for row in data:
            batches.send(row)  # the tensor shares the row's memory: no copy
        batches.close()        # "no more batches": the go blocks leave their loops

    producer = threading.Thread(target=produce)
    start = time.perf_counter()
    producer.start()
    (total,) = cf.Executor().run(program, feed={"n": np.array([n], np.int64)}, fetch=["total"],
                                 channels={"batches": batches})
    elapsed = time.perf_counter() - start
    producer.join()

    got = total.numpy()
    expected = (data.astype(np.float64) ** 2).sum(axis=0)
    print("sum of squares of %d batches of %d floats, %d go blocks: %.6g (%.1f ms, %.1f us "
          "a batch)" % (n, DIM, workers, got.sum(), elapsed * 1e3, elapsed / n * 1e6))
    # float32 sums in a different order than NumPy's float64: compare with a relative bound.
    if not np.allclose(got, expected, rtol=1e-3):
        print("wrong result: max difference %g" % np.abs(got - expected).max(), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
