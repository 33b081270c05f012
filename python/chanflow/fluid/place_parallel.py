"""Running the shards of a batch concurrently, each place's on a green thread of its own.

``ParallelExecutor`` and ``ParallelDo`` write block 0 programs holding one copy of the model's
ops per *shard* of the batch. They record the variables of each shard in
``Program._var_shards`` (name -> shard) and the place of each shard in
``Program._shard_places``. ``Executor.run`` runs such a program through
``native_program(program)``: a rewrite of block 0 in which the ops of different places run at
once, each place's on a green thread of its own (a ``go`` block), and the rest on the calling
thread.

**Shards of ops.** An op belongs to shard ``s`` when every shard variable it reads or writes is
``s``'s and there is at least one (a gradient ``x@GRAD...`` belongs where ``x`` does; a
variable written by exactly one op, that op of shard ``s``, is ``s``'s too); its place is the
shard's. Other ops are *shared*: the batch's ``split``, the outputs' ``concat``, the optimiser.
A ``sum`` of three or more shard variables -- the shards' contributions to a parameter's
gradient -- becomes a balanced tree of pairwise sums over its inputs in order (adjacent pairs,
level by level), so each place adds its own shards' contributions and the caller adds the
places' partial sums. The tree depends on the inputs' order only, which the shards fix: the
sums, like everything else, are bit-identical for every place count.

**Order.** The ops are ordered by their data dependencies, as the program's order implies them
(read after write, write after read, write after write on variable names): an op depends on the
last earlier writer of each variable it reads or writes and on the earlier readers of each
variable it writes. Ops that touch channels, have sub-blocks (control flow) or print depend on
every op before them and every op after them depends on them; ops that draw the process's seed
sequence (``seed`` 0, ``dropout`` without ``fix_seed``) depend on each other in program order,
so they draw the same seeds as the program run as written.

The schedule is a sequence of shared ops and *stages*: every shared op whose dependencies have
run, on the calling thread, in program order; then a stage: in program order, every place op
whose dependencies have run or are earlier ops of the same place in the same stage; repeat. A
stage with ops of more than one place becomes one ``go`` op per place (its ops in program
order, then a send on a ``done`` channel) and one receive per go op on the calling thread,
which waits for all of them; a stage of one place runs inline. Every op therefore reads the
values it reads in the written order (with the sums as trees), and no two concurrent ops touch
a variable one of them writes: the results do not depend on the scheduling.

The go blocks bind as arguments (``X``) the non-persistable variables they only read; what they
write is block 0's, shared by reference (docs/exec.md, scopes), so later stages and the fetches
see it.
"""

from . import core
from . import framework

__all__ = ["native_program", "schedule", "ShardedState"]

VarType = core.VarDesc.VarType

# Pseudo-variables of the dependency analysis (not program variables: '#' never starts a name
# the layers generate).
_BARRIER = "#barrier"
_SEED_SEQUENCE = "#seed_sequence"


class ShardedState(object):
    """The persistable variables that the per-shard copies of an op update in place -- the
    running mean and variance ``batch_norm`` reads and writes -- made per shard: each shard's
    copy reads the value the step started with and writes its own ``<name>.shard_<i>``, and
    ``append_means()`` then sets the variable to the mean of the shards' values (one ``sum`` in
    shard order, one ``scale`` by ``1/S``; op role Optimize, so ``clone(for_test=True)`` leaves
    the state alone). The state is so updated once per step, as by the undivided batch, and the
    shards do not wait for each other's update.

    ``outputs(op, renames, shard)``: the op's outputs for shard ``shard`` (``renames`` maps the
    shard's own variables); ``names(shard)``: the per-shard state variables of ``shard`` made so
    far."""

    def __init__(self, block, num_shards):
        self._block = block
        self._num_shards = num_shards
        self._parts = {}  # state variable -> [per-shard variable names], in shard order
        self._of_shard = {}  # shard -> [per-shard variable names]

    def outputs(self, op, renames, shard):
        reads = set(op.input_arg_names)
        out = {}
        for param, args in op._outputs.items():
            names = []
            for a in args:
                if a in renames:
                    names.append(renames[a])
                    continue
                v = self._block._find_var_recursive(a)
                if (self._num_shards > 1 and a in reads and v is not None and v.persistable
                        and v.type == VarType.LOD_TENSOR):
                    new = "%s.shard_%d" % (a, shard)
                    if self._block._find_var_recursive(new) is None:
                        self._block.create_var(name=new, dtype=v.dtype, shape=v.shape or None,
                                               stop_gradient=True)
                        self._parts.setdefault(a, []).append(new)
                        self._of_shard.setdefault(shard, []).append(new)
                    names.append(new)
                else:
                    names.append(a)
            out[param] = names
        return out

    def names(self, shard):
        return list(self._of_shard.get(shard, ()))

    def append_means(self):
        program = self._block.program
        with program._op_role_guard(framework.OpRole.Optimize):
            for name, parts in self._parts.items():
                v = self._block._find_var_recursive(name)
                total = self._block.create_var(name=name + "@SHARD_SUM", dtype=v.dtype,
                                               shape=v.shape or None, stop_gradient=True)
                self._block.append_op(type="sum", inputs={"X": parts}, outputs={"Out": [total]})
                self._block.append_op(type="scale", inputs={"X": [total]},
                                      outputs={"Out": [name]},
                                      attrs={"scale": 1.0 / self._num_shards})


