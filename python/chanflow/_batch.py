"""``chanflow.batch``: a reader of mini-batches (Paddle's ``paddle.batch``)."""

__all__ = ["batch"]


def batch(reader, batch_size, drop_last=False):
    """A reader of lists of ``batch_size`` consecutive samples of ``reader``. The last list is
    shorter when the samples do not divide evenly, and is left out with ``drop_last=True``.

    ``batch_size`` must be a positive int: ``ValueError`` otherwise, when ``batch`` is called.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        try:
            ok = not isinstance(batch_size, bool) and int(batch_size) == batch_size > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError("batch: batch_size must be a positive int, got %r" % (batch_size,))
    batch_size = int(batch_size)

    def batch_reader():
        b = []
        for sample in reader():
            b.append(sample)
            if len(b) == batch_size:
                yield b
                b = []
        if b and not drop_last:
            yield b

    return batch_reader
