"""chanflow.reader's decorators and chanflow.batch, against what Paddle's reader semantics say
they give (each expectation written out by hand or from plain Python), plus what the threaded
ones must also do: bound their read-ahead, hand a producer's error to the consumer, and leave no
thread behind once an iterator is abandoned."""
import gc
import itertools
import random
import threading
import time

import pytest

import chanflow
from chanflow import reader as R


def numbers(n):
    return lambda: iter(range(n))


def forever():
    return itertools.count()


def join_new_threads(baseline, deadline=10.0):
    """Joins the threads started since ``baseline`` (a set of threads) within ``deadline``
    seconds; asserts none is left."""
    end = time.monotonic() + deadline
    for t in threading.enumerate():
        if t not in baseline:
            t.join(max(0.0, end - time.monotonic()))
    left = [t.name for t in threading.enumerate() if t not in baseline]
    assert not left, "threads still running: %s" % left
    assert threading.active_count() == len(baseline)


@pytest.fixture
def threads():
    baseline = set(threading.enumerate())
    yield baseline
    join_new_threads(baseline)


# ---- plain decorators -------------------------------------------------------------------------

def test_map_readers_applies_func_side_by_side_and_ends_with_the_shortest():
    r = R.map_readers(lambda a, b: a * 10 + b, numbers(5), numbers(3))
    assert list(r()) == [0, 11, 22]
    assert list(r()) == [0, 11, 22]  # a reader can be called again


def test_chain_concatenates_in_order():
    r = R.chain(numbers(3), lambda: iter("ab"), numbers(0), numbers(2))
    assert list(r()) == [0, 1, 2, "a", "b", 0, 1]


def test_firstn_stops_after_n_and_reads_no_further():
    pulled = []

    def r():
        for i in range(100):
            pulled.append(i)
            yield i

    assert list(R.firstn(r, 4)()) == [0, 1, 2, 3]
    assert pulled == [0, 1, 2, 3]
    assert list(R.firstn(numbers(2), 5)()) == [0, 1]
    assert list(R.firstn(numbers(2), 0)()) == []
    with pytest.raises(ValueError, match="firstn"):
        R.firstn(numbers(2), -1)


def test_compose_flattens_tuples_and_wraps_other_samples():
    a = lambda: iter([(1, 2), (3, 4)])  # noqa: E731
    b = lambda: iter(["x", "y"])  # noqa: E731
    c = lambda: iter([([5],), ([6],)])  # noqa: E731
    assert list(R.compose(a, b, c)()) == [(1, 2, "x", [5]), (3, 4, "y", [6])]


def test_compose_of_unaligned_readers_raises_once_the_shortest_ends():
    r = R.compose(numbers(3), numbers(5))
    it = r()
    assert [next(it) for _ in range(3)] == [(0, 0), (1, 1), (2, 2)]
    with pytest.raises(R.ComposeNotAligned, match="reader.s. 0 ended"):
        next(it)
    assert issubclass(R.ComposeNotAligned, chanflow.Error)
    assert issubclass(R.ComposeNotAligned, ValueError)


def test_compose_without_the_alignment_check_ends_with_the_shortest():
    r = R.compose(numbers(3), numbers(5), check_alignment=False)
    assert list(r()) == [(0, 0), (1, 1), (2, 2)]


def test_shuffle_permutes_within_windows_of_buf_size():
    n, w = 103, 10
    out = list(R.shuffle(numbers(n), w, seed=7)())
    assert len(out) == n
    for start in range(0, n, w):
        assert sorted(out[start:start + w]) == list(range(start, min(n, start + w)))
    assert out != list(range(n))


def test_shuffle_with_a_seed_repeats_and_follows_random_Random():
    r = R.shuffle(numbers(50), 50, seed=3)
    first = list(r())
    assert list(r()) == first
    expected = list(range(50))
    random.Random(3).shuffle(expected)
    assert first == expected
    assert list(R.shuffle(numbers(50), 50, seed=4)()) != first


