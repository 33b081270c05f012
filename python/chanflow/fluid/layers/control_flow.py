"""Fluid's control-flow layers: ``While``, ``Switch``, ``IfElse``, ``ConditionalBlock``,
``split_lod_tensor``, ``merge_lod_tensor``, ``increment``, ``less_than``, ``equal``, ``Print``,
and ``BlockGuard``, the ``with`` statement that opens a sub-block.

``While(cond)`` runs its block while the one-element BOOL ``cond`` is true; the body must write
``cond`` to end the loop::

    i = fill_constant(shape=[1], dtype='int64', value=0)
    n = fill_constant(shape=[1], dtype='int64', value=10)
    cond = less_than(x=i, y=n)
    loop = While(cond=cond)
    with loop.block():
        increment(x=i)
        less_than(x=i, y=n, cond=cond)

The ``while`` op lists as ``X`` what the body reads before writing it, as ``Out`` the enclosing
block's variables it writes (the condition included), and a ``STEP_SCOPES`` variable, as Fluid's
``While`` did.

``Switch`` runs the first case whose one-element BOOL condition is true, else its default (each
case a ``conditional_block`` with ``is_scalar_condition``, guarded by ``logical_and``/
``logical_not`` of the earlier conditions, as Fluid built it); the learning-rate schedules'
idiom::

    with Switch() as switch:
        with switch.case(less_than(step, boundary)):
            assign(warm_lr, output=lr)
        with switch.default():
            assign(base_lr, output=lr)

``IfElse(cond)`` splits the rows of its inputs by the BOOL column ``cond`` ([N, 1]): the true
block computes on the rows where ``cond`` is true, the false block on the others, and
``ie()`` merges the blocks' outputs back into row order (``split_lod_tensor`` /
``merge_lod_tensor``; both blocks always run, on possibly empty row sets)::

    ie = IfElse(less_than(x, limit))
    with ie.true_block():
        ie.output(scale(ie.input(x), scale=2.0))
    with ie.false_block():
        ie.output(scale(ie.input(x), scale=-1.0))
    out, = ie()

chanflow does not differentiate through ``conditional_block``: these are forward-only (a loss
depending on an ``IfElse`` or ``Switch`` output raises naming the op when its gradient is built).
"""

from .. import core
from .. import framework
from .. import unique_name
from ..layer_helper import LayerHelper

__all__ = [
    "BlockGuard",
    "While",
    "ParallelDo",
    "ConditionalBlock",
    "Switch",
    "IfElse",
    "split_lod_tensor",
    "merge_lod_tensor",
    "increment",
    "less_than",
    "equal",
    "Print",
]

VarType = core.VarDesc.VarType


def _check_variable(value, what, layer):
    if not isinstance(value, framework.Variable):
        raise TypeError("%s: %s must be a Variable, got %r" % (layer, what, value))


def reads_and_writes(ops, written=()):
    """What ``ops`` read before writing (in order of the ops) and everything written
    (``written`` included): the scan Fluid's ``Go``, ``While`` and ``Select`` make of a block."""
    written = set(written)
    reads = set()
    for op in ops:
        for param in op.input_names:
            for name in op.input(param):
                if name not in written:
                    reads.add(name)
        for param in op.output_names:
            for name in op.output(param):
                written.add(name)
    return reads, written


class BlockGuard(object):
    """``with BlockGuard(program):`` makes the body's layers write into a new block of
    ``program`` (a child of its current block); the parent is current again afterwards."""

    def __init__(self, main_program):
        if not isinstance(main_program, framework.Program):
            raise TypeError("BlockGuard takes a program, got %r" % (main_program,))
        self.main_program = main_program
        self._block = None

    def __enter__(self):
        self._block = self.main_program.create_block()

    def __exit__(self, exc_type, exc_val, exc_tb):
        self._leave()
        return False

    def _check_current(self, what):
        """Raises unless the block this guard opened is still the current block."""
        current = self.main_program.current_block()
        if current is not self._block:
            raise ValueError(
                "%s: the current block is block %d, not the block %d it opened (a block was "
                "left open inside it, or the default program changed)"
                % (what, current.idx, self._block.idx)
            )

    def _leave(self):
        """Makes the parent of the opened block current (also when an error left an inner block
        open)."""
        self.main_program.current_block_idx = self._block.parent_idx


