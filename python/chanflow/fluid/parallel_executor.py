"""Fluid's ``ParallelExecutor``: a training program run data-parallel over CPU places::

    pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name)
    loss_per_place, = pe.run(fetch_list=[loss.name], feed={'x': xs, 'y': ys})
    mean_loss = loss_per_place.mean()

**Places and shards.** The places are ``CPU_NUM`` (the environment variable Paddle read) or the
CPU count. The batch is cut along dimension 0 into ``S`` equal shards, ``S`` the smallest
multiple of the place count that is at least 8 (``BuildStrategy.num_shards`` overrides it):
place ``j`` owns shards ``j*S/P .. (j+1)*S/P - 1``. The main program is rewritten once: its
forward and backward ops are copied per shard (variables renamed ``<name>.shard_<i>``,
parameters and other persistables shared), the loss gradient of each shard scaled by ``1/S``
(Paddle's ``CoeffNumDevice``), each parameter gradient summed over the shards by one ``sum``
op (run as a pairwise tree in shard order, ``place_parallel``), then the optimiser ops run
once. The reduction therefore does not depend on the
place count: for every place count dividing 8 the weights are bit-identical, and they are those
of the whole batch up to float rounding (each shard's mean loss averaged = the batch's mean).
A state a shard's op updates in place (``batch_norm``'s running mean and variance) is updated
once per step, to the mean of the shards' updates (``place_parallel.ShardedState``).

**Concurrency.** Shard ``i``'s variables belong to place ``i // (S/P)``: ``Executor.run`` runs
each place's shards, in shard order, on a green thread of its own, concurrently with the other
places', and the shared ops (the split, the gradient sums, the optimiser) on the calling thread
(``place_parallel``), computing what the ops' written order computes.

**Fetches** are merged as Paddle's fetch ops merged the devices' tensors: a variable computed
per shard comes back concatenated along dimension 0 (shard order = place order), except a
one-element variable (a loss, an accuracy), which gives one value per place -- the mean over
that place's shards, what the place would have computed on its rows -- so ``loss`` has shape
``[P]``. Persistable variables come back once.

A batch that does not split into ``S`` equal shards raises ``chanflow.ShapeError`` (from the
``split``). ``py_reader`` programs work: the receive runs once per run and its batch is split.
"""

import os

import numpy as np

from . import core
from . import framework
from . import place_parallel
from .executor import Executor, global_scope
from .framework import OpRole

__all__ = ["ParallelExecutor", "ExecutionStrategy", "BuildStrategy"]

VarType = core.VarDesc.VarType


class ExecutionStrategy(object):
    """Paddle's ``ExecutionStrategy``: accepted for its fields (``num_threads``, ``use_event``,
    ``allow_op_delay``, ``num_iteration_per_drop_scope``); chanflow's scheduler decides the
    threads."""

    def __init__(self):
        self.num_threads = 0
        self.use_event = True
        self.allow_op_delay = False
        self.num_iteration_per_drop_scope = 100


class BuildStrategy(object):
    """Paddle's ``BuildStrategy`` (``reduce_strategy``, ``gradient_scale_strategy``,
    ``debug_graphviz_path`` accepted; gradients are always summed over shards with the loss
    gradient scaled by 1/shards) plus chanflow's ``num_shards``: how many shards the batch is
    cut into (None: the smallest multiple of the place count >= 8; it must be a multiple of
    the place count)."""

    class ReduceStrategy(object):
        AllReduce = 0
        Reduce = 1

    class GradientScaleStrategy(object):
        CoeffNumDevice = 0
        One = 1
        Customized = 2

    def __init__(self):
        self.reduce_strategy = BuildStrategy.ReduceStrategy.AllReduce
        self.gradient_scale_strategy = BuildStrategy.GradientScaleStrategy.CoeffNumDevice
        self.debug_graphviz_path = ""
        self.num_shards = None


def cpu_places_count():
    """``CPU_NUM`` when set (an int >= 1, else ``ValueError``), else the CPU count."""
    env = os.environ.get("CPU_NUM")
    if env is None or env == "":
        return max(1, os.cpu_count() or 1)
    try:
        n = int(env)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError("ParallelExecutor: CPU_NUM must be an int >= 1, got %r" % (env,))
    return n


def _role(op):
    return int(op._attrs.get("op_role", 0))


