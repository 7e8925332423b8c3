#!/usr/bin/env python3
"""Per-step wall time of the ported official samplers (port_dlp.py) on a CUDA GPU: the model,
the chains and every tensor on the device, each timing bracketed by torch.cuda.synchronize().
Same models, step sizes and JSON-lines schema as peer_bench.py, impl "torch-port-cuda".

    python3 peer_gpu.py [--quick] [--L 25,100] [--B 1,1024] [--rbm-chains 100,1000] [--seed S] > out.jsonl

Written for `just bench-peer --device cuda`; not run on the machine it was written on (no GPU).
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_bench  # noqa: E402  (models, step sizes and samplers are shared with the CPU driver)


def ints(s):
    return [int(v) for v in s.split(",") if v.strip()]


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_steps(sampler, model, x, budget):
    """Five untimed steps (CUDA context, kernels, caches), then three repeats of n steps."""
    step = lambda x: sampler.step(x.detach(), model).detach()  # the upstream loop body
    for _ in range(5):
        x = step(x)
    sync()
    t0 = time.perf_counter()
    x = step(x)
    sync()
    first = time.perf_counter() - t0
    n = max(3, int(budget / 3 / max(first, 1e-6)))
    per = []
    for _ in range(3):
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            x = step(x)
        sync()
        per.append((time.perf_counter() - t0) / n)
    return per, 3 * n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="L=100 only, B 1 and 1024, RBM 100 and 1000 chains")
    ap.add_argument("--L")
    ap.add_argument("--B")
    ap.add_argument("--rbm-chains")
    ap.add_argument("--samplers", default="dula,dmala,gwg,bg-1")
    ap.add_argument("--budget", type=float, default=None, help="timed seconds per configuration")
    ap.add_argument("--sigma", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1234567)
    ap.add_argument("--device", default="cuda", help="cuda; cpu only to smoke-test this script")
    ap.add_argument("--tf32", action="store_true", help="allow TF32 matrix products (off: the float32 of the CPU run)")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("error: peer_gpu.py: torch %s sees no CUDA device" % torch.__version__)
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    dev = torch.device(a.device)
    Ls = ints(a.L or ("100" if a.quick else "25,50,100"))
    Bs = ints(a.B or ("1,1024" if a.quick else "1,16,256,1024"))
    rbm_chains = ints(a.rbm_chains or "100,1000")
    budget = a.budget or (0.3 if a.quick else 1.0)
    samplers = [s for s in a.samplers.split(",") if s]
    impl = peer_bench.load_port()
    name = torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu (smoke test)"
    common = dict(impl="torch-port-" + a.device, device=name, torch=torch.__version__,
                  python=platform.python_version(), tf32=a.tf32, threads=1, seed=a.seed)
    if hasattr(os, "getloadavg"):
        common["load1_at_start"] = round(os.getloadavg()[0], 2)

    def run(kind, model, dim, B, extra, init):
        for name in samplers:
            if kind == "ising" and name == "bg-1" and dim * B > 10**6:
                continue  # two dense energies per site update: hours per sweep, nothing to learn
            torch.manual_seed(a.seed)
            sampler = peer_bench.make_sampler(impl, name, kind, dim)
            torch.distributions.Distribution.set_default_validate_args(False)
            per, steps = time_steps(sampler, model, init.sample((B,)), budget)
            s = statistics.median(per)
            rec = dict(sampler=name, model=kind, **extra, dims=dim, chains=B, steps=steps, repeats=3,
                       seconds_per_step=s, seconds_per_step_min=min(per), ns_per_spin_step=s * 1e9 / (B * dim),
                       sites_per_step=1 if name == "bg-1" else dim, validate_args=False, **common)
            print(json.dumps(rec), flush=True)
            print("  %s %-5s %-6s %-8s B=%-5d %10.4f ms/step %9.3f ns/spin-step"
                  % (common["impl"], name, kind, extra.get("L", ""), B, s * 1e3, rec["ns_per_spin_step"]), file=sys.stderr)

    for L in Ls:
        torch.manual_seed(a.seed)
        model = impl["Ising"](L, a.sigma, peer_bench.ISING_BIAS).to(dev)
        init = torch.distributions.Bernoulli(logits=2 * model.bias)
        for B in Bs:
            run("ising", model, L * L, B, dict(L=L, sigma=a.sigma), init)
        del model
        torch.cuda.empty_cache()
    for B in rbm_chains:
        torch.manual_seed(a.seed)
        model = peer_bench.make_model(impl, "rbm").to(dev)
        init = torch.distributions.Bernoulli(probs=torch.full((peer_bench.RBM_SHAPE[0],), 0.5, device=dev))
        run("rbm", model, peer_bench.RBM_SHAPE[0], B, dict(hidden=peer_bench.RBM_SHAPE[1]), init)


if __name__ == "__main__":
    main()
