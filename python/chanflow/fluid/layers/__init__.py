"""Fluid's layers (``fluid.layers.*``): control flow, tensors, data, neural-network layers."""

from . import control_flow, device, io, nn, tensor
from .control_flow import *  # noqa: F401,F403
from .io import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .tensor import *  # noqa: F401,F403

__all__ = control_flow.__all__ + io.__all__ + nn.__all__ + tensor.__all__
