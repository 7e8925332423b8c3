#!/usr/bin/env python3
"""One DMALA step of the official binary-BNN code, timed (peer side of `paper/table2.md`).

A re-statement, not upstream code: ruqizhang/discrete-langevin BinaryBNN/bayesian_nn.py's
BayesianNN.forward (energy −τ·mean (ŷ − y)², τ = 100, random.sample of the batch on every
call) and GWG_release/samplers.py's LangevinSampler.step with mh=True, approx=True, temp=2,
step_size=0.1 (two gradient calls and two energy calls per step), in float32 as upstream.
Prints one JSON line: {"peer": "torch", "ms_per_step": ..., ...}.

Usage: bnn_peer.py [--data data/cache/compas-train.csv] [--chains 50] [--hidden 100]
                   [--steps 20] [--threads 1]
"""
import argparse
import json
import random
import time

import numpy as np
import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data/cache/compas-train.csv")
    ap.add_argument("--chains", type=int, default=50)
    ap.add_argument("--hidden", type=int, default=100)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    random.seed(0)
    m = np.loadtxt(a.data, delimiter=",", skiprows=1)
    x = torch.tensor(m[:, :-1]).float()
    y = torch.tensor(m[:, -1]).float()
    n, p = x.shape
    h, c = a.hidden, a.chains

    def energy(theta):  # BayesianNN.forward with the full batch
        w = 2.0 * theta - 1.0
        w1 = w[:, : p * h].reshape(-1, p, h)
        b1 = w[:, p * h:(p + 1) * h].unsqueeze(1)
        w2 = w[:, (p + 1) * h:(p + 2) * h].unsqueeze(2)
        b2 = w[:, -1].reshape(-1, 1, 1)
        idx = random.sample(range(n), n)
        xb, yb = x[idx], y[idx]
        inp = xb.unsqueeze(0).repeat(c, 1, 1)
        out = torch.sigmoid((torch.bmm(F.tanh(torch.bmm(inp, w1) + b1), w2) + b2).squeeze())
        return -((out - yb.unsqueeze(0).repeat(c, 1)).pow(2)).mean(dim=1) * 100.0

    def diff(theta):  # utils.approx_difference_function / temp
        t = theta.detach().requires_grad_()
        g = torch.autograd.grad(energy(t).sum(), t)[0]
        return -(2.0 * t.detach() - 1.0) * g / 2.0

    def step(cur, alpha=0.1, eps=1e-10):
        fd = diff(cur)
        term2 = 1.0 / (2 * alpha)
        fp = torch.exp(fd - term2) / (torch.exp(fd - term2) + 1)
        ind = (torch.rand_like(cur) < fp) * 1
        new = (1.0 - cur) * ind + cur * (1.0 - ind)
        lp_f = torch.sum(torch.log(fp * ind + (1 - fp) * (1.0 - ind) + eps), dim=-1)
        rd = diff(new)
        rp = torch.exp(rd - term2) / (torch.exp(rd - term2) + 1)
        lp_r = torch.sum(torch.log(rp * ind + (1 - rp) * (1.0 - ind) + eps), dim=-1)
        with torch.no_grad():
            la = energy(new) - energy(cur) + lp_r - lp_f
        acc = (la.exp() > torch.rand_like(la)).float()
        return new * acc[:, None] + cur * (1.0 - acc[:, None])

    theta = torch.bernoulli(torch.full((c, (p + 2) * h + 1), 0.5))
    theta = step(theta)  # warm-up
    t0 = time.perf_counter()
    for _ in range(a.steps):
        theta = step(theta)
    ms = (time.perf_counter() - t0) / a.steps * 1e3
    print(json.dumps({"peer": "torch", "torch": torch.__version__, "threads": a.threads, "chains": c, "hidden": h,
                      "n": n, "p": p, "steps": a.steps, "ms_per_step": ms}))


if __name__ == "__main__":
    main()
