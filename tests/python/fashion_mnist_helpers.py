"""Shared by the Fashion-MNIST accuracy tests (test_fluid_fashion_mnist*.py): the skip when
Debian's dataset-fashion-mnist is absent, the data as arrays, seeded shuffled batches and the test
accuracy counted in NumPy from fetched predictions (argmax against the labels), independently of
the program's own accuracy layer."""

import os

import numpy as np
import pytest

from chanflow.dataset import fashion_mnist as fm

have_dataset = all(
    os.path.isfile(os.path.join(fm.DEFAULT_DIR, f))
    for f in (fm.TRAIN_IMAGES, fm.TRAIN_LABELS, fm.TEST_IMAGES, fm.TEST_LABELS)
)
needs_dataset = pytest.mark.skipif(
    not have_dataset,
    reason="the Debian package dataset-fashion-mnist is not installed (%s)" % fm.DEFAULT_DIR)


def load(reader):
    samples = list(reader())
    x = np.stack([s[0] for s in samples]).astype(np.float32)
    y = np.array([s[1] for s in samples], np.int64).reshape(-1, 1)
    return x, y


def train_and_test():
    return load(fm.train()), load(fm.test())


def shuffled_batches(x, y, batch, seed):
    order = np.random.RandomState(seed).permutation(len(x))
    for start in range(0, len(x) - batch + 1, batch):
        idx = order[start:start + batch]
        yield x[idx], y[idx]


def accuracy(exe, program, pred, feed_of, test_x, test_y):
    correct = 0
    for start in range(0, len(test_x), 1000):
        xs, ys = test_x[start:start + 1000], test_y[start:start + 1000]
        p, = exe.run(program, feed=feed_of(xs, ys), fetch_list=[pred])
        correct += int((p.argmax(axis=1) == ys[:, 0]).sum())
    return correct / len(test_x)
