#!/usr/bin/env python3
"""PyTorch peer of chanflow's train_fashion and train_digits (scripts/bench.py, area "fashion").

Trains the models of examples/train_fashion in torch.nn, on data held in memory as tensors, and
writes the metrics.json train_fashion writes (same keys, "workers" = torch threads):
    mlp: flatten 784 -> Linear 256, relu -> Linear 10
    cnn: Conv2d 1->20 5x5, relu, max pool 2/2 -> Conv2d 20->50 5x5, relu, max pool 2/2 ->
         flatten 800 -> Linear 500, relu -> Linear 10
Input pixel / 255 as float32; loss softmax cross-entropy, mean over the batch; weights normal with
std sqrt(2 / fan_in) (fan_in = in_features, or in_channels * kh * kw), biases zero; Adam (lr
1e-3, betas 0.9 / 0.999, eps 1e-8), batch 128; the 60000 training rows shuffled every epoch, all
of them per epoch (the last, partial batch included); test accuracy on the 10000 test rows after
every epoch. The data are Debian's gzip'd IDX files (package dataset-fashion-mnist,
/usr/share/datasets/fashion-mnist), read here with gzip + NumPy and checked (magic numbers,
sizes, labels 0..9).

--dataset digits trains train_digits' model instead: the UCI digits of data/digits/digits.csv.gz
(64 pixels 0..16 scaled by 1/16, label last), a stratified 80/20 split per class (seeded; not
train_digits' rows), MLP 64 -> Linear 256, relu -> Linear 10, Adam lr 5e-3, batch 512, 40 epochs
(train_digits' defaults); train_digits' gradient delay and shards have no counterpart here: each
step is synchronous.

Timing: time_s and samples_per_s count training only: the per-epoch shuffle, gathering each batch,
forward, loss, zero_grad, backward and the optimiser step, plus summing the epoch's loss and
correct predictions; evaluation is excluded. Before the clock starts one forward + backward pass
runs on a training batch and its gradients are dropped (allocator and oneDNN set-up; no weight
changes), as train_fashion warms its machines up. --deadline stops training after that many
training seconds (the step under way completes; the final weights are evaluated); --train-rows
N trains on the first N training images only, as train_fashion's option does.
--target-accuracy stops after the first epoch whose test accuracy reaches it (a shortcut for
time-to-accuracy runs: the time of that epoch does not depend on it). peak_rss_kib is the process's
VmHWM (/proc/self/status): the Python interpreter and libtorch included. weights_hash is the first
16 hex digits of SHA-256 over the parameters' float32 bytes in model order.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 bench/peers/fashion_torch.py \
        --model cnn --epochs 1 --threads 1 --out /tmp/cnn.json
    OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 \
        bench/peers/fashion_torch.py --model mlp --threads 2 --no-mkldnn --out /tmp/mlp.json

torch.set_num_threads(--threads) sets ATen's intra-op threads; the Linear layers' matrix products
go to the system's OpenBLAS (Debian's pthread build), whose own threads OPENBLAS_NUM_THREADS sets:
the launcher sets it, and OMP_NUM_THREADS, to --threads as well (setdefault here otherwise).
"""

import argparse
import gzip
import hashlib
import json
import math
import os
import struct
import sys
import time
import zlib



def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=("fashion", "digits"), default="fashion")
    ap.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    ap.add_argument("--epochs", type=int, help="default: 1 (fashion), 40 (digits)")
    ap.add_argument("--batch-size", type=int, help="default: 128 (fashion), 512 (digits)")
    ap.add_argument("--lr", type=float, help="Adam learning rate; default: 1e-3 (fashion), "
                                             "5e-3 (digits)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train-rows", type=int, default=0,
                    help="train on the first N training images only (0: all), as train_fashion's "
                         "--train-rows")
    ap.add_argument("--deadline", type=float, default=0.0,
                    help="stop after this many training seconds (0: none)")
    ap.add_argument("--target-accuracy", type=float, default=0.0,
                    help="stop after the first epoch whose test accuracy reaches this (0: never)")
    ap.add_argument("--no-mkldnn", action="store_true", help="torch.backends.mkldnn.enabled = "
                                                             "False")
    ap.add_argument("--data-dir", default=FASHION_DIR)
    ap.add_argument("--digits", default=DIGITS_CSV)
    ap.add_argument("--out", help="where to write metrics.json (default: stdout only)")
    ap.add_argument("--quiet", action="store_true")
    return ap.parse_args()


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FASHION_DIR = "/usr/share/datasets/fashion-mnist"
DIGITS_CSV = os.path.join(ROOT, "data", "digits", "digits.csv.gz")
ARGS = parse_args()  # before torch loads: OpenBLAS and OpenMP read their thread counts then
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(ARGS.threads))
os.environ.setdefault("OMP_NUM_THREADS", str(ARGS.threads))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

