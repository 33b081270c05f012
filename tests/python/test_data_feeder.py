"""fluid.DataFeeder: mini-batches of samples become the feed dictionary by the feed variables'
names, dtypes and shapes (Fluid's -1 batch dimension), with errors naming the variable; the
result runs through fluid.Executor."""
import numpy as np
import pytest

import chanflow
import chanflow.fluid as fluid


def program_with(*decls):
    prog = fluid.Program()
    block = prog.global_block()
    out = [block.create_var(name=n, shape=s, dtype=d) for n, s, d in decls]
    return prog, out


def test_feed_stacks_fields_with_the_declared_dtypes_and_shapes():
    prog, (img, label) = program_with(("image", [-1, 1, 28, 28], "float32"),
                                      ("label", [-1, 1], "int64"))
    feeder = fluid.DataFeeder([img, label], fluid.CPUPlace(), program=prog)
    batch = [([0] * 784, [9]), (list(range(784)), [1]), (np.ones(784), np.array([3]))]
    out = feeder.feed(batch)
    assert set(out) == {"image", "label"}
    assert out["image"].dtype == np.float32 and out["image"].shape == (3, 1, 28, 28)
    assert out["label"].dtype == np.int64 and out["label"].shape == (3, 1)
    assert out["label"].ravel().tolist() == [9, 1, 3]
    assert out["image"][1].ravel().tolist() == [float(i) for i in range(784)]
    assert np.all(out["image"][2] == 1.0)


def test_feed_list_may_name_variables_of_the_default_main_program():
    main = fluid.Program()
    with fluid.program_guard(main):
        block = fluid.default_main_program().global_block()
        block.create_var(name="x", shape=[-1, 3], dtype="float64")
        block.create_var(name="y", shape=[-1, 1], dtype="int32")
        feeder = fluid.DataFeeder(["x", "y"], fluid.CPUPlace())
    out = feeder.feed([((1, 2, 3), 0), ((4, 5, 6), 1)])
    assert out["x"].dtype == np.float64 and out["x"].tolist() == [[1, 2, 3], [4, 5, 6]]
    assert out["y"].dtype == np.int32 and out["y"].tolist() == [[0], [1]]


def test_feed_takes_what_chanflow_batch_gives_from_fashion_mnist_shaped_samples():
    prog, (img, label) = program_with(("img", [-1, 784], "float32"), ("lab", [-1, 1], "int64"))
    samples = [(np.full(784, i / 10, np.float32), i % 10) for i in range(10)]
    feeder = fluid.DataFeeder([img, label], None, program=prog)
    feeds = [feeder.feed(b) for b in chanflow.batch(lambda: iter(samples), 4)()]
    assert [f["img"].shape for f in feeds] == [(4, 784), (4, 784), (2, 784)]
    assert [f["lab"].ravel().tolist() for f in feeds] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert feeds[2]["img"][1, 0] == np.float32(0.9)


def test_the_feed_runs_through_the_executor():
    prog, (x,) = program_with(("x", [-1, 2], "float32"))
    with fluid.program_guard(prog):
        y = fluid.layers.elementwise_add(x, x)
    feeder = fluid.DataFeeder([x], fluid.CPUPlace(), program=prog)
    (out,) = fluid.Executor(fluid.CPUPlace()).run(
        prog, feed=feeder.feed([([1, 2],), ([3, 4],)]), fetch_list=[y])
    assert out.tolist() == [[2, 4], [6, 8]]


def test_a_sample_with_the_wrong_number_of_fields_names_the_variables():
    prog, vs = program_with(("a", [-1, 1], "float32"), ("b", [-1, 1], "int64"))
    feeder = fluid.DataFeeder(vs, fluid.CPUPlace(), program=prog)
    with pytest.raises(chanflow.ShapeError, match=r"sample 1 has 3 field\(s\); feed_list has 2 "
                                                  r"\(a, b\)"):
        feeder.feed([(1, 2), (1, 2, 3)])
    with pytest.raises(chanflow.ShapeError, match="sample 0 has no field"):
        feeder.feed([5])
    with pytest.raises(chanflow.ShapeError, match="sample 0 has"):
        feeder.feed(["ab"])


