"""Paddle Fluid's API by its names, over chanflow: ``import chanflow.fluid as fluid`` and write
Fluid's CSP programs (``fluid.make_channel``, ``fluid.Go``, ``fluid.Select``,
``fluid.layers.While`` ...) or training programs (``fluid.layers.data``, ``fc``, ``conv2d`` ...,
``fluid.optimizer.Adam(...).minimize(loss)``), then run them with
``fluid.Executor(fluid.CPUPlace()).run`` (persistable variables live in ``fluid.global_scope()``).

The programs built are chanflow's program format (Fluid's ProgramDesc): ``Program.to_string``,
``Program.save`` and ``Program.desc.serialize_to_string()`` give what ``chanflow run`` reads.
"""

from . import core
from . import framework
from . import unique_name
from . import layer_helper
from . import initializer
from . import regularizer
from . import param_attr
from . import layers
from . import backward
from . import optimizer
from . import nets
from . import concurrency
from . import executor
from . import io
from . import parallel_executor

from .core import CPUPlace, CUDAPlace
from .framework import (
    Program,
    Block,
    Variable,
    Operator,
    Parameter,
    default_main_program,
    default_startup_program,
    program_guard,
    switch_main_program,
    switch_startup_program,
    get_var,
)
from .executor import Executor, global_scope, scope_guard
from .param_attr import ParamAttr, WeightNormParamAttr
from .concurrency import (
    Go,
    Select,
    make_channel,
    channel_send,
    channel_recv,
    channel_close,
)
from .layer_helper import LayerHelper
from .data_feeder import DataFeeder
from .parallel_executor import ParallelExecutor, ExecutionStrategy, BuildStrategy

__all__ = (
    framework.__all__
    + executor.__all__
    + concurrency.__all__
    + ["core", "layers", "unique_name", "layer_helper", "CPUPlace", "CUDAPlace", "LayerHelper", "io"]
    + ["initializer", "regularizer", "param_attr", "backward", "optimizer", "nets"]
    + ["ParamAttr", "WeightNormParamAttr", "DataFeeder"]
    + parallel_executor.__all__
)
