"""Fluid's CSP layers: ``make_channel``, ``channel_send``, ``channel_recv``, ``channel_close``,
``Go`` and ``Select``, emitting the ops Fluid's ``concurrency.py`` emitted.

::

    ch = fluid.make_channel(dtype=core.VarDesc.VarType.LOD_TENSOR)
    with fluid.Go():                       # a go block: runs on a green thread
        v = fluid.layers.fill_constant(shape=[1], dtype='int64', value=99)
        fluid.channel_send(ch, v)
    got = block.create_var(name='got', type=LOD_TENSOR, dtype=INT64)
    got, status = fluid.channel_recv(ch, got)

    with fluid.Select() as select:         # Go's select
        with select.case(fluid.channel_send, ch, x):
            ...                            # runs when x was sent
        with select.case(fluid.channel_recv, quit, q):
            ...                            # runs when q was received
        with select.default():
            ...                            # runs when no case is ready

The emission rules (Fluid's):

- ``make_channel`` declares a persistable ``CHANNEL`` variable ``channel_<n>`` with no channel
  description; its element type (``dtype``) and capacity are the attributes of the
  ``channel_create`` op that makes the channel.
- ``channel_send(..., is_copy=True)`` sends a copy: an ``assign`` into ``<value>_copy_<n>``
  before the ``channel_send``. ``channel_recv`` writes ``Out`` and a BOOL ``status_<n>``.
- ``Go`` appends a ``go`` op to the enclosing block, its ``X`` what the go block's ops read
  before writing them (the go block's arguments), its ``sub_block`` the go block.
- ``Select`` writes ``case_to_execute = fill_constant(INT32, -1)`` in the enclosing block, makes
  an ``is_copy`` send's copy there too, and in the select's block gives each case
  ``equal(fill_constant(INT32, <index>), case_to_execute)`` and a ``conditional_block`` over the
  case's body; the ``select`` op lists its cases as ``"<index>,<kind>,<channel>,<value>"`` (kind
  0 default, 1 send, 2 receive), as ``X`` what the case bodies read (and ``case_to_execute``),
  as ``Out`` the enclosing block's variables they write.

Names in ``X`` and ``Out`` lists are sorted (Fluid iterated a Python set: any order).
"""

from . import core
from . import framework
from . import unique_name
from .layer_helper import LayerHelper
from .layers.control_flow import BlockGuard, equal, reads_and_writes
from .layers.tensor import fill_constant

__all__ = ["Go", "make_channel", "channel_send", "channel_recv", "channel_close", "Select"]

VarType = core.VarDesc.VarType


def _check_channel(channel, who):
    if not isinstance(channel, framework.Variable):
        raise TypeError(
            "%s: channel must be a channel Variable (from make_channel), got %r" % (who, channel)
        )
    if channel.type != VarType.CHANNEL:
        raise TypeError(
            "%s: variable '%s' is not a channel (its type is %r; make one with make_channel)"
            % (who, channel.name, channel.type)
        )


def _check_value(value, who, what="value"):
    if not isinstance(value, framework.Variable):
        raise TypeError("%s: %s must be a Variable, got %r" % (who, what, value))


def _copy_for_send(block, value):
    """A new variable like ``value`` in ``block`` and an ``assign`` of ``value`` into it."""
    copy = block.create_var(
        name=unique_name.generate(value.name + "_copy"),
        type=value.type,
        dtype=value.dtype,
        shape=value.shape,
        lod_level=value.lod_level,
    )
    block.append_op(type="assign", inputs={"X": value}, outputs={"Out": copy})
    return copy


class Go(BlockGuard):
    """``with fluid.Go():`` -- the body's ops form a go block, run on a green thread of its own
    when the ``go`` op runs. The block's arguments (``X``) are bound when it starts, like the
    arguments of Go's ``go f(x)``; other enclosing variables it uses are shared (docs/exec.md)."""

    def __init__(self, name=None):
        self.helper = LayerHelper("go", name=name)
        super(Go, self).__init__(self.helper.main_program)

    def __exit__(self, exc_type, exc_val, exc_tb):
        try:
            if exc_type is None:
                self._check_current("fluid.Go")
                self._construct_go_op()
        finally:
            self._leave()
        return False

    def _construct_go_op(self):
        program = self.main_program
        go_block = program.current_block()
        parent_block = program.block(go_block.parent_idx)
        reads, _ = reads_and_writes(go_block.ops)
        x = []
        for name in sorted(reads):
            var = parent_block._find_var_recursive(name)
            if var is None:
                raise ValueError(
                    "fluid.Go: the go block (block %d) reads variable '%s' before writing it, "
                    "but no enclosing block declares it" % (go_block.idx, name)
                )
            x.append(var)
        parent_block.append_op(
            type="go", inputs={"X": x}, outputs={}, attrs={"sub_block": go_block}
        )


