"""Places on green threads (fluid.place_parallel): ParallelExecutor's and ParallelDo's places run
their shards in go blocks of their own (seen in the runtime's trace), the rewrite computes what
the written order computes when the places' ops share variables (read after write, write after
read, the seed sequence, channels), bit-identical weights for 1, 2 and 4 places with
batch_norm's running statistics updated once per step, and a test clone that leaves them
alone."""

import json

import numpy as np
import pytest

import chanflow
import chanflow.fluid as fluid
from chanflow.fluid import layers, place_parallel
from chanflow.fluid.layers.control_flow import ParallelDo
from chanflow.fluid.layers.device import get_places

VT = fluid.core.VarDesc.VarType


def traced(run):
    """Runs ``run()`` under the runtime's trace; returns its result and the op slices as (green
    thread, op type) pairs (green thread 0: the calling thread)."""
    chanflow.trace_start()
    try:
        out = run()
    finally:
        chanflow.trace_stop()
    events = json.loads(chanflow.trace_json())["traceEvents"]
    return out, [(e["args"]["g"], e["name"]) for e in events if e.get("cat") == "op"]


def threads_of(slices, op_type):
    counts = {}
    for g, name in slices:
        if name == op_type:
            counts[g] = counts.get(g, 0) + 1
    return counts


def mlp(x, y, conv=False):
    if conv:
        x = layers.batch_norm(layers.conv2d(x, num_filters=3, filter_size=3, act="relu"))
    h = layers.fc(x, 8, act="tanh")
    pred = layers.fc(h, 3, act="softmax")
    return pred, layers.mean(layers.cross_entropy(pred, y))


def batch(rows=16, seed=0):
    rng = np.random.RandomState(seed)
    return {"x": rng.randn(rows, 1, 6, 6).astype("float32"),
            "y": rng.randint(0, 3, (rows, 1)).astype("int64")}


