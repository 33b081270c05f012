"""chanflow.dataset.fashion_mnist: Debian's files read as Paddle's mnist reader did (counts,
scaling, labels, checked against an independent decoding of the files), and the IDX checks on
small files written here (bad magic numbers, dimensions, truncation, a corrupt gzip stream, a
missing directory)."""
import gzip
import itertools
import os
import struct

import numpy as np
import pytest

import chanflow
from chanflow.dataset import fashion_mnist as fm

DEBIAN = fm.DEFAULT_DIR
have_debian = all(
    os.path.isfile(os.path.join(DEBIAN, f))
    for f in (fm.TRAIN_IMAGES, fm.TRAIN_LABELS, fm.TEST_IMAGES, fm.TEST_LABELS)
)
needs_debian = pytest.mark.skipif(
    not have_debian, reason="Debian's dataset-fashion-mnist is not installed (%s)" % DEBIAN
)


def idx_images(pixels, magic=2051, dims=None):
    n, rows, cols = pixels.shape
    dims = dims or (n, rows, cols)
    return struct.pack(">4I", magic, *dims) + pixels.astype(np.uint8).tobytes()


def idx_labels(labels, magic=2049, n=None):
    return struct.pack(">2I", magic, len(labels) if n is None else n) + bytes(labels)


def write_set(directory, images_bytes, labels_bytes, prefix="t10k"):
    directory.mkdir(parents=True, exist_ok=True)
    with gzip.open(directory / ("%s-images-idx3-ubyte.gz" % prefix), "wb") as f:
        f.write(images_bytes)
    with gzip.open(directory / ("%s-labels-idx1-ubyte.gz" % prefix), "wb") as f:
        f.write(labels_bytes)
    return directory


def small_pixels():
    px = np.zeros((3, 28, 28), np.uint8)
    px[0, 0, 0] = 255
    px[1, 27, 27] = 51
    px[2] = 128
    return px


# ---- Debian's files ---------------------------------------------------------------------------

