"""Readers and reader decorators (Paddle's ``paddle.reader``): see ``chanflow.reader.decorator``
for the vocabulary (reader, reader creator, decorator) and how the threaded decorators hand
samples over through chanflow channels. ``chanflow.batch`` turns a reader into a reader of
mini-batches."""

from chanflow.reader import decorator
from chanflow.reader.decorator import *  # noqa: F401,F403

__all__ = list(decorator.__all__)
