#!/usr/bin/env python3
"""f and ∇_x f of the Table 1 ResNet energy in PyTorch, checked against ours, then timed
(peer side of `paper/table1.md` § Cost).

The network is `dlp_tensor::ebm::ResNetEbm` re-stated with torch.nn.functional (the official
GWG code's ResNet: conv 3×3 1 → C; stride-2 then stride-1 residual blocks, each conv3×3 →
Swish → conv3×3 plus the identity or a 1×1 stride-2 conv shortcut, then Swish; global mean
pool; linear C → 1; plus the Bernoulli(μ) base term). It reads the parameters, μ, the batch
and our f and ∇_x f from the safetensors file that `EBM_BENCH_DUMP=FILE ebm_bench` writes
(parsed here with numpy: Debian's torch 1.13 has no safetensors loader), prints the largest
differences from ours, and refuses to time a network that disagrees. Parameters are plain
tensors without gradients, as in sampling, so autograd computes only the input gradient.

Prints one JSON line: {"peer": "torch", "threads": T, "energy_ms": ..., "energy_grad_ms": ...}
(medians of --reps calls after one warm-up), with the check's errors.

Usage: ebm_peer.py FILE [--threads 1] [--reps 5]
"""
import argparse
import json
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

DTYPES = {"F32": np.float32, "F64": np.float64}


def load_safetensors(path):
    """{name: numpy array} of a safetensors file (8-byte header length, JSON header, data)."""
    with open(path, "rb") as fh:
        raw = fh.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=DTYPES[meta["dtype"]]).reshape(meta["shape"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    t = load_safetensors(a.file)
    p = {k: torch.tensor(np.array(v)) for k, v in t.items() if k not in ("x", "mu", "f", "grad")}
    n_blocks = len({k.split(".")[1] for k in p if k.startswith("blocks.")})
    stride2 = len({k.split(".")[1] for k in p if k.startswith("blocks.") and ".shortcut." in k})
    mu = torch.tensor(np.array(t["mu"]), dtype=torch.float32)
    logit_mu = torch.log(mu) - torch.log1p(-mu)
    base_const = float(np.log1p(-np.array(t["mu"])).sum())
    x0 = torch.tensor(np.array(t["x"]))
    n, d = x0.shape
    side = int(round(d**0.5))

    def conv(h, name, stride, padding):
        return F.conv2d(h, p[name + ".weight"], p[name + ".bias"], stride=stride, padding=padding)

    def swish(z):
        return z * torch.sigmoid(z)

    def energy(x):
        h = conv(x.reshape(n, 1, side, side), "proj", 1, 1)
        for i in range(n_blocks):
            stride = 2 if i < stride2 else 1
            inner = conv(swish(conv(h, f"blocks.{i}.conv1", stride, 1)), f"blocks.{i}.conv2", 1, 1)
            short = conv(h, f"blocks.{i}.shortcut", 2, 0) if stride == 2 else h
            h = swish(inner + short)
        net = F.linear(h.mean((2, 3)), p["out.weight"], p["out.bias"]).squeeze(1)
        return net + (x * logit_mu).sum(1) + base_const

    def energy_grad(x):
        x = x.clone().requires_grad_()
        f = energy(x)
        (g,) = torch.autograd.grad(f.sum(), x)
        return f.detach(), g

    with torch.no_grad():
        f_only = energy(x0)
    f, g = energy_grad(x0)
    f_ours, g_ours = np.array(t["f"]), np.array(t["grad"])
    f_err = float(np.abs(f.double().numpy() - f_ours).max() / max(1.0, np.abs(f_ours).max()))
    g_err = float(np.abs(g.double().numpy() - g_ours).max() / max(1e-30, np.abs(g_ours).max()))
    f_only_err = float((f_only - f).abs().max())
    # f32 on both sides, different summation orders: relative 1e-4 is generous for rounding
    # and far below what a wrong layer (stride, padding, a missing Swish) would give.
    if max(f_err, g_err) > 1e-4:
        sys.exit(f"error: ebm_peer: the torch network disagrees with ours (f {f_err:.1e}, ∇f {g_err:.1e})")

    def median_ms(fn):
        ms = []
        for r in range(a.reps + 1):
            start = time.perf_counter()
            fn()
            if r > 0:
                ms.append((time.perf_counter() - start) * 1e3)
        return sorted(ms)[len(ms) // 2]

    def forward():
        with torch.no_grad():
            energy(x0)

    print(json.dumps({
        "peer": "torch", "torch": torch.__version__, "threads": torch.get_num_threads(), "batch": n,
        "channels": int(p["proj.weight"].shape[0]), "reps": a.reps,
        "energy_ms": round(median_ms(forward), 1), "energy_grad_ms": round(median_ms(lambda: energy_grad(x0)), 1),
        "max_rel_err_f": f_err, "max_rel_err_grad": g_err, "no_grad_vs_grad_f": f_only_err,
    }))


if __name__ == "__main__":
    main()
