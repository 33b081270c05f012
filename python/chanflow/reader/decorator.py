"""Reader decorators: functions that take readers and return a reader (Paddle's
``paddle.reader`` vocabulary).

A *reader* is a callable without arguments that returns an iterable of samples; a *reader
creator* returns a reader; a *decorator* wraps readers::

    import chanflow
    from chanflow import reader

    def numbers():
        return iter(range(10))

    r = reader.buffered(reader.shuffle(numbers, buf_size=4, seed=1), size=8)
    for b in chanflow.batch(r, 3)():
        print(b)                    # lists of 3 (the last one of 1)

The decorators that run code ahead of the consumer (``buffered``, ``xmap_readers``) do it on OS
threads (Python callables never run on chanflow's green threads), and hand the samples over
through chanflow channels. A channel carries chanflow objects, not Python ones, so what travels
through it is a sequence number; the sample itself waits in a dictionary until the consumer
receives its number. The channel gives the bound (a producer blocks while it is full, with the
GIL released), and closing it is how the consumer stops producers it abandons: a producer blocked
on a send is woken by the close and ends.

Errors: an exception raised in a producer (the wrapped reader, or an ``xmap_readers`` mapper) is
raised again in the consumer, at the point of the stream where it happened (the samples before it
are delivered first), with the original exception's type and traceback. Abandoning an iterator
(``close()``, or dropping the last reference to it) closes its channels, and its threads end as
soon as whatever they were doing returns (a wrapped reader blocked forever inside its own code
cannot be interrupted). Threads are daemon threads named ``chanflow.reader.*``.
"""

import itertools
import random
import threading

from chanflow import _native

__all__ = [
    "ComposeNotAligned",
    "buffered",
    "chain",
    "compose",
    "firstn",
    "map_readers",
    "shuffle",
    "xmap_readers",
]


class ComposeNotAligned(_native.Error, ValueError):
    """``compose(..., check_alignment=True)``: the composed readers ended after different numbers
    of samples."""


def _positive_int(value, what):
    """``value`` as an int > 0; ``ValueError`` naming ``what`` otherwise."""
    if isinstance(value, bool):
        raise ValueError("%s must be a positive int, got %r" % (what, value))
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be a positive int, got %r" % (what, value))
    if n != value or n <= 0:
        raise ValueError("%s must be a positive int, got %r" % (what, value))
    return n


def _close_quietly(ch):
    """Closes ``ch`` unless it is closed already (several parties may close one channel)."""
    try:
        ch.close()
    except _native.ChannelClosedError:
        pass


def map_readers(func, *readers):
    """A reader of ``func(a, b, ...)`` for the samples ``a, b, ...`` the readers give side by
    side; it ends with the shortest reader."""

    def reader():
        return map(func, *[r() for r in readers])

    return reader


def shuffle(reader, buf_size, seed=None):
    """A reader of ``reader``'s samples shuffled in windows: it reads ``buf_size`` samples,
    yields them in a random order, and so on; the last, shorter window is shuffled too. So a
    sample moves at most ``buf_size - 1`` places, and memory holds ``buf_size`` samples.

    ``seed=None`` draws from Python's global ``random`` module (as Paddle's did, with
    ``random.shuffle``): ``random.seed(...)`` makes it reproducible. With an int ``seed`` each
    call of the returned reader uses its own ``random.Random(seed)``: every pass gives the same
    order, whatever else uses ``random``.
    """
    buf_size = _positive_int(buf_size, "shuffle: buf_size")

    def shuffled():
        shuffle_fn = random.shuffle if seed is None else random.Random(seed).shuffle
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) >= buf_size:
                shuffle_fn(buf)
                yield from buf
                buf = []
        if buf:
            shuffle_fn(buf)
            yield from buf

    return shuffled


def chain(*readers):
    """A reader of the first reader's samples, then the second's, and so on."""

    def reader():
        return itertools.chain.from_iterable(r() for r in readers)

    return reader


_MISSING = object()


def compose(*readers, check_alignment=True):
    """A reader of flat tuples joining the readers' samples side by side: a sample that is a
    tuple contributes its items, any other sample itself, so readers of ``(a, b)`` and of ``c``
    compose to ``(a, b, c)``.

    With ``check_alignment`` (the default) readers that end after different numbers of samples
    raise ``ComposeNotAligned`` once the shortest ends; without it the composition ends with the
    shortest reader.
    """

    def as_tuple(sample):
        return sample if isinstance(sample, tuple) else (sample,)

    def reader():
        its = [r() for r in readers]
        if not check_alignment:
            for samples in zip(*its):
                yield sum((as_tuple(s) for s in samples), ())
            return
        for samples in itertools.zip_longest(*its, fillvalue=_MISSING):
            if any(s is _MISSING for s in samples):
                ended = [i for i, s in enumerate(samples) if s is _MISSING]
                raise ComposeNotAligned(
                    "compose: the readers are not aligned: reader(s) %s ended while others "
                    "still had samples" % ", ".join(str(i) for i in ended)
                )
            yield sum((as_tuple(s) for s in samples), ())

    return reader