def test_shuffle_without_a_seed_draws_from_the_global_random():
    r = R.shuffle(numbers(40), 16)
    random.seed(11)
    a = list(r())
    random.seed(11)
    b = list(r())
    assert a == b and sorted(a) == list(range(40))


def test_batch_groups_samples_and_keeps_or_drops_the_last():
    assert list(chanflow.batch(numbers(7), 3)()) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(chanflow.batch(numbers(7), 3, drop_last=True)()) == [[0, 1, 2], [3, 4, 5]]
    assert list(chanflow.batch(numbers(6), 3, drop_last=True)()) == [[0, 1, 2], [3, 4, 5]]
    assert list(chanflow.batch(numbers(2), 3, drop_last=True)()) == []
    assert list(chanflow.batch(numbers(0), 3)()) == []
    for bad in (0, -2, 1.5, "3", True):
        with pytest.raises(ValueError, match="batch_size"):
            chanflow.batch(numbers(3), bad)


def test_decorators_refuse_sizes_that_are_not_positive_ints():
    with pytest.raises(ValueError, match="buf_size"):
        R.shuffle(numbers(3), 0)
    with pytest.raises(ValueError, match="size"):
        R.buffered(numbers(3), -1)
    with pytest.raises(ValueError, match="process_num"):
        R.xmap_readers(abs, numbers(3), 0, 4)
    with pytest.raises(ValueError, match="buffer_size"):
        R.xmap_readers(abs, numbers(3), 2, 0)


# ---- buffered ---------------------------------------------------------------------------------

def test_buffered_keeps_order_and_content(threads):
    samples = [(i, "s%d" % i, [i] * 3) for i in range(200)]
    assert list(R.buffered(lambda: iter(samples), 7)()) == samples


class CountingReader(object):
    """An endless reader counting the samples taken from it, with a condition to wait on."""

    def __init__(self):
        self.produced = 0
        self.cond = threading.Condition()

    def __call__(self):
        for i in itertools.count():
            with self.cond:
                self.produced += 1
                self.cond.notify_all()
            yield i

    def wait_for(self, predicate, timeout):
        with self.cond:
            return self.cond.wait_for(lambda: predicate(self.produced), timeout)


def test_buffered_reads_ahead_at_most_size_plus_one(threads):
    size = 5
    src = CountingReader()
    it = R.buffered(src, size)()
    assert next(it) == 0
    # The producer fills the buffer (size) and holds one more while blocked on the send...
    assert src.wait_for(lambda p: p >= 1 + size + 1, timeout=10)
    # ...and reads no further while the consumer takes nothing (a bound violated within this
    # wait fails the test).
    assert not src.wait_for(lambda p: p > 1 + size + 1, timeout=0.3)
    assert [next(it) for _ in range(3)] == [1, 2, 3]
    assert src.wait_for(lambda p: p >= 4 + size + 1, timeout=10)
    assert not src.wait_for(lambda p: p > 4 + size + 1, timeout=0.3)
    it.close()


def test_buffered_hands_the_readers_error_to_the_consumer_after_the_samples_before_it(threads):
    class Boom(Exception):
        pass

    def r():
        yield from range(4)
        raise Boom("reader failed at 4")

    got = []
    with pytest.raises(Boom, match="reader failed at 4"):
        for x in R.buffered(r, 2)():
            got.append(x)
    assert got == [0, 1, 2, 3]


def test_abandoned_buffered_iterators_leave_no_thread(threads):
    it = R.buffered(forever, 3)()
    assert [next(it) for _ in range(4)] == [0, 1, 2, 3]
    it.close()
    join_new_threads(threads)
    it = R.buffered(forever, 1)()
    next(it)
    del it
    gc.collect()
    join_new_threads(threads)
    # A consumer leaving its loop on an exception also stops the producer.
    with pytest.raises(KeyError):
        for x in R.buffered(forever, 2)():
            if x == 5:
                raise KeyError(x)
    gc.collect()
    join_new_threads(threads)


