#!/usr/bin/env python3
"""tensor_optim_paddle: chanflow's paddle_sgd/momentum/adam/adamax/rmsprop follow Paddle 1.x's ops.

A NumPy transcription of the sgd, momentum (plain and Nesterov), adam, adamax and rmsprop
operators' formulas (ParamOut, VelocityOut, Moment1Out, Moment2Out, MomentOut, InfNormOut,
MeanSquareOut; Beta1Pow/Beta2Pow advanced by the caller after each step, starting at
beta1/beta2), with L2DecayRegularizer's grad + coeff * param in some runs,
is run for 100 steps next to tensor_optim_trajectory on the same data (see optim_trajectory.cc),
in float64 (to 1e-9) and float32 (to 1e-4; NumPy computes float32 in float32, as the kernels do).
Exits 77 (skipped) when numpy is not installed.
Usage: check_optim_paddle.py TRAJECTORY_EXE WORK_DIR
"""
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError as e:
    print(f"tensor_optim_paddle: skipped ({e}); install python3-numpy")
    sys.exit(77)

STEPS = 100
TOL = {"float64": 1e-9, "float32": 1e-4}

CONFIGS = {
    "p_sgd": ("paddle_sgd", dict(lr=0.05)),
    "p_sgd_l2": ("paddle_sgd", dict(lr=0.05, l2=0.01)),
    "p_momentum": ("paddle_momentum", dict(lr=0.02, momentum=0.9)),
    "p_nesterov_l2": ("paddle_momentum", dict(lr=0.02, momentum=0.9, nesterov=1, l2=0.01)),
    "p_adam": ("paddle_adam", dict(lr=0.01, eps=1e-8)),
    "p_adam_eps_sched": ("paddle_adam", dict(lr=0.02, beta1=0.8, beta2=0.99, eps=1e-2,
                                             decay=0.97)),
    "p_adamax": ("paddle_adamax", dict(lr=0.01)),
    "p_adamax_sched_l2": ("paddle_adamax", dict(lr=0.03, beta1=0.8, beta2=0.6, eps=0.05,
                                                decay=0.98, l2=0.01)),
    "p_rmsprop": ("paddle_rmsprop", dict(lr=0.005, rho=0.9, eps=1e-10)),
    "p_rmsprop_momentum": ("paddle_rmsprop", dict(lr=0.002, rho=0.95, eps=1e-6, momentum=0.9,
                                                  decay=0.99)),
}


def run_numpy(data, kind, o, dt):
    f = np.dtype(dt).type
    ps = [p0.copy() for p0, _, _ in data]
    s1 = [np.zeros_like(p) for p in ps]
    s2 = [np.zeros_like(p) for p in ps]
    beta1, beta2, eps = f(o.get("beta1", 0.9)), f(o.get("beta2", 0.999)), f(o.get("eps", 1e-8))
    mu = f(o.get("momentum", 0))
    rho = f(o.get("rho", 0.9))
    b1p, b2p = beta1, beta2
    one = f(1)
    for step in range(1, STEPS + 1):
        lr = f(o.get("lr", 0.01) * o.get("decay", 1.0) ** (step - 1))
        for k, (p, (_, a, t)) in enumerate(zip(ps, data)):
            i = np.arange(p.size, dtype=np.float64).reshape(p.shape)
            g = (a.astype(np.float64) * (p.astype(np.float64) - t) -
                 0.1 * np.sin(p.astype(np.float64)) + 0.05 * np.sin(0.7 * step + 0.37 * i))
            g = g.astype(dt)
            if o.get("l2"):
                g = g + f(o["l2"]) * p
            if kind == "paddle_sgd":
                ps[k] = p - lr * g
            elif kind == "paddle_momentum":
                s1[k] = s1[k] * mu + g
                if o.get("nesterov"):
                    ps[k] = p - (g + s1[k] * mu) * lr
                else:
                    ps[k] = p - lr * s1[k]
            elif kind == "paddle_adamax":
                # s1: Moment, s2: InfNorm; Beta1Pow advanced after the step (a scale op).
                s1[k] = beta1 * s1[k] + (one - beta1) * g
                s2[k] = np.maximum(beta2 * s2[k] + eps, np.abs(g))
                ps[k] = p - (lr / (one - b1p)) * (s1[k] / s2[k])
            elif kind == "paddle_rmsprop":
                # s1: MeanSquare, s2: Moment.
                s1[k] = rho * s1[k] + (one - rho) * g * g
                s2[k] = mu * s2[k] + lr * g / np.sqrt(s1[k] + eps)
                ps[k] = p - s2[k]
            else:
                lr_t = lr * (np.sqrt(one - b2p) / (one - b1p))
                s1[k] = beta1 * s1[k] + (one - beta1) * g
                s2[k] = beta2 * s2[k] + (one - beta2) * g * g
                ps[k] = p - lr_t * (s1[k] / (np.sqrt(s2[k]) + eps))
        b1p, b2p = b1p * beta1, b2p * beta2
    return ps


def main():
    exe, work = sys.argv[1], sys.argv[2]
    failures = []
    for dt in ("float64", "float32"):
        d = os.path.join(work, dt)
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        rng = np.random.default_rng(7)
        data = []
        for k, shape in enumerate([(3, 6), (5,)]):
            arrs = (rng.normal(0, 1.5, shape).astype(dt), rng.uniform(0.5, 2, shape).astype(dt),
                    rng.normal(0, 1, shape).astype(dt))
            for nm, arr in zip(("p0", "a", "t"), arrs):
                np.save(os.path.join(d, f"{nm}_{k}.npy"), arr)
            data.append(arrs)
        for name, (kind, o) in CONFIGS.items():
            args = [exe, d, f"name={name}", f"kind={kind}", f"steps={STEPS}"]
            args += [f"{k}={v!r}" for k, v in o.items()]
            subprocess.run(args, check=True)
            want = run_numpy(data, kind, o, dt)
            worst = 0.0
            for k, w in enumerate(want):
                got = np.load(os.path.join(d, f"out_{name}_{k}.npy"))
                if got.dtype != w.dtype or got.shape != w.shape:
                    failures.append(f"{name}/{dt}[{k}]: got {got.dtype}{got.shape}")
                    continue
                err = float(np.max(np.abs(got.astype(np.float64) - w) / (1 + np.abs(w))))
                worst = max(worst, err)
                if float(np.max(np.abs(w - data[k][0]))) < 1e-2:
                    failures.append(f"{name}/{dt}[{k}]: parameters hardly moved")
            print(f"{name:18s} {dt}: max |chanflow - numpy| / (1 + |numpy|) = {worst:.3e}")
            if not worst <= TOL[dt]:
                failures.append(f"{name}/{dt}: differs by {worst:.3e} > {TOL[dt]}")
    for f in failures:
        print("FAIL:", f)
    print(f"tensor_optim_paddle: {2 * len(CONFIGS)} runs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
