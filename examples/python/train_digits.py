"""The digits MLP of examples/train_digits, trained from Python: a chanflow Graph holds the model
(64 -> hidden -> 10, relu, log-softmax cross-entropy) with its gradients from chanflow.grad, a
GoMachine runs the forward and backward pass of each batch (its independent backward nodes in
parallel on the scheduler's workers, the GIL released), and NumPy applies Adam between runs.
Evaluation streams the test batches through a second machine (GoMachine.stream).

The data is UCI's 8x8 handwritten digits (data/digits, 1,797 images), split 80/20 per class.

    PYTHONPATH=<build>/python python3 examples/python/train_digits.py [--epochs N]
        [--hidden H] [--batch B] [--workers W] [--min-accuracy A]

Prints the loss and accuracies per epoch; exits 1 if the final test accuracy is below
--min-accuracy (default 0.9).
"""

import argparse
import gzip
import os
import sys
import time

import numpy as np

import chanflow as cf

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "data", "digits", "digits.csv.gz")
CLASSES = 10


def load_digits(path=DATA):
    """Images (n, 64) float32 in [0, 1] and labels (n,) int64; checks the file's layout."""
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    if table.ndim != 2 or table.shape[1] != 65:
        sys.exit("train_digits: %s: expected 65 columns, got shape %s" % (path, table.shape))
    images, labels = table[:, :64], table[:, 64]
    if images.min() < 0 or images.max() > 16 or labels.min() < 0 or labels.max() >= CLASSES:
        sys.exit("train_digits: %s: pixel or label out of range" % path)
    return (images / 16.0).astype(np.float32), labels


def stratified_split(labels, test_fraction, rng):
    """Row indices (train, test); each class divided in the same proportion."""
    train, test = [], []
    for c in range(CLASSES):
        rows = rng.permutation(np.flatnonzero(labels == c))
        k = int(round(len(rows) * test_fraction))
        test.extend(rows[:k])
        train.extend(rows[k:])
    return np.array(train), np.array(test)


class Model:
    """The MLP as a graph over `rows` rows: inputs x, y (one-hot; all-zero rows are padding that
    adds nothing to the loss or the counts) and the parameters; the loss summed over the rows,
    the number of rows predicted right, and the gradients of the loss."""

    def __init__(self, rows, hidden, with_grads):
        g = self.graph = cf.Graph()
        self.x = g.input("x", "float32", (rows, 64))
        self.y = g.input("y", "float32", (rows, CLASSES))
        self.params = [g.input("w1", "float32", (64, hidden)), g.input("b1", "float32", (hidden,)),
                       g.input("w2", "float32", (hidden, CLASSES)),
                       g.input("b2", "float32", (CLASSES,))]
        w1, b1, w2, b2 = self.params
        logits = cf.relu(self.x @ w1 + b1) @ w2 + b2
        self.loss_sum = -cf.sum(cf.log_softmax(logits, 1) * self.y)
        hit = cf.cast(cf.equal(cf.argmax(logits, 1), cf.argmax(self.y, 1)), "float32")
        self.correct = cf.sum(hit * cf.sum(self.y, 1))  # padding rows do not count
        self.grads = cf.grad(self.loss_sum, self.params) if with_grads else []

    def bindings(self, x, y, params):
        return {self.x: x, self.y: y, **dict(zip(self.params, params))}


def init_params(hidden, rng):
    """He-initialised weights, zero biases."""
    return [(rng.standard_normal((64, hidden)) * np.sqrt(2 / 64)).astype(np.float32),
            np.zeros(hidden, np.float32),
            (rng.standard_normal((hidden, CLASSES)) * np.sqrt(2 / hidden)).astype(np.float32),
            np.zeros(CLASSES, np.float32)]


class Adam:
    def __init__(self, params, lr=3e-3, beta1=0.9, beta2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps, self.t = lr, beta1, beta2, eps, 0
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]

    def step(self, params, grads):
        """New parameter arrays (the old ones may still be shared with a machine's tensors)."""
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        out = []
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m *= self.b1
            m += (1 - self.b1) * g
            v *= self.b2
            v += (1 - self.b2) * g * g
            out.append((p - self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)).astype(np.float32))
        return out


def one_hot(labels, rows):
    y = np.zeros((rows, CLASSES), np.float32)
    y[np.arange(len(labels)), labels] = 1.0
    return y


def padded(x, rows):
    out = np.zeros((rows, x.shape[1]), np.float32)
    out[:len(x)] = x
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=None,
                    help="the GoMachine's own worker threads (default: the shared scheduler)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-accuracy", type=float, default=0.9)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    images, labels = load_digits()
    train, test = stratified_split(labels, 0.2, rng)
    print("digits: %d images, %d train / %d test; MLP 64-%d-10, batch %d"
          % (len(labels), len(train), len(test), args.hidden, args.batch), flush=True)

    model = Model(args.batch, args.hidden, with_grads=True)
    evaluator = Model(args.batch, args.hidden, with_grads=False)
    params = init_params(args.hidden, rng)
    adam = Adam(params)
    test_items = []
    for k in range(0, len(test), args.batch):
        rows = test[k:k + args.batch]
        test_items.append((padded(images[rows], args.batch), one_hot(labels[rows], args.batch)))

    start = time.perf_counter()
    accuracy = 0.0
    with cf.GoMachine(model.graph, workers=args.workers) as m, \
            cf.GoMachine(evaluator.graph, workers=args.workers) as e:
        for epoch in range(1, args.epochs + 1):
            order = rng.permutation(train)
            loss, correct, seen = 0.0, 0.0, 0
            for k in range(0, len(order) - args.batch + 1, args.batch):  # full batches
                rows = order[k:k + args.batch]
                m.run(model.bindings(images[rows], one_hot(labels[rows], args.batch), params))
                grads = [np.asarray(m.result(d)) / args.batch for d in model.grads]
                params = adam.step(params, grads)
                loss += m.result(model.loss_sum).numpy().item()
                correct += m.result(model.correct).numpy().item()
                seen += args.batch
            # The test set in one stream: every batch in flight through the evaluator's nodes.
            results = e.stream([evaluator.bindings(x, y, params) for x, y in test_items],
                               [evaluator.correct])
            accuracy = sum(r[0].numpy().item() for r in results) / len(test)
            print("epoch %2d  loss %.4f  train acc %.3f  test acc %.3f  (%.1f s)"
                  % (epoch, loss / seen, correct / seen, accuracy, time.perf_counter() - start),
                  flush=True)
    if accuracy < args.min_accuracy:
        print("train_digits: test accuracy %.3f is below %.3f" % (accuracy, args.min_accuracy),
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
