"""Data sets as reader creators (Paddle's ``paddle.dataset``), read from the files Debian's
dataset packages install (nothing is downloaded):

- ``fashion_mnist``: Fashion-MNIST, package ``dataset-fashion-mnist``.

Debian ships no MNIST package, so there is no ``chanflow.dataset.mnist``.
"""

from chanflow.dataset import fashion_mnist

__all__ = ["fashion_mnist"]
