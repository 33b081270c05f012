#!/usr/bin/env python3
"""tensor_optim_torch: chanflow's sgd_step/adam_step/clip_by_global_norm follow torch.optim.

Runs SGD (plain, L2 decay, momentum, dampening, Nesterov), Adam (with and without L2 decay) and
AdamW, some with global-norm clipping and a learning-rate schedule, for 100 steps on fixed float64
data, once through tensor_optim_trajectory and once through torch.optim with autograd gradients of
the same loss (see optim_trajectory.cc), and compares the final parameters to 1e-6.
The same script checks the graph optimiser classes (graph_optimizer_torch, with
tests/graph/optimizer_trajectory.cc as TRAJECTORY_EXE and NAME graph_optimizer_torch).
Exits 77 (skipped) when torch or numpy is not installed.
Usage: check_optim_torch.py TRAJECTORY_EXE WORK_DIR [NAME]
"""
import math
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # an optional peer: skip visibly
    print(f"{sys.argv[3] if len(sys.argv) > 3 else 'tensor_optim_torch'}: skipped ({e}); install python3-numpy and python3-torch")
    sys.exit(77)

STEPS = 100
TOL = 1e-6

# name: (kind, options). lr decays by `decay` per step; clip is clip_grad_norm_'s max_norm.
CONFIGS = {
    "sgd": ("sgd", dict(lr=0.05)),
    "sgd_wd": ("sgd", dict(lr=0.05, wd=0.01)),
    "momentum": ("sgd", dict(lr=0.02, momentum=0.9)),
    "momentum_damp_wd": ("sgd", dict(lr=0.02, momentum=0.9, dampening=0.2, wd=0.01)),
    "nesterov_wd": ("sgd", dict(lr=0.02, momentum=0.9, nesterov=1, wd=0.01)),
    "nesterov_clip_sched": ("sgd", dict(lr=0.05, momentum=0.8, nesterov=1, clip=0.5,
                                         decay=0.98)),
    "adam": ("adam", dict(lr=0.01)),
    "adam_wd": ("adam", dict(lr=0.01, wd=0.05)),
    "adam_clip": ("adam", dict(lr=0.02, clip=0.5, beta1=0.8, beta2=0.99, eps=1e-6)),
    "adamw": ("adam", dict(lr=0.01, wd=0.05, decoupled=1)),
    "adamw_clip_sched": ("adam", dict(lr=0.02, wd=0.1, decoupled=1, clip=0.3, decay=0.97)),
}


def make_data(work):
    rng = np.random.default_rng(2024)
    shapes = [(4, 5), (7,)]
    data = []
    for k, shape in enumerate(shapes):
        p0 = rng.normal(0, 1.5, shape)
        a = rng.uniform(0.5, 2.0, shape)
        t = rng.normal(0, 1, shape)
        for nm, arr in (("p0", p0), ("a", a), ("t", t)):
            np.save(os.path.join(work, f"{nm}_{k}.npy"), arr.astype(np.float64))
        data.append((p0, a, t))
    return data


def noise(step, n):
    i = np.arange(n, dtype=np.float64)
    return 0.05 * np.sin(0.7 * step + 0.37 * i)


def run_torch(data, kind, o):
    params = [torch.tensor(p0, dtype=torch.float64, requires_grad=True) for p0, _, _ in data]
    lr0 = o.get("lr", 0.01)
    if kind == "sgd":
        opt = torch.optim.SGD(params, lr=lr0, momentum=o.get("momentum", 0),
                              dampening=o.get("dampening", 0),
                              nesterov=bool(o.get("nesterov", 0)),
                              weight_decay=o.get("wd", 0))
    else:
        cls = torch.optim.AdamW if o.get("decoupled") else torch.optim.Adam
        opt = cls(params, lr=lr0, betas=(o.get("beta1", 0.9), o.get("beta2", 0.999)),
                  eps=o.get("eps", 1e-8), weight_decay=o.get("wd", 0))
    clipped = 0
    for step in range(1, STEPS + 1):
        for g in opt.param_groups:
            g["lr"] = lr0 * o.get("decay", 1.0) ** (step - 1)
        opt.zero_grad()
        loss = 0
        for p, (_, a, t) in zip(params, data):
            at, tt = torch.tensor(a), torch.tensor(t)
            nz = torch.tensor(noise(step, p.numel()).reshape(p.shape))
            loss = loss + (0.5 * at * (p - tt) ** 2 + 0.1 * torch.cos(p) + p * nz).sum()
        loss.backward()
        if o.get("clip"):
            n = torch.nn.utils.clip_grad_norm_(params, o["clip"])
            clipped += float(n) > o["clip"]
        opt.step()
    return [p.detach().numpy() for p in params], clipped


def main():
    exe, work = sys.argv[1], sys.argv[2]
    label = sys.argv[3] if len(sys.argv) > 3 else "tensor_optim_torch"
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    torch.set_num_threads(1)
    data = make_data(work)
    failures = []
    finals = {}
    for name, (kind, o) in CONFIGS.items():
        args = [exe, work, f"name={name}", f"kind={kind}", f"steps={STEPS}"]
        args += [f"{k}={v!r}" for k, v in o.items()]
        subprocess.run(args, check=True)
        want, clipped = run_torch(data, kind, o)
        if o.get("clip") and clipped < 10:
            failures.append(f"{name}: clipping acted on only {clipped} steps (data too tame)")
        worst = 0.0
        for k, w in enumerate(want):
            got = np.load(os.path.join(work, f"out_{name}_{k}.npy"))
            if got.shape != w.shape or got.dtype != np.float64:
                failures.append(f"{name}[{k}]: got {got.dtype}{got.shape}, want float64{w.shape}")
                continue
            err = float(np.max(np.abs(got - w) / (1 + np.abs(w))))
            worst = max(worst, err)
            moved = float(np.max(np.abs(w - data[k][0])))
            if moved < 1e-2:
                failures.append(f"{name}[{k}]: parameters hardly moved ({moved})")
        finals[name] = np.concatenate([w.ravel() for w in want])
        print(f"{name:22s} max |chanflow - torch| / (1 + |torch|) = {worst:.3e}")
        if not worst <= TOL:
            failures.append(f"{name}: differs from torch.optim by {worst:.3e} > {TOL}")
    # The configurations must be distinguishable, or a kernel ignoring an option would pass.
    names = list(finals)
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            if np.max(np.abs(finals[x] - finals[y])) < 1e-4:
                failures.append(f"{x} and {y} give the same parameters: an option has no effect")
    for f in failures:
        print("FAIL:", f)
    print(f"{label}: {len(CONFIGS)} configurations, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