IMAGE_MAGIC, LABEL_MAGIC = 2051, 2049


def fail(msg):
    sys.exit(f"fashion_torch: {msg}")


def read_gz(path):
    try:
        with gzip.open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        fail(f"{path} not found (Debian package dataset-fashion-mnist)")
    except (OSError, EOFError, zlib.error) as e:
        fail(f"{path} is not a complete gzip file: {e}")


def load_idx_images(path):
    buf = read_gz(path)
    if len(buf) < 16:
        fail(f"{path}: truncated IDX header ({len(buf)} bytes, need 16)")
    magic, n, rows, cols = struct.unpack_from(">4I", buf, 0)
    if magic != IMAGE_MAGIC:
        fail(f"{path}: magic number {magic} at offset 0, expected {IMAGE_MAGIC} (IDX images)")
    if (rows, cols) != (28, 28):
        fail(f"{path}: images of {rows}x{cols} (header offset 8), expected 28x28")
    if len(buf) != 16 + n * rows * cols:
        fail(f"{path}: {len(buf)} bytes for {n} images, expected {16 + n * rows * cols}")
    return np.frombuffer(buf, np.uint8, n * rows * cols, 16).reshape(n, rows * cols)


def load_idx_labels(path):
    buf = read_gz(path)
    if len(buf) < 8:
        fail(f"{path}: truncated IDX header ({len(buf)} bytes, need 8)")
    magic, n = struct.unpack_from(">2I", buf, 0)
    if magic != LABEL_MAGIC:
        fail(f"{path}: magic number {magic} at offset 0, expected {LABEL_MAGIC} (IDX labels)")
    if len(buf) != 8 + n:
        fail(f"{path}: {len(buf)} bytes for {n} labels, expected {8 + n}")
    labels = np.frombuffer(buf, np.uint8, n, 8)
    if labels.size and labels.max() > 9:
        at = int(np.argmax(labels > 9))
        fail(f"{path}: label {labels[at]} at offset {8 + at}, outside 0..9")
    return labels


def load_fashion(data_dir):
    out = []
    for split in ("train", "t10k"):
        x = load_idx_images(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"))
        y = load_idx_labels(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"))
        if len(x) != len(y):
            fail(f"{data_dir}: {split}: {len(x)} images but {len(y)} labels")
        pixels = np.empty(x.shape, np.float32)  # no float64 or second float32 temporary
        np.divide(x, np.float32(255.0), out=pixels)
        out.append((torch.from_numpy(pixels), torch.from_numpy(y.astype(np.int64))))
        del x
    return out


def load_digits(path, seed, test_fraction=0.2):
    text = read_gz(path).decode("ascii", errors="replace")
    rows = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) != 65:
            fail(f"{path}:{line_no}: {len(fields)} fields, expected 65 (64 pixels + label)")
        try:
            v = [int(f) for f in fields]
        except ValueError:
            fail(f"{path}:{line_no}: a field is not an integer")
        if min(v[:64]) < 0 or max(v[:64]) > 16 or not 0 <= v[64] <= 9:
            fail(f"{path}:{line_no}: a pixel outside 0..16 or a label outside 0..9")
        rows.append(v)
    if not rows:
        fail(f"{path}: no images")
    a = np.array(rows, dtype=np.int64)
    x = a[:, :64].astype(np.float32) / np.float32(16.0)
    y = a[:, 64]
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in range(10):
        idx = np.flatnonzero(y == c)
        rng.shuffle(idx)
        n_test = int(round(test_fraction * len(idx)))
        test.extend(idx[:n_test])
        train.extend(idx[n_test:])
    train, test = np.sort(train), np.sort(test)
    return [(torch.from_numpy(x[i]), torch.from_numpy(y[i])) for i in (train, test)]


class Mlp(nn.Module):
    def __init__(self, inputs, hidden=256):
        super().__init__()
        self.fc1 = nn.Linear(inputs, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.fc1 = nn.Linear(800, 500)
        self.fc2 = nn.Linear(500, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2, 2)
        return self.fc2(F.relu(self.fc1(h.flatten(1))))


def he_init(model):
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):
                fan_in = m.in_features
            elif isinstance(m, nn.Conv2d):
                fan_in = m.in_channels * m.kernel_size[0] * m.kernel_size[1]
            else:
                continue
            m.weight.normal_(0.0, math.sqrt(2.0 / fan_in))
            m.bias.zero_()


def peak_rss_kib():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))