class WhileGuard(BlockGuard):
    def __init__(self, while_op):
        if not isinstance(while_op, While):
            raise TypeError("WhileGuard takes a while op")
        super(WhileGuard, self).__init__(while_op.helper.main_program)
        self.while_op = while_op

    def __enter__(self):
        if self.while_op.status != While.BEFORE_WHILE_BLOCK:
            raise ValueError("While: block() may be entered once per While")
        self.while_op.status = While.IN_WHILE_BLOCK
        return super(WhileGuard, self).__enter__()

    def __exit__(self, exc_type, exc_val, exc_tb):
        try:
            if exc_type is None:
                self._check_current("While")
                self.while_op.status = While.AFTER_WHILE_BLOCK
                self.while_op._complete()
        finally:
            self._leave()
        return False


class While(object):
    """``While(cond, is_test=False, name=None)``: a loop over ``with while_op.block():``.

    ``cond`` must be a BOOL variable of one element; ``TypeError`` otherwise."""

    BEFORE_WHILE_BLOCK = 0
    IN_WHILE_BLOCK = 1
    AFTER_WHILE_BLOCK = 2

    def __init__(self, cond, is_test=False, name=None):
        self.helper = LayerHelper("while", name=name)
        self.status = While.BEFORE_WHILE_BLOCK
        if not isinstance(cond, framework.Variable):
            raise TypeError("While: condition should be a variable, got %r" % (cond,))
        if cond.dtype != VarType.BOOL:
            raise TypeError(
                "While: condition '%s' should be a bool variable, not %r" % (cond.name, cond.dtype)
            )
        size = 1
        for d in cond.shape:
            size *= d
        if size != 1:
            raise TypeError(
                "While: condition '%s' should be a bool scalar, its shape is %s"
                % (cond.name, cond.shape)
            )
        self.cond_var = cond
        self.is_test = is_test

    def block(self):
        return WhileGuard(self)

    def _complete(self):
        program = self.helper.main_program
        while_block = program.current_block()
        parent_block = program.block(while_block.parent_idx)
        reads, written = reads_and_writes(while_block.ops, {self.cond_var.name})
        out_vars = [parent_block.var(n) for n in sorted(written) if n in parent_block.vars]
        x_vars = [parent_block.var_recursive(n) for n in sorted(reads)]
        step_scope = parent_block.create_var(type=VarType.STEP_SCOPES)
        parent_block.append_op(
            type="while",
            inputs={"X": x_vars, "Condition": [self.cond_var]},
            outputs={"Out": out_vars, "StepScopes": [step_scope]},
            attrs={"sub_block": while_block, "is_test": self.is_test},
        )


class ParallelDoGuard(BlockGuard):
    """``with pd.do():``: the body's layers describe what one place computes."""

    def __init__(self, parallel_do):
        super(ParallelDoGuard, self).__init__(parallel_do.helper.main_program)
        self.parallel_do = parallel_do

    def __enter__(self):
        if self.parallel_do.status != ParallelDo.BEFORE_PARALLEL_DO_BLOCK:
            raise ValueError("ParallelDo: do() may be entered once per ParallelDo")
        self.parallel_do.status = ParallelDo.IN_PARALLEL_DO_BLOCK
        return super(ParallelDoGuard, self).__enter__()

    def __exit__(self, exc_type, exc_val, exc_tb):
        try:
            if exc_type is None:
                self._check_current("ParallelDo")
        except BaseException:
            self._leave()
            raise
        self._leave()
        if exc_type is None:
            self.parallel_do._complete(self._block)
        return False


