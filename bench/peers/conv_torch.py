#!/usr/bin/env python3
"""PyTorch peer of chanflow's conv2d benchmarks (bench/conv_bench.cc, BM_Conv2dLeNet*).

Times the LeNet Fashion-MNIST convolutions at batch 64, float32, NCHW, stride 1, no padding:
    LeNet1: input 64x1x28x28, filter 20x1x5x5
    LeNet2: input 64x20x12x12, filter 50x20x5x5
Forward is torch.nn.functional.conv2d; Backward is aten::convolution_backward computing the
input and filter gradients (no bias), the same work chanflow's conv2d_grad_input +
conv2d_grad_filter do; Step is one forward then one backward, the work of chanflow's
BM_Conv2dLeNet{1,2}Step. PyTorch 1.13 runs both through oneDNN on the CPU.

Prints one JSON object per line: {"name", "threads", "ms_per_call", "peak_extra_bytes", "mkldnn"
(whether oneDNN was on), "torch" (its version)}, where
peak_extra_bytes is the most CPU memory torch's allocator held beyond the inputs during one call
(torch.profiler's accounting of ATen allocations: the outputs and any ATen workspace; buffers
oneDNN allocates itself, such as its blocked-layout copies of the operands, are not counted).

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/peers/conv_torch.py --threads 1
    OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/peers/conv_torch.py \
        --threads 2 --kinds Step
    /usr/bin/python3 bench/peers/conv_torch.py --rss LeNet2   # one shape per process

--rss SHAPE prints instead how much the process's peak RSS grows over five forward + backward
passes at batch 64, after a warm-up pass at batch 16 (JIT code, allocator set-up): the memory a
training step's convolution holds at its peak beyond what the smaller pass needed, oneDNN's own
buffers included. The peak is the process's VmHWM (/proc/self/status): ru_maxrss would start at
the peak RSS of the process that started this one (Linux carries it across fork + exec).

With 2 threads on a 2-core host that also runs other work, OpenMP's default wait policy (its
threads spin between parallel regions) makes every call many times slower; OMP_WAIT_POLICY=PASSIVE
(the threads sleep) is torch's better setting there. --no-mkldnn turns oneDNN off
(torch.backends.mkldnn.enabled = False): torch then runs its own im2col + BLAS kernels
(slow_conv2d), which on the LeNet1 shape (one input channel) are several times faster than oneDNN's
backward. scripts/bench.py times these settings and compares chanflow with the best of them.
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
        out = fn()
        del out
    # Running sum of each event's own allocations (negative for frees), in time order.
    cur = peak = 0
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        cur += e.self_cpu_memory_usage
        peak = max(peak, cur)
    return peak


def peak_rss_kib():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))


def rss(name):
    xs, ws = SHAPES[name]
    x = torch.randn(xs)
    w = torch.randn(ws)
    gy = torch.randn(F.conv2d(x, w).shape)

    def step(n):
        F.conv2d(x[:n], w)
        torch.ops.aten.convolution_backward(gy[:n], x[:n], w, None, [1, 1], [0, 0], [1, 1], False,
                                            [0, 0], 1, [True, True, False])

    with torch.no_grad():
        step(16)
        r0 = peak_rss_kib()
        for _ in range(5):
            step(xs[0])
        r1 = peak_rss_kib()
    print(json.dumps({"name": f"Conv2d{name}PeakRssGrowth", "kib": r1 - r0}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--rss", choices=sorted(SHAPES))
    ap.add_argument("--no-mkldnn", action="store_true",
                    help="torch.backends.mkldnn.enabled = False")
    ap.add_argument("--kinds", default="Forward,Backward,Step",
                    help="comma-separated subset of Forward, Backward, Step")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.backends.mkldnn.enabled = not args.no_mkldnn
    torch.manual_seed(0)
    if args.rss:
        rss(args.rss)
        return
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

        def step():
            return fwd(), bwd()

        with torch.no_grad():
            for kind, fn in (("Forward", fwd), ("Backward", bwd), ("Step", step)):
                if kind not in args.kinds.split(","):
                    continue
                ms = timeit(fn, args.min_time)
                print(json.dumps({"name": f"BM_Conv2d{name}{kind}", "threads": args.threads,
                                  "ms_per_call": round(ms, 4), "peak_extra_bytes": peak_extra(fn),
                                  "mkldnn": not args.no_mkldnn, "torch": torch.__version__}),
                      flush=True)


if __name__ == "__main__":
    main()