def _shard_of(shards, name):
    s = shards.get(name)
    if s is None and "@" in name:
        s = shards.get(name.split("@", 1)[0])
    return s


def _is_barrier(op, block):
    if op.type in ("print", "go", "select"):
        return True
    if any(isinstance(v, framework.Block) for v in op._attrs.values()):
        return True
    for n in op.input_arg_names + op.output_arg_names:
        v = block._find_var_recursive(n)
        if v is not None and v.type == VarType.CHANNEL:
            return True
    return False


def _draws_process_seed(op):
    attrs = op._attrs
    if "seed" not in attrs:
        return False
    if "fix_seed" in attrs:
        return not attrs["fix_seed"] and not attrs.get("is_test", False)
    return int(attrs["seed"]) == 0


def _op_shards(block, var_shards):
    """Per op of ``block``: its shard (None: shared), and the shards of the variables: those the
    program records, plus each variable written by exactly one op, that op of a shard."""
    writers = {}
    for op in block.ops:
        for n in op.output_arg_names:
            writers[n] = writers.get(n, 0) + 1
    shards = dict(var_shards)
    op_shard = []
    for op in block.ops:
        if _is_barrier(op, block):
            op_shard.append(None)
            continue
        found = {_shard_of(shards, n) for n in op.input_arg_names + op.output_arg_names}
        found.discard(None)
        s = found.pop() if len(found) == 1 else None
        op_shard.append(s)
        if s is not None:
            for n in op.output_arg_names:
                if writers[n] == 1 and _shard_of(shards, n) is None:
                    shards[n] = s
    return op_shard, shards


def _free_name(block, base):
    name, k = base, 0
    while block._find_var_recursive(name) is not None:
        k += 1
        name = "%s_%d" % (base, k)
    return name


def _tree_sums(block, op_shard, shards, shard_places):
    """Replaces each ``sum`` of three or more shard variables (the shards' contributions to a
    parameter's gradient) by a balanced tree of pairwise sums over its inputs in order: adjacent
    pairs, level by level, an odd last input carried up. The tree depends on the inputs' order
    only, not on the places; a node whose inputs are one place's is that place's, so each place
    adds its own shards' contributions and the caller the places' partial sums. Returns the
    place of each op of the new op list (None: shared)."""
    ops, places = [], []
    for op, s in zip(block.ops, op_shard):
        xs = op.input("X") if op.type == "sum" else []
        outs = op.output("Out") if op.type == "sum" else []
        if len(xs) < 3 or len(outs) != 1 or any(_shard_of(shards, x) is None for x in xs):
            ops.append(op)
            places.append(None if s is None else shard_places[s])
            continue
        out = block._find_var_recursive(outs[0])
        level = [(x, shard_places[_shard_of(shards, x)]) for x in xs]
        while len(level) > 1:
            up = []
            for i in range(0, len(level) - 1, 2):
                (a, pa), (b, pb) = level[i], level[i + 1]
                if len(level) == 2:
                    name = out.name
                else:
                    name = _free_name(block, out.name + "@SUM_TREE")
                    block.create_var(name=name, dtype=out.dtype, shape=out.shape or None)
                node = framework.Operator(block, type="sum", inputs={"X": [a, b]},
                                          outputs={"Out": [name]}, attrs=dict(op._attrs))
                place = pa if pa == pb else None
                ops.append(node)
                places.append(place)
                up.append((name, place))
            if len(level) % 2:
                up.append(level[-1])
            level = up
    block.ops = ops
    return places