class ParallelDo(object):
    """Fluid's ``ParallelDo(places)``: the body of ``with pd.do():`` run on every place, each on
    its part of the batch::

        places = fluid.layers.device.get_places()
        pd = ParallelDo(places)
        with pd.do():
            x_ = pd.read_input(x)                 # this place's rows of x
            loss = fluid.layers.mean(net(x_))
            pd.write_output(loss)
        loss = fluid.layers.mean(pd())            # one loss per place

    **Shards.** The batch is cut along dimension 0 into ``S`` equal shards, ``S`` the smallest
    multiple of the place count that is at least 8 (``num_shards``, a chanflow keyword,
    overrides it): place ``j`` owns shards ``j*S/P .. (j+1)*S/P - 1``. The body is copied into
    the enclosing block once per shard when the ``with`` ends (its variables renamed
    ``<name>.shard_<i>``; parameters and other variables of enclosing blocks shared), and
    ``Executor.run`` runs each place's shards on a green thread of its own, concurrently with
    the other places' (``place_parallel``). ``read_input(var)`` is ``var``'s shard;
    ``write_output(var)`` gathers ``var`` over the places: a one-element variable (a loss, an
    accuracy) gives one value per place, the mean of the place's shards (shape ``[P]``, as
    Paddle's per-device values), anything else is concatenated along dimension 0 in shard
    order, which is place order (Paddle's result for per-row values). ``pd()`` returns the
    gathered outputs (one Variable, or a list for several).

    Parameters are shared: ``append_backward`` sums their gradients over the shards (run as a
    pairwise tree in shard order, ``place_parallel``). The gradient each shard receives does not depend on the place count when ``P`` and
    ``S/P`` are powers of two (``1/P`` then ``1/(S/P)``, both exact), so for every place count
    dividing 8 the trained weights are bit-identical, and equal to the undivided batch's up to
    float rounding. A per-row statistic of the body (``batch_norm``) is computed per shard; the
    state such an op updates in place (the running mean and variance) is updated once per step,
    to the mean of the shards' updates (``place_parallel.ShardedState``).

    A batch that does not split into ``S`` equal shards fails at run time (``chanflow.Error``,
    from the ``split``). A body with control flow (a nested block) raises ``ValueError``, as
    does ``write_output`` of a variable declared with a fixed dimension 0 that is not one
    element (neither per-row nor one value); the body's own variables are not usable outside it
    (use ``write_output``). ``use_nccl`` must be False.
    """

    BEFORE_PARALLEL_DO_BLOCK = 0
    IN_PARALLEL_DO_BLOCK = 1
    AFTER_PARALLEL_DO_BLOCK = 2

    def __init__(self, places, use_nccl=False, name=None, num_shards=None):
        if use_nccl:
            raise ValueError("ParallelDo: use_nccl=True needs GPUs; chanflow has none")
        try:
            n = len(places)
        except TypeError:
            raise TypeError("ParallelDo: places must be a list of places (get_places()), got %r"
                            % (places,))
        if n < 1:
            raise ValueError("ParallelDo: places is empty")
        for p in places:
            if not isinstance(p, core.CPUPlace):
                raise TypeError("ParallelDo: every place must be a CPUPlace, got %r" % (p,))
        if num_shards is None:
            num_shards = n * -(-8 // n)
        if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards < 1 \
                or num_shards % n:
            raise ValueError("ParallelDo: num_shards must be a positive multiple of the place "
                             "count %d, got %r" % (n, num_shards))
        self.helper = LayerHelper("parallel_do", name=name)
        self.places = places
        self.num_places = n
        self.num_shards = num_shards
        self.status = ParallelDo.BEFORE_PARALLEL_DO_BLOCK
        self._inputs = []  # (outer variable, variable of the body)
        self._outputs = []  # variables of the body
        self._results = None

    def do(self):
        return ParallelDoGuard(self)

    def _check_in_block(self, what):
        if self.status != ParallelDo.IN_PARALLEL_DO_BLOCK:
            raise ValueError("ParallelDo.%s must be called inside 'with pd.do():'" % what)

    def read_input(self, var):
        """A variable of the body holding a shard of ``var`` (split along dim 0)."""
        self._check_in_block("read_input")
        _check_variable(var, "read_input's argument", "ParallelDo")
        shape = list(var.shape)
        if shape and shape[0] > 0:
            if shape[0] % self.num_shards:
                raise ValueError(
                    "ParallelDo.read_input: dim 0 of '%s' (%d) does not split into %d equal "
                    "shards" % (var.name, shape[0], self.num_shards))
            shape[0] //= self.num_shards
        block = self.helper.main_program.current_block()
        inner = block.create_var(
            name=unique_name.generate("parallel_do_input"),
            type=var.type,
            dtype=var.dtype,
            shape=shape or None,
            lod_level=var.lod_level,
            stop_gradient=var.stop_gradient,
        )
        self._inputs.append((var, inner))
        return inner

    def write_output(self, var):
        """Gathers ``var`` (a variable the body writes) over the places."""
        self._check_in_block("write_output")
        _check_variable(var, "write_output's argument", "ParallelDo")
        self._outputs.append(var)

    def __call__(self, *args, **kwargs):
        if self.status != ParallelDo.AFTER_PARALLEL_DO_BLOCK:
            raise ValueError("ParallelDo: outputs can only be retrieved after the do() block")
        if not self._results:
            raise ValueError("ParallelDo has no output (call write_output in the block)")
        return self._results[0] if len(self._results) == 1 else list(self._results)

    def _complete(self, body):
        from .nn import mean, split
        from .tensor import concat

        program = self.helper.main_program
        if program.blocks[-1] is not body:
            raise ValueError("ParallelDo: the body opened nested blocks (control flow), which "
                             "chanflow's ParallelDo does not support")
        program.blocks.pop()
        program._bump()
        parent = program.current_block()
        n, S = self.num_places, self.num_shards
        k = S // n
        for var in self._outputs:
            dims = list(var.shape)
            fixed = bool(dims) and all(d > 0 for d in dims)
            one = fixed and all(d == 1 for d in dims)
            if k > 1 and one and var.dtype not in (VarType.FP16, VarType.FP32, VarType.FP64):
                raise ValueError("ParallelDo.write_output: '%s' is one %r element; a place's "
                                 "value is the mean of its shards', which needs a float"
                                 % (var.name, var.dtype))
            if S > 1 and dims and dims[0] > 0 and not one:
                raise ValueError("ParallelDo.write_output: '%s' is declared %s, a fixed "
                                 "dimension 0 that is not one element: neither a value per row "
                                 "(concatenated over the shards) nor one value (averaged)"
                                 % (var.name, dims))
        renames = [dict() for _ in range(S)]
        for outer, inner in self._inputs:
            parts = split(outer, S, dim=0) if S > 1 else [outer]
            for i, part in enumerate(parts):
                part.stop_gradient = outer.stop_gradient
                renames[i][inner.name] = part.name
        from ..place_parallel import ShardedState

        state = ShardedState(parent, S)
        for i in range(S):
            ren = renames[i]
            for name, v in body.vars.items():
                if name in ren:
                    continue
                new = "%s.shard_%d" % (name, i)
                parent.create_var(
                    name=new, type=v.type, dtype=v.dtype, shape=v.shape or None,
                    lod_level=v.lod_level, persistable=v.persistable,
                    stop_gradient=v.stop_gradient)
                ren[name] = new
            for op in body.ops:
                for value in op._attrs.values():
                    if isinstance(value, framework.Block):
                        raise ValueError("ParallelDo: op '%s' of the body has a block "
                                         "attribute (control flow is not supported)" % op.type)
                parent.append_op(
                    type=op.type,
                    inputs={k: [ren.get(a, a) for a in args] for k, args in op._inputs.items()},
                    outputs=state.outputs(op, ren, i),
                    attrs=dict(op._attrs),
                )
        state.append_means()
        # Shard i's variables are place i // k's: Executor.run runs the places concurrently.
        # (Recorded for one place too: the sums over the shards are the same trees then.)
        base = len(program._shard_places)
        shards = {}
        for i in range(S):
            for new in list(renames[i].values()) + state.names(i):
                shards[new] = base + i
        program._shard_places.extend(i // k for i in range(S))
        results = []
        for var in self._outputs:
            per_shard = [parent.var_recursive(renames[i].get(var.name, var.name))
                         for i in range(S)]
            dims = list(var.shape)
            if k > 1 and dims and all(d == 1 for d in dims):
                per_place = []
                for j in range(n):
                    per_place.append(mean(concat(per_shard[j * k:(j + 1) * k], axis=0)))
            else:
                per_place = per_shard
            results.append(concat(per_place, axis=0) if len(per_place) > 1 else per_place[0])
        program._var_shards.update(shards)
        program._bump()
        self._results = results
        self.status = ParallelDo.AFTER_PARALLEL_DO_BLOCK


class ConditionalBlockGuard(BlockGuard):
    """``with cond_block.block():``: the body's layers go to the conditional block; leaving it
    appends the ``conditional_block`` op to the enclosing block."""

    def __init__(self, block):
        if not isinstance(block, ConditionalBlock):
            raise TypeError("ConditionalBlockGuard takes a ConditionalBlock, got %r" % (block,))
        super(ConditionalBlockGuard, self).__init__(block.helper.main_program)
        self.block = block

    def __exit__(self, exc_type, exc_val, exc_tb):
        try:
            if exc_type is None:
                self._check_current("ConditionalBlock")
                self.block._complete(self._block)
        finally:
            self._leave()
        return False


class ConditionalBlock(object):
    """A block run once when its condition holds: ``ConditionalBlock(inputs,
    is_scalar_condition=False, name=None)``. With ``is_scalar_condition`` ``inputs`` is one
    one-element BOOL variable, the condition; otherwise the block runs when every variable of
    ``inputs`` is non-empty (IfElse's use).

    The ``conditional_block`` op lists ``inputs`` as ``X``, as ``Params`` what the body reads
    before writing it, as ``Out`` the enclosing blocks' variables it writes (both sorted), and a
    ``STEP_SCOPES`` ``Scope`` variable, as Fluid's."""

    def __init__(self, inputs, is_scalar_condition=False, name=None):
        inputs = list(inputs)
        for each in inputs:
            _check_variable(each, "each input", "ConditionalBlock")
        if not inputs:
            raise ValueError("ConditionalBlock: inputs is empty")
        if is_scalar_condition:
            if len(inputs) != 1:
                raise ValueError("ConditionalBlock: a scalar condition is one variable, got %d"
                                 % len(inputs))
            _check_bool_scalar(inputs[0], "ConditionalBlock")
        self.inputs = inputs
        self.is_scalar_condition = bool(is_scalar_condition)
        self.helper = LayerHelper("conditional_block", name=name)

    def block(self):
        return ConditionalBlockGuard(self)

    def _complete(self, inside_block):
        program = self.helper.main_program
        parent_block = program.block(inside_block.parent_idx)
        reads, written = reads_and_writes(inside_block.ops)
        input_names = set(v.name for v in self.inputs)
        params = [parent_block.var_recursive(n) for n in sorted(reads)
                  if n not in input_names and n not in inside_block.vars]
        outs = []
        for n in sorted(written):
            if n in inside_block.vars:
                continue
            v = parent_block._find_var_recursive(n)
            if v is not None:
                outs.append(v)
        step_scope = parent_block.create_var(type=VarType.STEP_SCOPES)
        parent_block.append_op(
            type="conditional_block",
            inputs={"X": self.inputs, "Params": params},
            outputs={"Out": outs, "Scope": [step_scope]},
            attrs={"sub_block": inside_block, "is_scalar_condition": self.is_scalar_condition},
        )


def _check_bool_scalar(cond, layer):
    _check_variable(cond, "the condition", layer)
    if cond.dtype != VarType.BOOL:
        raise TypeError("%s: the condition '%s' must be a BOOL variable, not %r"
                        % (layer, cond.name, cond.dtype))
    size = 1
    for d in cond.shape or ():
        size *= d
    if cond.shape and size != 1:
        raise TypeError("%s: the condition '%s' must have one element, its shape is %s"
                        % (layer, cond.name, list(cond.shape)))


class Switch(object):
    """Fluid's ``Switch(name=None)``: ``with Switch() as switch:``, then ``with
    switch.case(cond):`` blocks (``cond`` a one-element BOOL variable) and at most one ``with
    switch.default():`` after them. The first case whose condition is true runs, else the
    default.

    Case ``k`` runs under ``not c_0 and ... and not c_{k-1} and c_k`` (``logical_not`` /
    ``logical_and`` ops appended when the case is made, as Fluid), so the conditions are all
    evaluated before the first case body runs; a case body that changes a later case's
    condition does not change which case runs."""

    def __init__(self, name=None):
        self.helper = LayerHelper("switch", name=name)
        self.inside_scope = False
        self.pre_not_conditions = []
        self._has_default = False

    def case(self, condition):
        from .nn import logical_and, logical_not

        if not self.inside_scope:
            raise ValueError("Switch.case must be called inside 'with Switch() as switch:'")
        if self._has_default:
            raise ValueError("Switch.case after Switch.default: the default must come last")
        _check_bool_scalar(condition, "Switch.case")
        if not self.pre_not_conditions:
            cond_block = ConditionalBlock([condition], is_scalar_condition=True)
            self.pre_not_conditions.append(logical_not(x=condition))
        else:
            pre_not = self.pre_not_conditions[-1]
            self.pre_not_conditions.append(
                logical_and(x=pre_not, y=logical_not(x=condition)))
            cond_block = ConditionalBlock([logical_and(x=pre_not, y=condition)],
                                          is_scalar_condition=True)
        return ConditionalBlockGuard(cond_block)

    def default(self):
        if not self.inside_scope:
            raise ValueError("Switch.default must be called inside 'with Switch() as switch:'")
        if not self.pre_not_conditions:
            raise ValueError("Switch.default: there should be at least one case before it")
        if self._has_default:
            raise ValueError("Switch.default: a Switch has one default")
        self._has_default = True
        cond_block = ConditionalBlock([self.pre_not_conditions[-1]], is_scalar_condition=True)
        return ConditionalBlockGuard(cond_block)

    def __enter__(self):
        self.inside_scope = True
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.inside_scope = False
        return False


def split_lod_tensor(input, mask, level=0):
    """``(out_true, out_false)``: the rows of ``input`` where the BOOL column ``mask`` ([N, 1])
    is true, and the others, in order (a ``split_lod_tensor`` op; chanflow's tensors carry no
    LoD, so ``level`` must be 0: the rows)."""
    _check_variable(input, "input", "split_lod_tensor")
    _check_variable(mask, "mask", "split_lod_tensor")
    helper = LayerHelper("split_lod_tensor", **locals())
    out_true = helper.create_tmp_variable(dtype=input.dtype, shape=input.shape)
    out_false = helper.create_tmp_variable(dtype=input.dtype, shape=input.shape)
    helper.append_op(
        type="split_lod_tensor",
        inputs={"X": [input], "Mask": [mask]},
        outputs={"OutTrue": [out_true], "OutFalse": [out_false]},
        attrs={"level": level},
    )
    return out_true, out_false


def merge_lod_tensor(in_true, in_false, x, mask, level=0):
    """The rows of ``in_true`` and ``in_false`` merged into ``mask``'s order (row ``i`` from
    ``in_true`` when ``mask[i]``); ``x`` gives the row count (a ``merge_lod_tensor`` op)."""
    for value, what in ((in_true, "in_true"), (in_false, "in_false"), (x, "x"), (mask, "mask")):
        _check_variable(value, what, "merge_lod_tensor")
    helper = LayerHelper("merge_lod_tensor", **locals())
    out = helper.create_tmp_variable(dtype=in_true.dtype, shape=in_true.shape)
    helper.append_op(
        type="merge_lod_tensor",
        inputs={"X": [x], "Mask": [mask], "InTrue": [in_true], "InFalse": [in_false]},
        outputs={"Out": [out]},
        attrs={"level": level},
    )
    return out


class IfElseBlockGuard(object):
    def __init__(self, is_true, ifelse):
        if not isinstance(ifelse, IfElse):
            raise TypeError("IfElseBlockGuard takes an IfElse")
        if ifelse.status != IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("IfElse: true_block()/false_block() cannot be opened inside a block")
        self.is_true = is_true
        self.ie = ifelse
        side = ifelse.conditional_true_block if is_true else ifelse.conditional_false_block
        self.cond_block = side.block()

    def __enter__(self):
        self.ie.status = (IfElse.IN_IF_ELSE_TRUE_BLOCKS if self.is_true
                          else IfElse.IN_IF_ELSE_FALSE_BLOCKS)
        self.cond_block.__enter__()

    def __exit__(self, exc_type, exc_val, exc_tb):
        try:
            if exc_type is None and not self.ie.output_table[1 if self.is_true else 0]:
                raise ValueError("IfElse: the %s block set no output (call ie.output(...) in it)"
                                 % ("true" if self.is_true else "false"))
        except BaseException:
            self.cond_block._leave()
            self.ie.status = IfElse.OUT_IF_ELSE_BLOCKS
            raise
        try:
            self.cond_block.__exit__(exc_type, exc_val, exc_tb)
        finally:
            self.ie.status = IfElse.OUT_IF_ELSE_BLOCKS
        return False


class IfElse(object):
    """Fluid's ``IfElse(cond, name=None)``: per-row if/else on the BOOL column ``cond`` ([N,
    1])::

        ie = IfElse(cond)
        with ie.true_block():
            ie.output(f(ie.input(x)))     # the rows of x where cond is true
        with ie.false_block():
            ie.output(g(ie.input(x)))     # the others
        out = ie()                        # a list: each output merged back into row order

    ``ie.input(x)`` splits ``x`` once (a ``split_lod_tensor`` op in the enclosing block) and
    gives the current block's part; ``ie.output(*vars)`` assigns each to a new variable of the
    enclosing block. Both blocks run (each is a ``conditional_block`` on ``cond``, which is never
    empty), on possibly empty row sets. ``ie()`` merges the outputs pairwise
    (``merge_lod_tensor``); when only one block set outputs, it returns those unmerged, as
    Fluid."""

    OUT_IF_ELSE_BLOCKS = 0
    IN_IF_ELSE_TRUE_BLOCKS = 1
    IN_IF_ELSE_FALSE_BLOCKS = 2

    def __init__(self, cond, name=None):
        _check_variable(cond, "cond", "IfElse")
        if cond.dtype != VarType.BOOL:
            raise TypeError("IfElse: cond '%s' must be a BOOL variable, not %r"
                            % (cond.name, cond.dtype))
        self.helper = LayerHelper("ifelse", name=name)
        self.cond = cond
        self.input_table = {}
        self.status = IfElse.OUT_IF_ELSE_BLOCKS
        self.conditional_true_block = ConditionalBlock(inputs=[self.cond])
        self.conditional_false_block = ConditionalBlock(inputs=[self.cond])
        self.output_table = ([], [])  # (false block's outputs, true block's outputs)

    def _parent_block(self):
        current = self.helper.main_program.current_block()
        return self.helper.main_program.block(current.parent_idx)

    def input(self, x):
        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("IfElse.input must be called in true_block() or false_block()")
        _check_variable(x, "input", "IfElse")
        if id(x) not in self.input_table:
            parent = self._parent_block()
            parts = []
            for _ in range(2):
                parts.append(parent.create_var(
                    name=unique_name.generate("ifelse_input" + self.helper.name),
                    dtype=x.dtype, shape=x.shape))
            parent.append_op(
                type="split_lod_tensor",
                inputs={"X": [x], "Mask": [self.cond]},
                outputs={"OutTrue": [parts[0]], "OutFalse": [parts[1]]},
                attrs={"level": 0},
            )
            self.input_table[id(x)] = (parts[0], parts[1])
        out_true, out_false = self.input_table[id(x)]
        return out_true if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else out_false

    def true_block(self):
        return IfElseBlockGuard(True, self)

    def false_block(self):
        return IfElseBlockGuard(False, self)

    def output(self, *outs):
        from .tensor import assign

        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("IfElse.output must be called in true_block() or false_block()")
        table = self.output_table[1 if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else 0]
        parent = self._parent_block()
        for each in outs:
            _check_variable(each, "each output", "IfElse.output")
            outside = parent.create_var(
                name=unique_name.generate("_".join([self.helper.name, "output"])),
                dtype=each.dtype, shape=each.shape)
            table.append(outside)
            assign(input=each, output=outside)

    def __call__(self):
        if self.status != IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("IfElse() must be called after the blocks, outside them")
        false_len, true_len = len(self.output_table[0]), len(self.output_table[1])
        if false_len == 0 and true_len == 0:
            raise ValueError("IfElse(): open true_block()/false_block() and set outputs first")
        if false_len != true_len and false_len != 0 and true_len != 0:
            raise ValueError("IfElse(): the true block has %d outputs, the false block %d; they "
                             "must be as many" % (true_len, false_len))
        if false_len == 0 or true_len == 0:
            return self.output_table[0 if false_len != 0 else 1]
        return [merge_lod_tensor(in_true=t, in_false=f, x=self.cond, mask=self.cond, level=0)
                for f, t in zip(*self.output_table)]


def increment(x, value=1.0, in_place=True):
    """``x + value`` (``x`` has one element); written into ``x`` itself when ``in_place``, else
    into a new variable. Returns the variable written."""
    _check_variable(x, "x", "increment")
    helper = LayerHelper("increment", **locals())
    if not in_place:
        out = helper.create_tmp_variable(dtype=x.dtype, shape=x.shape)
    else:
        out = x
    helper.append_op(
        type="increment",
        inputs={"X": [x]},
        outputs={"Out": [out]},
        attrs={"step": float(value)},
    )
    return out


def _compare(op_type, x, y, cond, attrs):
    """The comparison layers: ``x <op> y`` elementwise into a BOOL variable (``cond`` when
    given, else a new temporary)."""
    _check_variable(x, "x", op_type)
    _check_variable(y, "y", op_type)
    helper = LayerHelper(op_type, x=x, y=y, cond=cond)
    if cond is None:
        cond = helper.create_tmp_variable(dtype="bool", shape=x.shape)
        cond.stop_gradient = True
    else:
        _check_variable(cond, "cond", op_type)
    helper.append_op(
        type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [cond]}, attrs=attrs
    )
    return cond


def less_than(x, y, force_cpu=None, cond=None):
    """``x < y`` elementwise into a BOOL variable (``cond`` when given)."""
    attrs = {} if force_cpu is None else {"force_cpu": force_cpu}
    return _compare("less_than", x, y, cond, attrs)


def equal(x, y, cond=None):
    """``x == y`` elementwise into a BOOL variable (``cond`` when given)."""
    return _compare("equal", x, y, cond, {})


_PRINT_PHASES = ("FORWARD", "BACKWARD", "BOTH")


def Print(
    input,
    first_n=-1,
    message=None,
    summarize=-1,
    print_tensor_name=True,
    print_tensor_type=True,
    print_tensor_shape=True,
    print_tensor_lod=True,
    print_phase="both",
):
    """Prints ``input`` (its name, shape, dtype and values) each time the op runs, as Fluid's
    2018 ``Print``: a ``print`` op with no output, every attribute written. ``first_n``: print
    only the first n times (-1: always); ``summarize``: at most this many elements (-1: all);
    ``message``: a prefix. Returns ``input``."""
    _check_variable(input, "input", "Print")
    if not isinstance(print_phase, str) or print_phase.upper() not in _PRINT_PHASES:
        raise ValueError(
            "Print: print_phase must be 'forward', 'backward' or 'both', got %r" % (print_phase,)
        )
    helper = LayerHelper("print", **locals())
    helper.append_op(
        type="print",
        inputs={"In": input},
        attrs={
            "first_n": first_n,
            "summarize": summarize,
            "message": message or "",
            "print_tensor_name": print_tensor_name,
            "print_tensor_type": print_tensor_type,
            "print_tensor_shape": print_tensor_shape,
            "print_tensor_lod": print_tensor_lod,
            "print_phase": print_phase.upper(),
        },
    )
    return input