@needs_debian
@pytest.mark.parametrize("creator,count", [(fm.train, 60000), (fm.test, 10000)])
def test_the_sets_have_their_counts_values_in_range_and_all_ten_labels(creator, count):
    n, lo, hi = 0, np.inf, -np.inf
    seen = np.zeros(10, np.int64)
    for image, label in creator()():
        assert image.dtype == np.float32 and image.shape == (784,)
        assert type(label) is int
        lo, hi = min(lo, float(image.min())), max(hi, float(image.max()))
        seen[label] += 1
        n += 1
    assert n == count
    assert lo == -1.0 and hi == 1.0
    # Fashion-MNIST is balanced: each class is a tenth of each set.
    assert list(seen) == [count // 10] * 10


@needs_debian
def test_samples_are_the_files_pixels_scaled_to_minus_one_one():
    with gzip.open(os.path.join(DEBIAN, fm.TEST_IMAGES), "rb") as f:
        raw = f.read()
    with gzip.open(os.path.join(DEBIAN, fm.TEST_LABELS), "rb") as f:
        raw_labels = f.read()
    picks = [0, 1, 999, 1000, 9999]
    samples = {}
    for i, (image, label) in enumerate(fm.test()()):
        if i in picks:
            samples[i] = (image.copy(), label)
    for i in picks:
        pixels = np.array(list(raw[16 + 784 * i:16 + 784 * (i + 1)]), np.float64)
        expected = pixels / 255.0 * 2.0 - 1.0
        np.testing.assert_allclose(samples[i][0], expected, rtol=0, atol=1e-6)
        assert samples[i][1] == raw_labels[8 + i]


@needs_debian
def test_a_reader_can_be_read_twice_and_gives_the_same_samples():
    r = fm.test()
    a = [(im.copy(), lab) for im, lab in itertools.islice(r(), 20)]
    b = [(im.copy(), lab) for im, lab in itertools.islice(r(), 20)]
    for (x, i), (y, j) in zip(a, b):
        np.testing.assert_array_equal(x, y)
        assert i == j


# ---- files written here -----------------------------------------------------------------------

def test_small_files_scale_as_paddle_did(tmp_path):
    d = write_set(tmp_path, idx_images(small_pixels()), idx_labels([9, 0, 4]))
    samples = list(fm.test(data_dir=d)())
    assert [lab for _, lab in samples] == [9, 0, 4]
    assert samples[0][0][0] == 1.0 and samples[0][0][1] == -1.0
    # float32 arithmetic, as Paddle's: within float32 rounding of the exact value
    assert abs(samples[1][0][783] - (51 / 255 * 2 - 1)) < 1e-6
    np.testing.assert_allclose(samples[2][0], 128 / 255 * 2 - 1, rtol=0, atol=1e-6)


def test_the_environment_variable_names_the_directory(tmp_path, monkeypatch):
    write_set(tmp_path / "fashion-mnist", idx_images(small_pixels()), idx_labels([1, 2, 3]),
              prefix="train")
    monkeypatch.setenv("CHANFLOW_DATASET_DIR", str(tmp_path))
    assert [lab for _, lab in fm.train()()] == [1, 2, 3]
    monkeypatch.setenv("CHANFLOW_DATASET_DIR", str(tmp_path / "fashion-mnist"))
    assert [lab for _, lab in fm.train()()] == [1, 2, 3]


def test_missing_files_name_the_debian_package(tmp_path):
    with pytest.raises(chanflow.Error, match="dataset-fashion-mnist") as e:
        next(fm.train(data_dir=tmp_path)())
    assert str(tmp_path / "train-images-idx3-ubyte.gz") in str(e.value)


def check_error(directory, file_name, *patterns):
    with pytest.raises(chanflow.Error) as e:
        next(fm.test(data_dir=directory)())
    message = str(e.value)
    assert str(directory / file_name) in message, message
    for p in patterns:
        assert p in message, message


IMAGES, LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"


def test_a_truncated_image_file_is_an_error_naming_it(tmp_path):
    good = idx_images(small_pixels())
    check_error(write_set(tmp_path, good[:-100], idx_labels([1, 2, 3])), IMAGES, "truncated")


def test_trailing_bytes_are_an_error_naming_the_file(tmp_path):
    d = write_set(tmp_path, idx_images(small_pixels()), idx_labels([1, 2, 3]) + b"\0")
    check_error(d, LABELS, "trailing")


def test_a_truncated_header_is_an_error_naming_the_file(tmp_path):
    check_error(write_set(tmp_path, b"\0\0\x08\x03\0\0", idx_labels([1])), IMAGES, "header")


def test_wrong_magic_numbers_are_errors_naming_the_file(tmp_path):
    d = write_set(tmp_path, idx_images(small_pixels(), magic=2049), idx_labels([1, 2, 3]))
    check_error(d, IMAGES, "magic number 2049")
    d = write_set(tmp_path / "b", idx_images(small_pixels()), idx_labels([1, 2, 3], magic=2051))
    check_error(d, LABELS, "magic number 2051")


def test_images_that_are_not_28_by_28_are_an_error(tmp_path):
    px = np.zeros((2, 14, 56), np.uint8)
    check_error(write_set(tmp_path, idx_images(px), idx_labels([1, 2])), IMAGES, "14x56")


def test_a_header_count_beyond_the_data_is_an_error(tmp_path):
    d = write_set(tmp_path, idx_images(small_pixels(), dims=(4, 28, 28)), idx_labels([1, 2, 3]))
    check_error(d, IMAGES, "4 images", "truncated")
    d = write_set(tmp_path / "b", idx_images(small_pixels()), idx_labels([1, 2, 3], n=5))
    check_error(d, LABELS, "5 labels")


def test_image_and_label_counts_must_agree(tmp_path):
    d = write_set(tmp_path, idx_images(small_pixels()), idx_labels([1, 2]))
    check_error(d, IMAGES, "3 images", "2 labels")


def test_labels_beyond_nine_are_an_error(tmp_path):
    d = write_set(tmp_path, idx_images(small_pixels()), idx_labels([1, 10, 3]))
    check_error(d, LABELS, "label 10 at index 1")


def test_a_corrupt_gzip_stream_is_an_error_naming_the_file(tmp_path):
    d = write_set(tmp_path, idx_images(small_pixels()), idx_labels([1, 2, 3]))
    data = (d / IMAGES).read_bytes()
    (d / IMAGES).write_bytes(data[: len(data) // 2])
    check_error(d, IMAGES, "gzip")
    (d / IMAGES).write_bytes(b"not gzip at all" * 10)
    check_error(d, IMAGES, "gzip")


def test_no_mnist_alias_without_a_debian_package():
    assert not hasattr(chanflow.dataset, "mnist")