def test_an_iterator_never_advanced_starts_no_thread(threads):
    it = R.buffered(forever, 3)()
    it2 = R.xmap_readers(abs, forever, 3, 3)()
    assert threading.active_count() == len(threads)
    del it, it2


# ---- xmap_readers -----------------------------------------------------------------------------

def disorderly_mapper(late=5):
    """Doubles its sample; the sample 0 waits until ``late`` is mapped, so with two workers or
    more 0 is done after it. In order mode a worker done early waits for its turn: there
    ``late`` must be 1, the only sample another worker maps before 0 is sent."""
    late_done = threading.Event()

    def mapper(x):
        if x == 0:
            assert late_done.wait(10), "sample %d was never mapped" % late
        if x == late:
            late_done.set()
        return 2 * x

    return mapper


def test_xmap_unordered_maps_every_sample_once(threads):
    out = list(R.xmap_readers(disorderly_mapper(), numbers(100), 3, 4)())
    assert sorted(out) == [2 * i for i in range(100)]
    # Sample 5 is only mapped once a worker has finished 1 or 2 and sent it; 0 waits for 5: so
    # 2 or 4 is given before 0 (done first, given first), whatever the threads' timing.
    assert min(out.index(2), out.index(4)) < out.index(0)


def test_xmap_ordered_keeps_the_readers_order(threads):
    for workers in (1, 2, 4):
        mapper = disorderly_mapper(1) if workers > 1 else (lambda x: 2 * x)
        out = list(R.xmap_readers(mapper, numbers(100), workers, 4, order=True)())
        assert out == [2 * i for i in range(100)], workers


def test_xmap_is_threads_that_overlap_a_mapper_that_blocks(threads):
    # Four workers wait for one another at a barrier: only possible if they run concurrently.
    barrier = threading.Barrier(4, timeout=10)

    def mapper(x):
        if x < 4:
            barrier.wait()
        return x

    out = list(R.xmap_readers(mapper, numbers(20), 4, 8)())
    assert sorted(out) == list(range(20))


@pytest.mark.parametrize("order", [False, True])
def test_xmap_hands_a_mappers_error_to_the_consumer_and_stops(threads, order):
    def mapper(x):
        if x == 7:
            raise ZeroDivisionError("mapper failed on 7")
        return x

    got = []
    with pytest.raises(ZeroDivisionError, match="mapper failed on 7"):
        for x in R.xmap_readers(mapper, forever, 3, 4, order=order)():
            got.append(x)
    assert 7 not in got
    if order:
        assert got == list(range(len(got))) and len(got) <= 7
    join_new_threads(threads)


@pytest.mark.parametrize("order", [False, True])
def test_xmap_hands_a_readers_error_to_the_consumer(threads, order):
    def r():
        yield from range(10)
        raise OSError("reader failed at 10")

    got = []
    with pytest.raises(OSError, match="reader failed at 10"):
        for x in R.xmap_readers(lambda x: x + 1, r, 2, 3, order=order)():
            got.append(x)
    assert set(got) <= set(range(1, 11))
    join_new_threads(threads)


@pytest.mark.parametrize("order", [False, True])
def test_abandoned_xmap_iterators_leave_no_thread(threads, order):
    it = R.xmap_readers(lambda x: x, forever, 3, 2, order=order)()
    got = [next(it) for _ in range(5)]
    if order:
        assert got == [0, 1, 2, 3, 4]
    it.close()
    join_new_threads(threads)
    it = R.xmap_readers(lambda x: x, forever, 2, 1, order=order)()
    next(it)
    del it
    gc.collect()
    join_new_threads(threads)


def test_decorators_compose_with_one_another(threads):
    r = R.buffered(
        R.xmap_readers(lambda s: (s[0] * 2, s[1]), R.compose(numbers(30), numbers(30)), 2, 4,
                       order=True),
        3,
    )
    b = list(chanflow.batch(R.firstn(r, 10), 4)())
    assert b == [[(0, 0), (2, 1), (4, 2), (6, 3)], [(8, 4), (10, 5), (12, 6), (14, 7)],
                 [(16, 8), (18, 9)]]
