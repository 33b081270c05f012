#!/usr/bin/env python3
"""PyTorch peer of chanflow's conv2d benchmarks (bench/conv_bench.cc, BM_Conv2dLeNet*).

Times the LeNet Fashion-MNIST convolutions at batch 64, float32, NCHW, stride 1, no padding:
    LeNet1: input 64x1x28x28, filter 20x1x5x5
    LeNet2: input 64x20x12x12, filter 50x20x5x5
Forward is torch.nn.functional.conv2d; Backward is aten::convolution_backward computing the
input and filter gradients (no bias), the same work chanflow's conv2d_grad_input +
conv2d_grad_filter do. PyTorch 1.13 runs both through oneDNN on the CPU.

Prints one JSON object per line: {"name", "threads", "ms_per_call", "peak_extra_bytes"}, where
peak_extra_bytes is the most CPU memory torch's allocator held beyond the inputs during one call
(torch.profiler's memory accounting; it counts the outputs and any workspace).

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/peers/conv_torch.py --threads 1
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/peers/conv_torch.py --threads 2
"""

import argparse
import json
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SHAPES = {
    "LeNet1": ((64, 1, 28, 28), (20, 1, 5, 5)),
    "LeNet2": ((64, 20, 12, 12), (50, 20, 5, 5)),
}


def timeit(fn, min_time):
    for _ in range(3):
        fn()
    n = 0
    t0 = time.perf_counter()
    while True:
        fn()
        n += 1
        t = time.perf_counter() - t0
        if t >= min_time and n >= 10:
            return t / n * 1e3


def peak_extra(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True) as prof:
        fn()
    # Running sum of allocations and frees, in order; its maximum is the peak held by the call.
    events = sorted((e for e in prof.events() if e.cpu_memory_usage != 0),
                    key=lambda e: e.time_range.start)
    cur = peak = 0
    for e in events:
        if e.name == "[memory]":
            cur += e.cpu_memory_usage
            peak = max(peak, cur)
    return peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=1.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for name, (xs, ws) in SHAPES.items():
        x = torch.randn(xs)
        w = torch.randn(ws)
        y = F.conv2d(x, w)
        gy = torch.randn(y.shape)

        def fwd():
            return F.conv2d(x, w)

        def bwd():
            return torch.ops.aten.convolution_backward(gy, x, w, None, [1, 1], [0, 0], [1, 1],
                                                       False, [0, 0], 1, [True, True, False])

        with torch.no_grad():
            for kind, fn in (("Forward", fwd), ("Backward", bwd)):
                ms = timeit(fn, args.min_time)
                print(json.dumps({"name": f"BM_Conv2d{name}{kind}", "threads": args.threads,
                                  "ms_per_call": round(ms, 4), "peak_extra_bytes": peak_extra(fn)}),
                      flush=True)


if __name__ == "__main__":
    main()