def test_values_that_do_not_convert_name_the_variable():
    prog, vs = program_with(("img", [-1, 2], "float32"), ("label", [-1, 1], "int64"))
    feeder = fluid.DataFeeder(vs, fluid.CPUPlace(), program=prog)
    with pytest.raises(chanflow.TypeError, match="variable 'img' .float32, shape .-1, 2.."):
        feeder.feed([(["x", "y"], 1)])
    with pytest.raises(chanflow.TypeError, match="variable 'img'"):
        feeder.feed([([1, 2], 1), ([1, 2, 3], 2)])  # ragged
    with pytest.raises(chanflow.TypeError, match="variable 'label' .int64.*1.5 is not an integer"):
        feeder.feed([([1, 2], 1.5)])
    with pytest.raises(chanflow.TypeError, match="variable 'label'"):
        feeder.feed([([1, 2], "one")])
    with pytest.raises(chanflow.TypeError, match="variable 'label'"):
        feeder.feed([([1, 2], float("nan"))])
    assert feeder.feed([([1, 2], 2.0)])["label"].tolist() == [[2]]


def test_fields_that_do_not_fit_the_shape_name_the_variable():
    prog, vs = program_with(("img", [-1, 4], "float32"), ("fixed", [2, 3], "int32"),
                            ("free", [-1, -1], "float32"))
    feeder = fluid.DataFeeder(vs, fluid.CPUPlace(), program=prog)
    ok = feeder.feed([([1, 2, 3, 4], [1, 2, 3], [1]), ([5, 6, 7, 8], [4, 5, 6], [2])])
    assert ok["img"].shape == (2, 4) and ok["fixed"].shape == (2, 3)
    assert ok["free"].shape == (2, 1)
    with pytest.raises(chanflow.ShapeError, match=r"variable 'img'.*shape \(2, 3\) does not fit"):
        feeder.feed([([1, 2, 3], [1, 2, 3], [1]), ([5, 6, 7], [4, 5, 6], [2])])
    # Two samples of two values reshape to (1, 4): the batch dimension must stay the samples.
    with pytest.raises(chanflow.ShapeError, match="variable 'img'"):
        feeder.feed([([1, 2], [1, 2, 3], [1]), ([5, 6], [4, 5, 6], [2])])
    with pytest.raises(chanflow.ShapeError, match="variable 'fixed'"):
        feeder.feed([([1, 2, 3, 4], [1, 2, 3], [1])])
    with pytest.raises(chanflow.ShapeError, match="variable 'free'"):
        feeder.feed([([1, 2, 3, 4], [1, 2, 3], 1), ([1, 2, 3, 4], [4, 5, 6], 2)])


def test_construction_errors():
    prog, (a,) = program_with(("a", [-1, 1], "float32"))
    with pytest.raises(ValueError, match="nope"):
        fluid.DataFeeder(["nope"], fluid.CPUPlace(), program=prog)
    with pytest.raises(TypeError, match=r"feed_list\[1\]"):
        fluid.DataFeeder([a, 3], fluid.CPUPlace(), program=prog)
    seq = prog.global_block().create_var(name="seq", shape=[-1, 1], dtype="int64", lod_level=1)
    with pytest.raises(ValueError, match="'seq' has lod_level 1"):
        fluid.DataFeeder([seq], fluid.CPUPlace(), program=prog)
    ch = prog.global_block().create_var(name="ch", type=fluid.core.VarDesc.VarType.CHANNEL)
    with pytest.raises(ValueError, match="'ch' has no tensor dtype"):
        fluid.DataFeeder([ch], fluid.CPUPlace(), program=prog)