class ParallelExecutor(object):
    """``ParallelExecutor(use_cuda=False, loss_name=None, main_program=None,
    share_vars_from=None, exec_strategy=None, build_strategy=None, num_trainers=1,
    trainer_id=0)``: see the module documentation. ``use_cuda=True`` raises
    ``core.UnavailableError``; ``num_trainers`` > 1 (distributed training) ``ValueError``.
    Parameters live in ``global_scope()`` (``share_vars_from``: another ParallelExecutor whose
    scope to use, as a test program's executor shares the trainer's). The main program is
    rewritten when the executor is made: build it (``minimize``) first."""

    def __init__(self, use_cuda=False, loss_name=None, main_program=None, share_vars_from=None,
                 exec_strategy=None, build_strategy=None, num_trainers=1, trainer_id=0,
                 scope=None):
        if use_cuda:
            raise core.UnavailableError(
                "ParallelExecutor: use_cuda=True but chanflow is not compiled with CUDA")
        if num_trainers != 1 or trainer_id != 0:
            raise ValueError("ParallelExecutor: distributed training (num_trainers=%r, "
                             "trainer_id=%r) is not supported" % (num_trainers, trainer_id))
        if share_vars_from is not None and not isinstance(share_vars_from, ParallelExecutor):
            raise TypeError("ParallelExecutor: share_vars_from must be a ParallelExecutor, got %r"
                            % (share_vars_from,))
        self._program = main_program or framework.default_main_program()
        if not isinstance(self._program, framework.Program):
            raise TypeError("ParallelExecutor: main_program must be a fluid Program, got %r"
                            % (self._program,))
        self.exec_strategy = exec_strategy or ExecutionStrategy()
        self.build_strategy = build_strategy or BuildStrategy()
        self.device_count = cpu_places_count()
        shards = self.build_strategy.num_shards
        if shards is None:
            shards = self.device_count * -(-8 // self.device_count)
        if not isinstance(shards, int) or shards < 1 or shards % self.device_count:
            raise ValueError("ParallelExecutor: num_shards must be a positive multiple of the "
                             "place count %d, got %r" % (self.device_count, shards))
        self.num_shards = shards
        if share_vars_from is not None:
            self._scope = share_vars_from._scope
        else:
            self._scope = scope
        self._loss_name = loss_name.name if isinstance(loss_name, framework.Variable) \
            else loss_name
        if self._loss_name is not None and self._loss_name not in \
                self._program.global_block().vars:
            raise ValueError("ParallelExecutor: loss_name '%s' is not a variable of the main "
                             "program" % self._loss_name)
        self._exe = Executor(core.CPUPlace())
        self._built_version = None
        self._build()

    @property
    def places(self):
        return [core.CPUPlace() for _ in range(self.device_count)]

    # -- the rewrite -------------------------------------------------------------------------

    def _build(self):
        from .layers.nn import split
        from .layers.tensor import sums

        src = self._program
        p = src.clone()
        block = p.global_block()
        ops = list(block.ops)
        block.ops = []
        p._bump()
        S = self.num_shards

        def touches_channel(op):
            for n in op.input_arg_names + op.output_arg_names:
                v = block._find_var_recursive(n)
                if v is not None and v.type == VarType.CHANNEL:
                    return True
            return False

        # Ops run once, before the shards: the readers' receives and what depends on their
        # status (control flow over channels). Their 'Out' values are batches to split.
        once_before, replicated, once_after = [], [], []
        reader_vars, batch_vars = set(), []
        for op in ops:
            role = _role(op)
            has_block = any(isinstance(v, framework.Block) for v in op._attrs.values())
            reads_reader = any(n in reader_vars for n in op.input_arg_names)
            if role & (OpRole.Optimize | OpRole.LRSched):
                once_after.append(op)
            elif has_block or touches_channel(op) or reads_reader:
                if replicated:
                    raise ValueError("ParallelExecutor: op '%s' (control flow or channels) comes "
                                     "after the ops computed per place" % op.type)
                once_before.append(op)
                if op.type == "channel_recv":
                    for n in op._outputs.get("Out", []):
                        batch_vars.append(n)
                    reader_vars.update(op._outputs.get("Status", []))
                else:
                    reader_vars.update(op.output_arg_names)
            else:
                replicated.append(op)
        if not replicated:
            raise ValueError("ParallelExecutor: the main program has no forward ops")
        read_by_rep = set()
        for op in replicated:
            read_by_rep.update(op.input_arg_names)
        inputs = [n for n in batch_vars if n in read_by_rep]
        for name, v in block.vars.items():
            if getattr(v, "is_data", False) and name in read_by_rep and name not in inputs:
                inputs.append(name)

        renames = [dict() for _ in range(S)]
        state = place_parallel.ShardedState(block, S)
        with framework.program_guard(p):
            for op in once_before:
                block.ops.append(op)
            for name in inputs:
                parts = split(block.var(name), S, dim=0) if S > 1 else [block.var(name)]
                for i, part in enumerate(parts):
                    part.stop_gradient = True
                    renames[i][name] = part.name
            written = set()
            for op in replicated:
                written.update(op.output_arg_names)
            shard_vars = set()
            for i in range(S):
                ren = renames[i]
                for op in replicated:
                    for n in op.input_arg_names + op.output_arg_names:
                        if n in ren:
                            continue
                        v = block._find_var_recursive(n)
                        if v is None or v.persistable:
                            continue
                        new = "%s.shard_%d" % (n, i)
                        block.create_var(name=new, type=v.type, dtype=v.dtype,
                                         shape=v.shape or None, lod_level=v.lod_level,
                                         stop_gradient=v.stop_gradient)
                        ren[n] = new
                        shard_vars.add(n)
                    attrs = dict(op._attrs)
                    if op.type == "fill_constant" and _role(op) & OpRole.Loss:
                        attrs["value"] = float(attrs.get("value", 1.0)) / S
                    block.append_op(
                        type=op.type,
                        inputs={k: [ren.get(a, a) for a in args] for k, args in op._inputs.items()},
                        outputs=state.outputs(op, ren, i),
                        attrs=attrs)
            state.append_means()
            read_after = []
            for op in once_after:
                for n in op.input_arg_names:
                    if n in shard_vars and n in written and n not in read_after:
                        read_after.append(n)
            for n in read_after:
                if "@GRAD" not in n:
                    raise ValueError("ParallelExecutor: optimiser op reads '%s', which is "
                                     "computed per place and is not a gradient" % n)
                if S == 1:
                    block.append_op(type="assign", inputs={"X": [renames[0][n]]},
                                    outputs={"Out": [n]})
                else:
                    sums([block.var(renames[i][n]) for i in range(S)], out=block.var(n))
            for op in once_after:
                block.ops.append(op)
        # Shard i's variables belong to place i // (S / P): each place's shards run on a green
        # thread of their own, concurrently with the other places' (place_parallel.py).
        per_place = S // self.device_count
        p._var_shards = {new: i for i in range(S)
                         for new in list(renames[i].values()) + state.names(i)}
        p._shard_places = [i // per_place for i in range(S)]
        p._bump()
        self._shard_vars = shard_vars
        self._renames = renames
        self._parallel_program = p
        self._built_version = getattr(src, "_version", None)

    # -- running -----------------------------------------------------------------------------

    def run(self, fetch_list, feed=None, feed_dict=None, return_numpy=True):
        """Runs one step on the batch ``feed`` (``feed_dict`` is Paddle's older name for it): a
        dict of variable name -> array, split over the shards, or a list of such dicts, one per
        place (concatenated in place order, so place ``j`` gets its own dict's rows when the
        dicts are of equal size). Returns the ``fetch_list`` values (Variables or names)
        merged over the places (see the module documentation), always as NumPy arrays
        (``return_numpy`` is accepted for Paddle's signature)."""
        if feed is None:
            feed = feed_dict
        elif feed_dict is not None:
            raise ValueError("ParallelExecutor.run: give feed or feed_dict, not both")
        if isinstance(feed, (list, tuple)):
            if len(feed) != self.device_count:
                raise ValueError("ParallelExecutor.run: feed is a list of %d dicts; there are %d "
                                 "places" % (len(feed), self.device_count))
            keys = set(feed[0])
            for d in feed:
                if set(d) != keys:
                    raise ValueError("ParallelExecutor.run: the places' feed dicts name "
                                     "different variables")
            feed = {k: np.concatenate([np.asarray(d[k]) for d in feed], axis=0) for k in keys}
        if fetch_list is None:
            fetch_list = []
        names = []
        for i, item in enumerate(fetch_list):
            if isinstance(item, framework.Variable):
                names.append(item.name)
            elif isinstance(item, str):
                names.append(item)
            else:
                raise TypeError("ParallelExecutor.run: fetch_list[%d] must be a Variable or a "
                                "name, got %r" % (i, item))
        actual = []
        for n in names:
            if n in self._shard_vars:
                actual.extend(self._renames[i][n] for i in range(self.num_shards))
            else:
                actual.append(n)
        scope = self._scope if self._scope is not None else global_scope()
        outs = self._exe.run(self._parallel_program, feed=feed, fetch_list=actual, scope=scope,
                             return_numpy=True)
        result, k = [], 0
        per_place = self.num_shards // self.device_count
        for n in names:
            if n not in self._shard_vars:
                result.append(outs[k])
                k += 1
                continue
            parts = outs[k:k + self.num_shards]
            k += self.num_shards
            if all(np.size(a) == 1 for a in parts):
                vals = np.stack([np.asarray(a).reshape(-1) for a in parts])
                merged = vals.reshape(self.device_count, per_place).mean(axis=1)
                result.append(merged.astype(parts[0].dtype))
            else:
                result.append(np.concatenate(parts, axis=0))
        return result

    def bcast_params(self):
        """Paddle copied the parameters to every device; the places share one scope here, so
        there is nothing to do."""
