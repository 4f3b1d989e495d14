#!/usr/bin/env python3
"""Golden of PyTorch's ReduceLROnPlateau for models/fit's Plateau.

Writes to stdout, as JSON, the learning rate after each
ReduceLROnPlateau.step(value) for fixed sequences of monitored values
under several configurations (min and max mode, thresholds, cooldowns,
min_lr, patience 0, the eps rule, NaN values), for
models/fit/schedule_test.go to compare exactly:

    /usr/bin/python3 scripts/golden/torch_plateau.py > models/fit/testdata/plateau_torch.json

NaN values are written as null. threshold_mode is "rel" and eps 1e-8
(PyTorch's defaults, the only ones spn's training.plateau offers).
"""

import json
import math
import random
import sys

import torch


def curve(seed, n, start, floor, noise):
    """A noisy loss curve that falls from start towards floor."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        v = floor + (start - floor) * math.exp(-i / 15.0) + rng.uniform(-noise, noise)
        out.append(round(v, 6))
    return out


def run(case):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([p], lr=case["lr"])
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(
        opt, mode=case["mode"], factor=case["factor"], patience=case["patience"],
        threshold=case["threshold"], threshold_mode="rel", cooldown=case["cooldown"],
        min_lr=case["min_lr"], eps=1e-8)
    lrs = []
    for v in case["values"]:
        sched.step(float("nan") if v is None else v)
        lrs.append(opt.param_groups[0]["lr"])
    case["lrs"] = lrs
    return case


def main():
    ap = curve(3, 120, 0.2, 0.65, 0.01)
    ap = [round(0.85 - v, 6) for v in ap]  # a rising validation AP
    cases = [
        # LRGB's peptides-func configs: val loss, factor 0.5, patience 20,
        # min_lr 1e-5, over 250 epochs (the rate reaches min_lr).
        dict(name="lrgb", mode="min", lr=1e-3, factor=0.5, patience=20,
             threshold=1e-4, cooldown=0, min_lr=1e-5,
             values=curve(1, 250, 0.7, 0.25, 0.004)),
        # PyTorch's defaults on a noisier curve.
        dict(name="defaults", mode="min", lr=1e-2, factor=0.1, patience=10,
             threshold=1e-4, cooldown=0, min_lr=0.0,
             values=curve(2, 150, 1.5, 0.4, 0.05)),
        # max mode (a validation metric that rises), a coarse threshold.
        dict(name="max_threshold", mode="max", lr=1e-3, factor=0.5, patience=4,
             threshold=1e-2, cooldown=0, min_lr=0.0, values=ap),
        # cooldown 3 with patience 2, threshold 0.
        dict(name="cooldown", mode="min", lr=0.1, factor=0.3, patience=2,
             threshold=0.0, cooldown=3, min_lr=1e-4,
             values=curve(4, 100, 2.0, 1.0, 0.2)),
        # patience 0: every epoch without improvement reduces.
        dict(name="patience0", mode="min", lr=1.0, factor=0.5, patience=0,
             threshold=1e-4, cooldown=1, min_lr=0.0,
             values=[5, 4, 4, 4.0001, 3, 3, 3, 2.9999, 2.5, 2.5, 2.6, 2.7, 2.8, 1, 1, 1]),
        # min_lr close to lr: one clamped reduction, then none (the change
        # is 0); and a rate whose reductions fall below eps.
        dict(name="min_lr_clamp", mode="min", lr=1e-3, factor=0.5, patience=1,
             threshold=1e-4, cooldown=0, min_lr=9e-4, values=[1.0] * 12),
        dict(name="eps", mode="min", lr=1e-7, factor=0.5, patience=0,
             threshold=1e-4, cooldown=0, min_lr=0.0, values=[1.0] * 12),
        # negative values in max mode: "rel" multiplies the best by
        # 1 + threshold, so an improvement of a negative best is easier.
        dict(name="max_negative", mode="max", lr=1e-2, factor=0.5, patience=2,
             threshold=0.1, cooldown=0, min_lr=0.0,
             values=[-5, -4.8, -4.7, -4.9, -4.6, -4.65, -4.64, -4.63, -4.62, -3, -3, -3, -3, -3]),
        # NaN (a diverged validation) never improves.
        dict(name="nan", mode="min", lr=1e-3, factor=0.5, patience=1,
             threshold=1e-4, cooldown=0, min_lr=0.0,
             values=[1.0, None, None, 0.9, None, 0.8, 0.8, None, 0.7, None, None, None]),
    ]
    out = {"torch": torch.__version__, "cases": [run(c) for c in cases]}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