def firstn(reader, n):
    """A reader of ``reader``'s first ``n`` samples (fewer if it has fewer); it stops reading
    ``reader`` after the ``n``-th."""
    if isinstance(n, bool) or int(n) != n or n < 0:
        raise ValueError("firstn: n must be an int >= 0, got %r" % (n,))
    n = int(n)

    def first():
        return itertools.islice(reader(), n)

    return first


class _Failure(object):
    """The first exception a producer thread raised, kept for the consumer."""

    def __init__(self):
        self._lock = threading.Lock()
        self.error = None

    def set(self, error):
        with self._lock:
            if self.error is None:
                self.error = error

    def raise_if_set(self):
        if self.error is not None:
            raise self.error


def buffered(reader, size):
    """A reader of ``reader``'s samples, read ahead by a thread into a buffer of ``size``
    samples (plus the one the thread holds while the buffer is full): the consumer's work and
    the reader's overlap.

    The thread starts when the returned iterator is first advanced. An exception raised by
    ``reader`` reaches the consumer after the samples read before it. Closing the iterator (or
    dropping it) stops the thread.
    """
    size = _positive_int(size, "buffered: size")

    def buffered_reader():
        ch = _native.make_chan(size)
        items = {}
        failure = _Failure()

        def produce():
            try:
                for seq, sample in enumerate(reader()):
                    items[seq] = sample
                    ch.send(seq)
            except _native.ChannelClosedError:
                return  # the consumer is gone
            except BaseException as e:  # noqa: B902 -- handed to the consumer
                failure.set(e)
            _close_quietly(ch)

        thread = threading.Thread(target=produce, name="chanflow.reader.buffered", daemon=True)
        thread.start()
        try:
            while True:
                seq, ok = ch.recv()
                if not ok:
                    break
                yield items.pop(seq)
            failure.raise_if_set()
        finally:
            _close_quietly(ch)
            items.clear()

    return buffered_reader


def xmap_readers(mapper, reader, process_num, buffer_size, order=False):
    """A reader of ``mapper(sample)`` for ``reader``'s samples, mapped by ``process_num``
    threads (Paddle's name; they are threads, never processes): worth it when ``mapper``
    releases the GIL (NumPy, I/O, chanflow calls).

    One thread reads ``reader`` into a buffer of ``buffer_size`` samples, the workers map from
    it into a buffer of ``buffer_size`` results. ``order=False`` yields results as they are
    done; ``order=True`` in ``reader``'s order (a worker done early waits for its turn).

    The threads start when the returned iterator is first advanced. An exception raised by
    ``reader`` or ``mapper`` reaches the consumer (results already done may come first), and
    stops the other threads. Closing the iterator (or dropping it) stops all the threads.
    """
    process_num = _positive_int(process_num, "xmap_readers: process_num")
    buffer_size = _positive_int(buffer_size, "xmap_readers: buffer_size")

    def xreader():
        in_ch = _native.make_chan(buffer_size)
        out_ch = _native.make_chan(buffer_size)
        in_items, out_items = {}, {}
        failure = _Failure()
        turn = threading.Condition()
        state = {"next": 0, "stopped": False, "running": process_num}

        def stop():
            _close_quietly(in_ch)
            _close_quietly(out_ch)
            with turn:
                state["stopped"] = True
                turn.notify_all()

        def read():
            try:
                for seq, sample in enumerate(reader()):
                    in_items[seq] = sample
                    in_ch.send(seq)
            except _native.ChannelClosedError:
                return
            except BaseException as e:  # noqa: B902 -- handed to the consumer
                failure.set(e)
                stop()
                return
            _close_quietly(in_ch)

        def work():
            try:
                while True:
                    seq, ok = in_ch.recv()
                    if not ok:
                        break
                    result = mapper(in_items.pop(seq))
                    if order:
                        # Only the worker whose turn it is sends, so the lock need not be
                        # held across the send (stop() takes it while a send may block).
                        with turn:
                            turn.wait_for(lambda: state["stopped"] or state["next"] == seq)
                            if state["stopped"]:
                                return
                        out_items[seq] = result
                        out_ch.send(seq)
                        with turn:
                            state["next"] = seq + 1
                            turn.notify_all()
                    else:
                        out_items[seq] = result
                        out_ch.send(seq)
            except _native.ChannelClosedError:
                return
            except BaseException as e:  # noqa: B902 -- handed to the consumer
                failure.set(e)
                stop()
                return
            with turn:
                state["running"] -= 1
                last = state["running"] == 0
            if last:
                _close_quietly(out_ch)

        threads = [threading.Thread(target=read, name="chanflow.reader.xmap.read", daemon=True)]
        threads += [
            threading.Thread(target=work, name="chanflow.reader.xmap.work", daemon=True)
            for _ in range(process_num)
        ]
        for t in threads:
            t.start()
        try:
            while True:
                seq, ok = out_ch.recv()
                if not ok:
                    break
                yield out_items.pop(seq)
            failure.raise_if_set()
        finally:
            stop()
            in_items.clear()
            out_items.clear()

    return xreader
