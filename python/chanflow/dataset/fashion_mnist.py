"""Fashion-MNIST (Zalando's 28x28 grey images of clothes, 10 classes) as reader creators, with
the conventions of Paddle's ``paddle.dataset.mnist``::

    from chanflow.dataset import fashion_mnist

    for image, label in fashion_mnist.train()():
        ...                 # image: float32 (784,) in [-1, 1]; label: int in 0..9

The files are Debian's (package ``dataset-fashion-mnist``: ``apt-get install
dataset-fashion-mnist``), gzip'd IDX files in ``/usr/share/datasets/fashion-mnist``; nothing is
downloaded. ``data_dir=`` (an argument of ``train``/``test``), else the environment variable
``CHANFLOW_DATASET_DIR`` (a directory holding a ``fashion-mnist`` folder, or the four files
directly), else that Debian directory, says where to look.

Samples: ``(image, label)``, ``image`` the 784 pixels row by row as float32, scaled from 0..255
to ``pixel / 255 * 2 - 1`` (Paddle's mnist formula: 0 -> -1.0, 255 -> 1.0), ``label`` an int.
Each pass of a reader reads and checks both files again (magic numbers 2051 and 2049, 28x28
images, as many labels as images, the sizes the headers give, labels 0..9); any mismatch is a
``chanflow.Error`` naming the file, raised before the first sample.
"""

import gzip
import os
import struct
import zlib

import numpy as np

from chanflow import _native

__all__ = ["train", "test", "DEFAULT_DIR", "DEBIAN_PACKAGE"]

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
DEBIAN_PACKAGE = "dataset-fashion-mnist"
ENV_DIR = "CHANFLOW_DATASET_DIR"

TRAIN_IMAGES = "train-images-idx3-ubyte.gz"
TRAIN_LABELS = "train-labels-idx1-ubyte.gz"
TEST_IMAGES = "t10k-images-idx3-ubyte.gz"
TEST_LABELS = "t10k-labels-idx1-ubyte.gz"

_IMAGE_MAGIC = 0x00000803  # unsigned bytes, 3 dimensions
_LABEL_MAGIC = 0x00000801  # unsigned bytes, 1 dimension
_ROWS = _COLS = 28
_CLASSES = 10


def _data_dir(data_dir):
    """The directory to read: ``data_dir``, else $CHANFLOW_DATASET_DIR (its ``fashion-mnist``
    folder when there is one), else Debian's."""
    if data_dir is not None:
        return os.fspath(data_dir)
    env = os.environ.get(ENV_DIR)
    if env:
        sub = os.path.join(env, "fashion-mnist")
        return sub if os.path.isdir(sub) else env
    return DEFAULT_DIR


def _read_gz(path):
    if not os.path.isfile(path):
        raise _native.NotFoundError(
            "fashion_mnist: %s not found; install Debian's package %s (apt-get install %s), or "
            "point data_dir= or $%s at a directory with the four IDX files"
            % (path, DEBIAN_PACKAGE, DEBIAN_PACKAGE, ENV_DIR)
        )
    try:
        with gzip.open(path, "rb") as f:
            return f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise _native.Error("fashion_mnist: %s is not a complete gzip file: %s" % (path, e))


def _header(buf, path, count):
    """The ``count`` big-endian uint32 of the header of an IDX file."""
    size = 4 * count
    if len(buf) < size:
        raise _native.Error(
            "fashion_mnist: %s: truncated IDX header (%d bytes, need %d)" % (path, len(buf), size)
        )
    return struct.unpack_from(">%dI" % count, buf, 0), size


def _load_images(path):
    buf = _read_gz(path)
    (magic, n, rows, cols), offset = _header(buf, path, 4)
    if magic != _IMAGE_MAGIC:
        raise _native.Error(
            "fashion_mnist: %s: magic number %d, expected %d (an IDX file of images)"
            % (path, magic, _IMAGE_MAGIC)
        )
    if (rows, cols) != (_ROWS, _COLS):
        raise _native.Error(
            "fashion_mnist: %s: images of %dx%d, expected %dx%d" % (path, rows, cols, _ROWS, _COLS)
        )
    expected = offset + n * rows * cols
    if len(buf) != expected:
        raise _native.Error(
            "fashion_mnist: %s: %d bytes for %d images, expected %d (%s)"
            % (path, len(buf), n, expected, "truncated" if len(buf) < expected else "trailing data")
        )
    return np.frombuffer(buf, dtype=np.uint8, count=n * rows * cols, offset=offset).reshape(
        n, rows * cols
    )


def _load_labels(path):
    buf = _read_gz(path)
    (magic, n), offset = _header(buf, path, 2)
    if magic != _LABEL_MAGIC:
        raise _native.Error(
            "fashion_mnist: %s: magic number %d, expected %d (an IDX file of labels)"
            % (path, magic, _LABEL_MAGIC)
        )
    if len(buf) != offset + n:
        raise _native.Error(
            "fashion_mnist: %s: %d bytes for %d labels, expected %d (%s)"
            % (path, len(buf), n, offset + n, "truncated" if len(buf) < offset + n else
               "trailing data")
        )
    labels = np.frombuffer(buf, dtype=np.uint8, count=n, offset=offset)
    if n and int(labels.max()) >= _CLASSES:
        raise _native.Error(
            "fashion_mnist: %s: label %d at index %d, expected 0..%d"
            % (path, int(labels.max()), int(labels.argmax()), _CLASSES - 1)
        )
    return labels


def _reader_creator(images_name, labels_name, data_dir):
    directory = _data_dir(data_dir)
    images_path = os.path.join(directory, images_name)
    labels_path = os.path.join(directory, labels_name)

    def reader():
        images = _load_images(images_path)
        labels = _load_labels(labels_path)
        if len(images) != len(labels):
            raise _native.Error(
                "fashion_mnist: %s has %d images but %s has %d labels"
                % (images_path, len(images), labels_path, len(labels))
            )
        # Converted in blocks: the whole set as float32 would be 188 MB for train.
        block = 1000
        for start in range(0, len(images), block):
            scaled = images[start:start + block].astype(np.float32) / 255.0 * 2.0 - 1.0
            for i in range(len(scaled)):
                yield scaled[i], int(labels[start + i])

    return reader


def train(data_dir=None):
    """The training set's reader creator: 60,000 ``(image, label)`` samples, in the file's
    order. ``data_dir``: see the module's documentation."""
    return _reader_creator(TRAIN_IMAGES, TRAIN_LABELS, data_dir)


def test(data_dir=None):
    """The test set's reader creator: 10,000 ``(image, label)`` samples, in the file's order.
    ``data_dir``: see the module's documentation."""
    return _reader_creator(TEST_IMAGES, TEST_LABELS, data_dir)