class SelectCase(object):
    """One case of a ``Select``: use it as a ``with`` statement whose body runs when the case is
    chosen. Made by ``Select.case`` and ``Select.default``."""

    DEFAULT = 0
    SEND = 1
    RECEIVE = 2

    def __init__(
        self, select, case_idx, case_to_execute, action, channel=None, value=None, is_copy=False
    ):
        self.select = select
        self.helper = LayerHelper("conditional_block")
        self.main_program = select.main_program
        self.idx = case_idx
        self.case_to_execute = case_to_execute
        self.action = action
        self.channel = channel
        if action == self.SEND and is_copy:
            value = _copy_for_send(select.parent_block, value)
        self.value = value
        self.block = None
        self._done = False

    def __enter__(self):
        if self.block is not None:
            raise ValueError(
                "Select: case %d is already written (a case is one with-statement)" % self.idx
            )
        self.select._check_in_select("a Select case")
        self.block = self.main_program.create_block()

    def __exit__(self, exc_type, exc_val, exc_tb):
        left_open = self.main_program.current_block()
        self.main_program.current_block_idx = self.block.parent_idx
        if exc_type is None and left_open is not self.block:
            raise ValueError(
                "Select: case %d left block %d open (each block opened in the case must be "
                "closed in it)" % (self.idx, left_open.idx)
            )
        self._done = exc_type is None
        return False

    def _construct_op(self):
        """The case's ``equal`` + ``conditional_block`` in the select's block (the current
        block); returns its ``cases`` entry."""
        cases_block = self.main_program.current_block()
        _, inner_outputs = reads_and_writes(self.block.ops)
        out_vars = [cases_block.var(n) for n in sorted(inner_outputs) if n in cases_block.vars]
        should_execute = equal(
            fill_constant(shape=[1], dtype=VarType.INT32, value=self.idx), self.case_to_execute
        )
        step_scope = cases_block.create_var(type=VarType.STEP_SCOPES)
        cases_block.append_op(
            type="conditional_block",
            inputs={"X": [should_execute], "Params": []},
            outputs={"Out": out_vars, "Scope": [step_scope]},
            attrs={"sub_block": self.block, "is_scalar_condition": True},
        )
        return "%s,%s,%s,%s" % (
            self.idx,
            self.action,
            self.channel.name if self.channel is not None else "",
            self.value.name if self.value is not None else "",
        )


class Select(BlockGuard):
    """``with fluid.Select() as select:`` -- Go's ``select``: waits until one of its cases can
    proceed (a uniformly random one among the ready), performs it and runs its body; with a
    ``default()`` case, runs that at once when none is ready."""

    def __init__(self, name=None):
        self.helper = LayerHelper("select", name=name)
        self.parent_block = self.helper.main_program.current_block()
        self.cases = []
        self._has_default = False
        super(Select, self).__init__(self.helper.main_program)
        self.case_to_execute = fill_constant(shape=[1], dtype=VarType.INT32, value=-1)

    def __enter__(self):
        if self._block is not None:
            raise ValueError("Select: a Select is one with-statement")
        if self.main_program.current_block() is not self.parent_block:
            raise ValueError(
                "Select: made in block %d but entered in block %d"
                % (self.parent_block.idx, self.main_program.current_block().idx)
            )
        super(Select, self).__enter__()
        return self

    def _check_in_select(self, what):
        if self._block is None or self.main_program.current_block() is not self._block:
            raise ValueError(
                "%s must be written directly inside its 'with fluid.Select() as select:' "
                "statement" % what
            )

    def case(self, channel_action_fn, channel, value, is_copy=False):
        """A case that sends ``value`` on ``channel`` (``channel_action_fn`` is
        ``fluid.channel_send``; ``is_copy`` sends a copy made before the select) or receives
        from ``channel`` into ``value`` (``fluid.channel_recv``)."""
        self._check_in_select("select.case")
        if channel_action_fn is channel_send:
            action = SelectCase.SEND
        elif channel_action_fn is channel_recv:
            action = SelectCase.RECEIVE
        else:
            raise TypeError(
                "select.case: the channel action must be fluid.channel_send or "
                "fluid.channel_recv, got %r" % (channel_action_fn,)
            )
        who = "select.case(%s)" % channel_action_fn.__name__
        _check_channel(channel, who)
        _check_value(value, who)
        if is_copy and action != SelectCase.SEND:
            raise ValueError("%s: is_copy applies to a send case only" % who)
        c = SelectCase(self, len(self.cases), self.case_to_execute, action, channel, value, is_copy)
        self.cases.append(c)
        return c

    def default(self):
        """The default case: runs when no other case is ready. At most one per Select."""
        self._check_in_select("select.default")
        if self._has_default:
            raise ValueError("Select: a select has at most one default case")
        self._has_default = True
        c = SelectCase(self, len(self.cases), self.case_to_execute, SelectCase.DEFAULT)
        self.cases.append(c)
        return c

    def __exit__(self, exc_type, exc_val, exc_tb):
        try:
            if exc_type is None:
                self._check_current("fluid.Select")
                self._construct_select_op()
        finally:
            self._leave()
        return False

    def _construct_select_op(self):
        for c in self.cases:
            if c.block is None or not c._done:
                raise ValueError(
                    "Select: case %d was made but not written: use it as "
                    "'with select.case(...):' (or 'with select.default():')" % c.idx
                )
        select_block = self.main_program.current_block()
        parent_block = self.parent_block
        serialized = [c._construct_op() for c in self.cases]

        # What the case bodies read before writing (one scan across the cases, in order) and
        # what they write: the select op's X and Out.
        bodies = [op.attrs["sub_block"] for op in select_block.ops if "sub_block" in op.attrs]
        written = set()
        params = set()
        for body in bodies:
            reads, written = reads_and_writes(body.ops, written)
            params |= reads
        x = [select_block.var_recursive(n) for n in sorted(params)]
        x.append(self.case_to_execute)
        out = [parent_block.var(n) for n in sorted(written) if n in parent_block.vars]
        parent_block.append_op(
            type="select",
            inputs={"X": x, "case_to_execute": self.case_to_execute},
            outputs={"Out": out},
            attrs={"sub_block": select_block, "cases": serialized},
        )