def _analyse(block, op_place):
    """The indices of the ops each op of ``block`` depends on (see the module documentation)."""
    deps = []
    last_write, readers = {}, {}
    for j, op in enumerate(block.ops):
        reads = set(op.input_arg_names)
        writes = set(op.output_arg_names)
        if _is_barrier(op, block):
            writes.add(_BARRIER)
        else:
            reads.add(_BARRIER)
        if _draws_process_seed(op):
            reads.add(_SEED_SEQUENCE)
            writes.add(_SEED_SEQUENCE)
        d = set()
        for v in reads | writes:
            if v in last_write:
                d.add(last_write[v])
        for v in writes:
            d.update(readers.get(v, ()))
        d.discard(j)
        deps.append(d)
        for v in reads:
            readers.setdefault(v, []).append(j)
        for v in writes:
            last_write[v] = j
            readers[v] = []
    return deps


def _stages(op_place, deps):
    remaining = list(range(len(op_place)))
    done = set()
    plan = []
    while remaining:
        rest = []
        for i in remaining:
            if op_place[i] is None and all(d in done for d in deps[i]):
                plan.append(("op", i))
                done.add(i)
            else:
                rest.append(i)
        in_stage = {}
        by_place = {}
        remaining = []
        for i in rest:
            p = op_place[i]
            if p is not None and all(d in done or in_stage.get(d) == p for d in deps[i]):
                in_stage[i] = p
                by_place.setdefault(p, []).append(i)
            else:
                remaining.append(i)
        if len(by_place) > 1:
            plan.append(("stage", sorted(by_place.items())))
        else:
            plan.extend(("op", i) for i in sorted(in_stage))
        done.update(in_stage)
    return plan


def schedule(program):
    """``(clone, places, plan)``: a clone of ``program`` with its sums of shard variables made
    trees, the place of each op of its block 0 (None: shared), and the schedule of those ops
    (see the module documentation): a list of items, each ``("op", i)`` (a shared op, or a
    stage of one place) or ``("stage", [(place, [i, ...]), ...])`` with the ops of two or more
    places, places ascending, ops in program order."""
    p = program.clone()
    block = p.global_block()
    op_shard, shards = _op_shards(block, p._var_shards)
    places = _tree_sums(block, op_shard, shards, p._shard_places)
    return p, places, _stages(places, _analyse(block, places))


def _rewrite(program):
    """``program`` rewritten as the module documentation says: a clone whose block 0 runs the
    schedule, each stage's places in go blocks."""
    from .layers.control_flow import reads_and_writes

    p, _, plan = schedule(program)
    block = p.global_block()
    ops = list(block.ops)
    block.ops = []
    widest = max([len(item) for kind, item in plan if kind == "stage"] or [0])
    if widest:
        done = block.create_var(name=_free_name(block, "place_parallel@done"),
                                type=VarType.CHANNEL)
        got = block.create_var(name=_free_name(block, "place_parallel@got"),
                               dtype=VarType.BOOL, shape=[1])
        status = block.create_var(name=_free_name(block, "place_parallel@status"),
                                  dtype=VarType.BOOL, shape=[1])
        block.append_op(type="channel_create", outputs={"Out": [done]},
                        attrs={"data_type": int(VarType.BOOL), "capacity": widest})
    for kind, item in plan:
        if kind == "op":
            block.ops.append(ops[item])
            continue
        for _, idxs in item:
            sub = p.create_block(parent_idx=0)
            p.current_block_idx = 0
            for i in idxs:
                ops[i].block = sub
                sub.ops.append(ops[i])
            reads, writes = reads_and_writes(sub.ops)
            token = sub.create_var(name="place_parallel@token", dtype=VarType.BOOL, shape=[1])
            sub.append_op(type="fill_constant", outputs={"Out": [token]},
                          attrs={"shape": [1], "dtype": int(VarType.BOOL), "value": 1.0})
            sub.append_op(type="channel_send", inputs={"Channel": [done.name], "X": [token]})
            # Arguments: what the block only reads, except persistables (parameters): a
            # reference held by a go block's scope would make the optimiser copy the
            # parameter instead of updating it in place, were the scope still alive then.
            args = sorted(n for n in reads if n not in writes
                          and not block._find_var_recursive(n).persistable)
            block.append_op(type="go", inputs={"X": args}, attrs={"sub_block": sub})
        for _ in item:
            block.append_op(type="channel_recv", inputs={"Channel": [done]},
                            outputs={"Out": [got], "Status": [status]})
    p._bump()
    return p


def native_program(program):
    """The native program ``Executor.run`` runs for ``program``: the rewrite for a program with
    shard variables, else the program as written. Made once per version of the program."""
    if not getattr(program, "_var_shards", None):
        return program._native_program()
    cached = program._concurrent
    if cached is not None and cached[0] == program._version:
        return cached[1]
    native = _rewrite(program)._native_program()
    program._concurrent = (program._version, native)
    return native
