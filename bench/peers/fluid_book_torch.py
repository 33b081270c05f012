#!/usr/bin/env python3
"""PyTorch peer of chanflow's Fluid book training benchmark (python_bench.py fluid-book).

The two models of Paddle's book test test_recognize_digits.py, written with torch.nn, trained at
batch 64 with Adam (learning rate 0.001) on synthetic Fashion-MNIST-shaped data (float32
64x1x28x28 in [0, 1), int64 labels in [0, 10)), one step = forward, loss, zero_grad, backward,
optimizer step:
    mlp: flatten 784 -> Linear 200, tanh -> Linear 200, tanh -> Linear 10, softmax
    cnn: Conv2d 1->20 5x5, relu, max pool 2/2 -> BatchNorm2d(20) (training statistics) ->
         Conv2d 20->50 5x5, relu, max pool 2/2 -> Linear 800 -> 10, softmax
The loss is Fluid's: cross_entropy of the softmax probabilities (-log p[label]), then mean.
Initialisation follows Fluid's defaults: Xavier-uniform fc weights, Normal(0, sqrt(2 / fan_in))
conv filters, zero biases, batch-norm scale 1 and shift 0 (momentum 0.9 in Fluid's convention,
eps 1e-5).

Prints one JSON object per model: {"name": "book_<m>", "threads", "mkldnn", "ms_per_step",
"loss_first", "loss_last", "torch"}. Each figure is the mean over at least --min-time seconds and
20 steps after 5 warm-up steps.

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/peers/fluid_book_torch.py --threads 1
    OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 \
        bench/peers/fluid_book_torch.py --threads 2 --no-mkldnn
"""

import argparse
import json
import math
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

BATCH = 64


def fluid_init(module):
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Conv2d):
            fan_in = m.in_channels * m.kernel_size[0] * m.kernel_size[1]
            nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / fan_in))
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 200)
        self.fc2 = nn.Linear(200, 200)
        self.fc3 = nn.Linear(200, 10)

    def forward(self, x):
        h = torch.tanh(self.fc1(x.flatten(1)))
        h = torch.tanh(self.fc2(h))
        return F.softmax(self.fc3(h), dim=1)


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.bn = nn.BatchNorm2d(20, eps=1e-5, momentum=0.1)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.fc = nn.Linear(50 * 4 * 4, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
        h = self.bn(h)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2, 2)
        return F.softmax(self.fc(h.flatten(1)), dim=1)


def bench(name, model, min_time):
    torch.manual_seed(0)
    fluid_init(model)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    x = torch.rand(BATCH, 1, 28, 28)
    y = torch.randint(0, 10, (BATCH, 1))

    def step():
        prob = model(x)
        loss = -torch.log(prob.gather(1, y)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    first = float(step())
    for _ in range(4):
        step()
    n, t0 = 0, time.perf_counter()
    while True:
        step()
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time and n >= 20:
            break
    last = float(step())
    if not last < first:
        sys.exit(f"fluid_book_torch: {name}: the loss did not fall ({first} -> {last})")
    return dict(name=name, ms_per_step=elapsed / n * 1e3, loss_first=first, loss_last=last)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--no-mkldnn", action="store_true", help="torch.backends.mkldnn off")
    ap.add_argument("--models", default="mlp,cnn")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.backends.mkldnn.enabled = not args.no_mkldnn
    makers = {"mlp": Mlp, "cnn": Cnn}
    for m in args.models.split(","):
        out = bench(f"book_{m}", makers[m](), args.min_time)
        out.update(threads=args.threads, mkldnn=not args.no_mkldnn, torch=torch.__version__)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
