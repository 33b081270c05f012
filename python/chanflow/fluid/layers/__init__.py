"""Fluid's layers that concurrent programs use (``fluid.layers.*``)."""

from . import control_flow, nn, tensor
from .control_flow import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .tensor import *  # noqa: F401,F403

__all__ = control_flow.__all__ + nn.__all__ + tensor.__all__