def build(parallel_do=None, conv=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", shape=[1, 6, 6])
        y = layers.data("y", shape=[1], dtype="int64")
        if parallel_do:
            pd = ParallelDo(get_places(parallel_do))
            with pd.do():
                _, loss_ = mlp(pd.read_input(x), pd.read_input(y), conv)
                pd.write_output(loss_)
            loss = layers.mean(pd())
        else:
            _, loss = mlp(x, y, conv)
        test = main.clone(for_test=True)
        fluid.optimizer.Adam(0.05).minimize(loss)
    return main, startup, test, loss


def params(main):
    return {p.name: np.array(fluid.global_scope().find_var(p.name).get_tensor())
            for p in main.all_parameters()}


@pytest.mark.parametrize("places", [2, 4])
def test_parallel_executor_places_run_on_green_threads_of_their_own(monkeypatch, places):
    monkeypatch.setenv("CPU_NUM", str(places))
    main, startup, _, loss = build()
    with fluid.scope_guard(fluid.core.Scope()):
        fluid.Executor().run(startup)
        pe = fluid.ParallelExecutor(loss_name=loss.name, main_program=main)
        _, slices = traced(lambda: pe.run([loss], feed=batch()))
    # 8 shards, two fc layers: 16 forward muls, 8 / places shards (16 / places muls) per place,
    # each place on one green thread of its own; the optimiser on the caller. The 4 gradient
    # sums are trees of 7 pairwise sums: each place adds its shards' (8 / places - 1 each), the
    # caller the places' partial sums (places - 1).
    muls = threads_of(slices, "mul")
    assert len(muls) == places and 0 not in muls
    assert sorted(muls.values()) == [16 // places] * places
    assert set(threads_of(slices, "mul_grad")) == set(muls)
    assert set(threads_of(slices, "adam")) == {0}
    sums = threads_of(slices, "sum")
    assert sums[0] == 4 * (places - 1)
    assert all(sums[g] == 4 * (8 // places - 1) for g in muls)


def test_one_place_runs_inline(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "1")
    main, startup, _, loss = build()
    with fluid.scope_guard(fluid.core.Scope()):
        fluid.Executor().run(startup)
        pe = fluid.ParallelExecutor(loss_name=loss.name, main_program=main)
        _, slices = traced(lambda: pe.run([loss], feed=batch()))
    assert {g for g, _ in slices} == {0}


@pytest.mark.parametrize("conv", [False, True])
def test_parallel_do_places_run_on_green_threads_of_their_own(conv):
    main, startup, test, loss = build(parallel_do=2, conv=conv)
    with fluid.scope_guard(fluid.core.Scope()):
        exe = fluid.Executor()
        exe.run(startup)
        _, slices = traced(lambda: exe.run(main, feed=batch(), fetch_list=[loss]))
        _, test_slices = traced(lambda: exe.run(test, feed=batch(), fetch_list=[loss]))
    # The forward stage and the backward stage: two green threads per stage, one per place,
    # each with its 4 of the 8 shards (batch_norm does not serialise the places).
    muls = threads_of(slices, "mul")
    assert len(muls) == 2 and 0 not in muls and sorted(muls.values()) == [8, 8]
    grads = threads_of(slices, "mul_grad")
    assert len(grads) == 2 and not set(grads) & set(muls) and 0 not in grads
    if conv:
        bn = threads_of(slices, "batch_norm")
        assert set(bn) == set(muls) and sorted(bn.values()) == [4, 4]
    assert len(threads_of(test_slices, "mul")) == 2


def train(places=None, parallel_do=None, conv=False, steps=3):
    main, startup, test, loss = build(parallel_do=parallel_do, conv=conv)
    with fluid.scope_guard(fluid.core.Scope()):
        exe = fluid.Executor()
        exe.run(startup)
        if places:
            pe = fluid.ParallelExecutor(loss_name=loss.name, main_program=main)
            step = lambda feed: pe.run([loss], feed=feed)  # noqa: E731
        else:
            step = lambda feed: exe.run(main, feed=feed, fetch_list=[loss])  # noqa: E731
        for i in range(steps):
            step(batch(seed=i))
        before = params(main)
        exe.run(test, feed=batch(seed=9), fetch_list=[loss])
        after = params(main)
    for k in before:  # evaluation changes nothing, batch_norm's statistics included
        np.testing.assert_array_equal(before[k], after[k])
    return before


@pytest.mark.parametrize("conv", [False, True])
def test_parallel_do_weights_are_bit_identical_for_1_2_and_4_places(conv):
    runs = {n: train(parallel_do=n, conv=conv) for n in (1, 2, 4)}
    for n in (2, 4):
        for k in runs[1]:
            np.testing.assert_array_equal(runs[n][k], runs[1][k])
    initial = train(parallel_do=1, conv=conv, steps=0)
    assert all(not np.array_equal(runs[1][k], initial[k]) for k in initial)  # all trained
    if not conv:  # (batch_norm normalises each shard's rows: not the undivided batch's result)
        plain = train(conv=conv)
        for k in plain:
            np.testing.assert_allclose(runs[1][k], plain[k], rtol=1e-4, atol=1e-5)


def test_batch_norm_statistics_are_updated_once_per_step_as_the_mean_of_the_shards(monkeypatch):
    # One step from the initial statistics (mean 0, variance 1): momentum 0.9, so each shard
    # moves them to 0.9 * init + 0.1 * its batch statistics, and the step keeps the mean of the
    # 8 shards' values, as ParallelExecutor and ParallelDo both do.
    monkeypatch.setenv("CPU_NUM", "2")
    feed = batch()
    main, startup, _, loss = build(conv=True)
    with fluid.scope_guard(fluid.core.Scope()):
        fluid.Executor().run(startup)
        conv_w = np.array(fluid.global_scope().find_var("conv2d_0.w_0").get_tensor())
        conv_b = np.array(fluid.global_scope().find_var("conv2d_0.b_0").get_tensor())
    # One step each, then the statistics against NumPy's per-shard batch statistics.
    x = feed["x"].astype(np.float64)
    out = np.zeros((16, 3, 4, 4))
    for c in range(3):
        for i in range(4):
            for j in range(4):
                out[:, c, i, j] = (x[:, 0, i:i + 3, j:j + 3] * conv_w[c, 0]).sum(axis=(1, 2))
    out = np.maximum(out + conv_b.reshape(1, 3, 1, 1), 0)
    shards = out.reshape(8, 2, 3, 4, 4)
    want_mean = (0.1 * shards.mean(axis=(1, 3, 4))).mean(axis=0)
    want_var = (0.9 + 0.1 * shards.var(axis=(1, 3, 4))).mean(axis=0)
    for kind in ("pe", "pd"):
        main, startup, _, loss = build(parallel_do=2 if kind == "pd" else None, conv=True)
        with fluid.scope_guard(fluid.core.Scope()):
            exe = fluid.Executor()
            exe.run(startup)
            if kind == "pe":
                fluid.ParallelExecutor(loss_name=loss.name, main_program=main).run([], feed=feed)
            else:
                exe.run(main, feed=feed)
            mean = np.array(fluid.global_scope().find_var("batch_norm_0.w_1").get_tensor())
            var = np.array(fluid.global_scope().find_var("batch_norm_0.w_2").get_tensor())
        np.testing.assert_allclose(mean, want_mean, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(var, want_var, rtol=1e-4, atol=1e-6)


def hand_program(ops):
    """A program of block 0 tensors x, s, t, a0, b0, a1, b1 (FP32 [2]) whose ops ``ops``
    builds, a0 and b0 of shard 0 (place 0), a1 and b1 of shard 1 (place 1)."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        block = main.global_block()
        for n in ("x", "s", "t", "a0", "b0", "a1", "b1"):
            block.create_var(name=n, dtype=VT.FP32, shape=[2])
        ops(block)
    main._var_shards = {"a0": 0, "b0": 0, "a1": 1, "b1": 1}
    main._shard_places = [0, 1]
    return main


def scale(block, x, out, by):
    block.append_op(type="scale", inputs={"X": [x]}, outputs={"Out": [out]},
                    attrs={"scale": float(by)})


def written_order(main, feed, fetch):
    """What ``main`` computes run as written (no place-owned variables)."""
    plain = main.clone()
    plain._var_shards = {}
    return fluid.Executor().run(plain, feed=feed, fetch_list=fetch)


@pytest.mark.parametrize("case", ["read_after_write", "write_after_read", "write_after_write"])
def test_places_that_share_a_variable_compute_the_written_order(case):
    def ops(block):
        if case == "read_after_write":  # place 1 reads what place 0 wrote into s
            scale(block, "x", "a0", 2)
            scale(block, "a0", "s", 3)
            scale(block, "x", "a1", 5)
            scale(block, "s", "b1", 7)
        elif case == "write_after_read":  # place 1 reads s before place 0 overwrites it
            scale(block, "x", "s", 11)
            scale(block, "x", "a1", 5)
            scale(block, "s", "b1", 7)
            scale(block, "x", "a0", 2)
            scale(block, "a0", "s", 3)
        else:  # both places write s; place 1's write comes last
            scale(block, "x", "a0", 2)
            scale(block, "a0", "s", 3)
            scale(block, "x", "a1", 5)
            scale(block, "a1", "s", 7)
        scale(block, "x", "b0", 13)

    main = hand_program(ops)
    feed = {"x": np.array([1.0, -2.0], np.float32)}
    fetch = ["s", "b0", "b1"] if case != "write_after_write" else ["s", "b0"]
    want = written_order(main, feed, fetch)
    _, _, plan = place_parallel.schedule(main)
    assert any(kind == "stage" for kind, _ in plan)  # some ops of the two places overlap
    got, slices = traced(lambda: fluid.Executor().run(main, feed=feed, fetch_list=fetch))
    assert len({g for g, _ in slices} - {0}) >= 2
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_seed_sequence_and_channel_ops_keep_their_order():
    def ops(block):
        for n in ("a0", "a1"):  # seed 0: the process's next seed, drawn in program order
            block.append_op(type="uniform_random", outputs={"Out": [n]},
                            attrs={"shape": [2], "seed": 0})
        ch = block.create_var(name="ch", type=VT.CHANNEL)
        block.append_op(type="channel_create", outputs={"Out": [ch]},
                        attrs={"data_type": int(VT.FP32), "capacity": 1})
        scale(block, "x", "b0", 2)
        scale(block, "x", "b1", 3)

    main = hand_program(ops)
    p, places, plan = place_parallel.schedule(main)
    deps = place_parallel._analyse(p.global_block(), places)
    assert places == [0, 1, None, 0, 1]
    assert 0 in deps[1]  # the second draw waits for the first
    assert {0, 1} <= deps[2] and 2 in deps[3] and 2 in deps[4]  # the channel op: a barrier
    assert plan == [("op", 0), ("op", 1), ("op", 2), ("stage", [(0, [3]), (1, [4])])]


def test_sums_of_shard_variables_are_trees_the_places_share():
    # 8 shard contributions summed: each place adds its own, in a tree fixed by the inputs'
    # order, the caller the two partial sums; the same for one place.
    def program(places):
        main = fluid.Program()
        with fluid.program_guard(main, fluid.Program()):
            block = main.global_block()
            block.create_var(name="x", dtype=VT.FP32, shape=[3])
            block.create_var(name="total", dtype=VT.FP32, shape=[3])
            names = []
            for i in range(8):
                names.append(block.create_var(name="g.shard_%d" % i, dtype=VT.FP32,
                                              shape=[3]).name)
                scale(block, "x", names[-1], 1.0 + 0.1 * i)
            block.append_op(type="sum", inputs={"X": names}, outputs={"Out": ["total"]})
        main._var_shards = {n: i for i, n in enumerate(names)}
        main._shard_places = [i * places // 8 for i in range(8)]
        return main

    x = np.array([1e-3, 3.0, -7.25], np.float32)
    got = {}
    for places in (1, 2, 4):
        main = program(places)
        p, where, plan = place_parallel.schedule(main)
        sums = [(op.input("X"), w) for op, w in zip(p.global_block().ops, where)
                if op.type == "sum"]
        assert len(sums) == 7 and all(len(xs) == 2 for xs, _ in sums)
        assert [w for _, w in sums].count(None) == (0 if places == 1 else places - 1)
        got[places], = fluid.Executor().run(main, feed={"x": x}, fetch_list=["total"])
    leaves = [x * np.float32(1.0 + 0.1 * i) for i in range(8)]
    pairs = [leaves[i] + leaves[i + 1] for i in range(0, 8, 2)]
    want = (pairs[0] + pairs[1]) + (pairs[2] + pairs[3])
    for places in (1, 2, 4):
        np.testing.assert_array_equal(got[places], want)


def test_a_failing_place_fails_the_run_with_its_error():
    main, startup, _, loss = build(parallel_do=2)
    with fluid.scope_guard(fluid.core.Scope()):
        exe = fluid.Executor()
        exe.run(startup)
        bad = batch()
        bad["y"] = np.full_like(bad["y"], 7)  # labels past the 3 classes: cross_entropy fails
        with pytest.raises(chanflow.ProgramError, match="cross_entropy"):
            exe.run(main, feed=bad, fetch_list=[loss])
        exe.run(main, feed=batch(), fetch_list=[loss])  # the next run is unaffected
