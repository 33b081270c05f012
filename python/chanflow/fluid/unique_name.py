"""Names for variables and layers, as Fluid's ``unique_name`` made them.

``generate(key)`` returns ``"<key>_<n>"`` where ``n`` counts the calls with that key, from 0:
``generate("fill_constant")`` gives ``fill_constant_0``, then ``fill_constant_1``. A layer's
temporaries are ``"<layer name>.tmp_<m>"``. The counters are process-wide, as in Fluid, so two
programs built one after the other do not reuse names; ``guard()`` runs a block of code with a
fresh generator (names start from 0 again) and restores the previous one afterwards.
"""

import collections
import contextlib

__all__ = ["UniqueNameGenerator", "generate", "switch", "guard"]


class UniqueNameGenerator(object):
    """Counts names per key; ``prefix`` is prepended to every name it makes."""

    def __init__(self, prefix=None):
        self.ids = collections.defaultdict(int)
        self.prefix = "" if prefix is None else prefix

    def __call__(self, key):
        n = self.ids[key]
        self.ids[key] = n + 1
        return "%s%s_%d" % (self.prefix, key, n)


generator = UniqueNameGenerator()


def generate(key):
    """The next name for ``key``: ``"<key>_<n>"``."""
    return generator(key)


def switch(new_generator=None):
    """Makes ``new_generator`` (a fresh one when None) the current generator; returns the old."""
    global generator
    old = generator
    generator = UniqueNameGenerator() if new_generator is None else new_generator
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    """Runs the ``with`` body with ``new_generator`` (a generator, a prefix string, or None for
    a fresh one) and restores the previous generator afterwards, also on an exception."""
    if isinstance(new_generator, str):
        new_generator = UniqueNameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(old)