def make_channel(dtype, capacity=0):
    """A new channel variable (persistable, ``channel_<n>``) and the ``channel_create`` op that
    makes the channel: unbuffered when ``capacity`` is 0, else buffering ``capacity`` values.
    ``dtype`` is what it carries: ``VarType.LOD_TENSOR`` (tensors of any element type, as
    Fluid's programs use), an element type (a VarType or a NumPy-style name such as
    ``'int32'``: tensors of that dtype only) or ``VarType.CHANNEL`` (channels)."""
    try:
        data_type = framework._to_var_type(dtype, "make_channel: dtype")
    except ValueError as e:
        raise TypeError(str(e))
    kinds = (VarType.LOD_TENSOR, VarType.CHANNEL)
    if data_type not in core.ELEMENT_TYPES and data_type not in kinds:
        raise TypeError(
            "make_channel: dtype %r is neither an element type, LOD_TENSOR nor CHANNEL"
            % (data_type,)
        )
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
        raise ValueError("make_channel: capacity must be an int >= 0, got %r" % (capacity,))
    helper = LayerHelper("channel_create", **locals())
    block = helper.main_program.current_block()
    channel = helper.create_variable(
        name=unique_name.generate("channel"), type=VarType.CHANNEL, persistable=True
    )
    block.append_op(
        type="channel_create",
        outputs={"Out": channel},
        attrs={"data_type": data_type, "capacity": capacity},
    )
    return channel


def channel_send(channel, value, is_copy=False):
    """Sends ``value`` on ``channel`` (blocks until a receiver takes it, or while a buffered
    channel is full). With ``is_copy`` it sends a copy of ``value``, made by an ``assign`` just
    before. Sending on a closed channel fails the run, as in Go."""
    _check_channel(channel, "channel_send")
    _check_value(value, "channel_send")
    helper = LayerHelper("channel_send", **locals())
    block = helper.main_program.current_block()
    x = _copy_for_send(block, value) if is_copy else value
    block.append_op(type="channel_send", inputs={"Channel": channel, "X": x})


def channel_recv(channel, return_value):
    """Receives a value from ``channel`` into ``return_value`` (blocks until one is there).
    Returns ``(return_value, status)``: ``status`` is a new BOOL variable, false when the channel
    was closed and drained (``return_value`` then holds a zero value)."""
    _check_channel(channel, "channel_recv")
    _check_value(return_value, "channel_recv", "return_value")
    helper = LayerHelper("channel_recv", **locals())
    block = helper.main_program.current_block()
    status = helper.create_variable(
        name=unique_name.generate("status"), type=VarType.LOD_TENSOR, dtype=VarType.BOOL
    )
    block.append_op(
        type="channel_recv",
        inputs={"Channel": channel},
        outputs={"Out": return_value, "Status": status},
    )
    return return_value, status


def channel_close(channel):
    """Closes ``channel``: receivers drain what it buffers, then get zero values with status
    false. Closing a closed channel fails the run, as in Go."""
    _check_channel(channel, "channel_close")
    helper = LayerHelper("channel_close", **locals())
    helper.main_program.current_block().append_op(type="channel_close", inputs={"Channel": channel})