def weights_hash(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def accuracy(model, x, y, batch):
    """The share of (x, y) the model classifies right, evaluated `batch` rows at a time (the
    training batch size: the peak memory of evaluation stays that of training's forward pass)."""
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            correct += int((model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum())
    model.train()
    return correct / len(x)


def main():
    t_start = time.perf_counter()
    args = ARGS
    digits = args.dataset == "digits"
    if digits and args.model != "mlp":
        fail("--dataset digits has only the MLP")
    epochs = args.epochs or (40 if digits else 1)
    batch = args.batch_size or (512 if digits else 128)
    lr = args.lr or (5e-3 if digits else 1e-3)
    if epochs < 1 or batch < 1 or args.threads < 1:
        fail("--epochs, --batch-size and --threads must be >= 1")

    torch.set_num_threads(args.threads)
    torch.backends.mkldnn.enabled = not args.no_mkldnn
    torch.manual_seed(args.seed)
    if digits:
        (x_train, y_train), (x_test, y_test) = load_digits(args.digits, args.seed)
        model = Mlp(64)
    else:
        (x_train, y_train), (x_test, y_test) = load_fashion(args.data_dir)
        if args.train_rows:
            if not 0 < args.train_rows <= len(x_train):
                fail(f"--train-rows {args.train_rows}: the training set has {len(x_train)} rows")
            x_train, y_train = x_train[:args.train_rows], y_train[:args.train_rows]
        if args.model == "cnn":
            x_train, x_test = x_train.view(-1, 1, 28, 28), x_test.view(-1, 1, 28, 28)
            model = LeNet()
        else:
            model = Mlp(784)
    he_init(model)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8)
    gen = torch.Generator().manual_seed(args.seed ^ 0x5EED)
    n = len(x_train)

    # Warm-up: one forward + backward on a batch, gradients dropped; no weight changes.
    F.cross_entropy(model(x_train[:batch]), y_train[:batch]).backward()
    opt.zero_grad(set_to_none=True)

    per_epoch = []
    train_s = 0.0
    samples = 0
    deadline_reached = False
    for epoch in range(1, epochs + 1):
        t0 = time.perf_counter()
        order = torch.randperm(n, generator=gen)
        loss_sum = torch.zeros((), dtype=torch.float64)
        correct = torch.zeros((), dtype=torch.int64)
        rows = 0
        for i in range(0, n, batch):
            idx = order[i:i + batch]
            x, y = x_train[idx], y_train[idx]
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                loss_sum += loss.detach().double() * len(idx)
                correct += (logits.detach().argmax(1) == y).sum()
            rows += len(idx)
            if args.deadline > 0 and train_s + time.perf_counter() - t0 >= args.deadline:
                deadline_reached = True
                break
        epoch_s = time.perf_counter() - t0
        train_s += epoch_s
        samples += rows
        if deadline_reached and rows < n:
            break  # a partial epoch: counted in samples and seconds, not in per_epoch
        test_acc = accuracy(model, x_test, y_test, batch)
        per_epoch.append(dict(epoch=epoch, time_s=train_s, train_loss=float(loss_sum) / rows,
                              train_accuracy=int(correct) / rows, test_accuracy=test_acc,
                              samples_per_s=rows / epoch_s))
        if not args.quiet:
            print(f"epoch {epoch}: {train_s:.2f} s, train loss {float(loss_sum) / rows:.4f}, "
                  f"test accuracy {test_acc:.4f}, {rows / epoch_s:,.0f} samples/s",
                  file=sys.stderr, flush=True)
        if deadline_reached or (args.target_accuracy and test_acc >= args.target_accuracy):
            break
    final_acc = (per_epoch[-1]["test_accuracy"] if per_epoch and per_epoch[-1]["time_s"] == train_s
                 else accuracy(model, x_test, y_test, batch))
    metrics = dict(model=args.model, dataset=args.dataset, test_accuracy=final_acc,
                   samples_per_s=samples / train_s, epochs=len(per_epoch), workers=args.threads,
                   batch_size=batch, seed=args.seed, seconds=train_s,
                   wall_seconds=time.perf_counter() - t_start, peak_rss_kib=peak_rss_kib(),
                   weights_hash=weights_hash(model), deadline_reached=deadline_reached,
                   per_epoch=per_epoch, mkldnn=not args.no_mkldnn, torch=torch.__version__)
    text = json.dumps(metrics, indent=1)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if not args.quiet:
        print(f"{args.dataset} {args.model}: {samples} samples in {train_s:.2f} s = "
              f"{samples / train_s:,.0f} samples/s, {args.threads} thread(s), mkldnn "
              f"{'off' if args.no_mkldnn else 'on'}; test accuracy {final_acc:.4f}; peak RSS "
              f"{metrics['peak_rss_kib']} KiB", flush=True)


if __name__ == "__main__":
    main()
