"""Fluid's ``layers.device.get_places``: the places a ``ParallelDo`` runs its block on::

    places = fluid.layers.device.get_places()        # one CPUPlace per scheduler worker
    pd = fluid.layers.ParallelDo(places)

Fluid appended a ``get_places`` op writing a PLACE_LIST variable; chanflow decides the places
when the program is built, so ``get_places`` returns a ``PlaceList`` (a Python list of
``CPUPlace``) and appends no op.
"""

import os

from .. import core

__all__ = ["get_places", "PlaceList", "scheduler_workers"]


class PlaceList(list):
    """The places of a ``ParallelDo``: a list of ``core.CPUPlace``."""

    def __repr__(self):
        return "PlaceList(%d x CPUPlace)" % len(self)


def scheduler_workers():
    """How many worker threads the process's shared scheduler starts with: the
    ``CHANFLOW_WORKERS`` environment variable when it is a positive int, else the CPU count
    (the scheduler's own rule)."""
    env = os.environ.get("CHANFLOW_WORKERS", "")
    try:
        n = int(env)
    except ValueError:
        n = 0
    if n > 0:
        return n
    return max(1, os.cpu_count() or 1)


def get_places(device_count=None, device_type=None):
    """``device_count`` CPU places (None or 0: ``scheduler_workers()``). ``device_type`` may be
    None, ``'CPU'`` or ``'AUTO'``; ``'CUDA'`` raises ``core.UnavailableError``."""
    if device_type not in (None, "CPU", "AUTO"):
        if device_type == "CUDA":
            raise core.UnavailableError(
                "get_places: device_type 'CUDA': chanflow is not compiled with CUDA"
            )
        raise ValueError("get_places: device_type must be None, 'CPU' or 'AUTO', got %r"
                         % (device_type,))
    if device_count is None or device_count == 0:
        device_count = scheduler_workers()
    if not isinstance(device_count, int) or isinstance(device_count, bool) or device_count < 0:
        raise TypeError("get_places: device_count must be an int >= 0, got %r" % (device_count,))
    return PlaceList(core.CPUPlace() for _ in range(device_count))
