"""Binding overhead: dlp_mcmc.sample against `dlp sample` on the same run, and the per-step cost
of a numpy callback model of the same energy (benchmark, not a test).

The run is issue 19's: the 5×5 periodic Ising lattice (σ = 0.1, bias 0.2: coupling 2σ per pair
in the model file), 32 chains, 50,000 DMALA steps at α = 0.4, seed --seed. Both sides run in
release builds, alternately, `--repeats` times; the median wall time of each is reported and
their ratio. The callback model (numpy energy, f and ∂f/∂s of the whole batch per call) runs
fewer steps (--callback-steps) and is reported per step, beside the per-step time of the
official DMALA code's PyTorch port (bench/peer/port_dlp.py; skipped, and said so, when torch
or the port is absent) on the same lattice and chains.

    python3 python/bench/overhead.py [--quick] [--seed S] [--repeats R] [--dlp PATH]

Writes results/python-bench/summary.json (atomically) and prints a table.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import dlp_mcmc

ROOT = Path(__file__).resolve().parents[2]
L, SIGMA, BIAS = 5, 0.1, 0.2


def lattice_model() -> dict:
    return {"schema": "dlp.model.v1", "kind": "ising", "name": "5x5 periodic lattice (benchmark)", "d": L * L,
            "domain": "spin", "lattice": {"shape": [L, L], "periodic": True, "coupling": 2 * SIGMA},
            "b": [BIAS] * (L * L)}


def lattice_J() -> np.ndarray:
    d = L * L
    J = np.zeros((d, d))
    for r in range(L):
        for c in range(L):
            i = r * L + c
            for j in (((r + 1) % L) * L + c, r * L + (c + 1) % L):
                J[i, j] += 2 * SIGMA
                J[j, i] += 2 * SIGMA
    return J


def torch_peer(peer_dir: Path, steps: int, chains: int, step_size: float, seed: int) -> dict:
    """Per-step time of the official DMALA code's PyTorch port (bench/peer/port_dlp.py: the
    upstream algorithm and cost model, autograd gradient, dense J) on the same lattice, or why
    it was not run (no torch, or no port)."""
    try:
        import torch
    except ImportError:
        return {"skipped": "torch is not importable in this Python"}
    if not (peer_dir / "port_dlp.py").exists():
        return {"skipped": f"no port_dlp.py in {peer_dir}"}
    sys.path.insert(0, str(peer_dir))
    import port_dlp  # noqa: E402 (the peer's port, found at run time)
    torch.manual_seed(seed)
    model = port_dlp.LatticeIsingModel(L, init_sigma=SIGMA, init_bias=BIAS)
    sampler = port_dlp.LangevinSampler(L * L, 1, temp=2.0, step_size=step_size, mh=True)
    x = (torch.rand(chains, L * L) < 0.5).float()
    t0 = time.perf_counter()
    for _ in range(steps):
        x = sampler.step(x.detach(), model).detach()
    dt = time.perf_counter() - t0
    return {"code": "bench/peer/port_dlp.py LangevinSampler(mh=True), temp 2 as upstream", "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(), "steps": steps, "seconds": dt, "us_per_step": 1e6 * dt / steps}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="seconds: 2,000 steps, 1 repeat")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=50_000)
    ap.add_argument("--callback-steps", type=int, default=5_000)
    ap.add_argument("--dlp", help="the dlp binary (default: target/release/dlp, built if absent)")
    ap.add_argument("--peer-dir", type=Path, default=ROOT / "bench" / "peer",
                    help="directory of port_dlp.py, the official code's PyTorch port (needs torch)")
    a = ap.parse_args()
    if a.quick:
        a.steps, a.repeats, a.callback_steps = 2_000, 1, 500
    exe = a.dlp or str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "dlp")
    if not a.dlp:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "dlp-cli", "--bin", "dlp"], cwd=ROOT, check=True)
    chains, step_size = 32, 0.4
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ising-5x5.json"
        path.write_text(json.dumps(lattice_model()))
        model = dlp_mcmc.Model.from_file(path)
        cli_args = [exe, "sample", "--model", str(path), "--sampler", "dmala", "--step-size", str(step_size),
                    "--chains", str(chains), "--steps", str(a.steps), "--seed", str(a.seed), "--quiet",
                    "--out", str(Path(tmp) / "final.csv")]
        cli_t, py_t = [], []
        for r in range(a.repeats):
            print(f"repeat {r + 1}/{a.repeats}", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            subprocess.run(cli_args, check=True)
            cli_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            run = dlp_mcmc.sample(model, "dmala", step_size=step_size, chains=chains, steps=a.steps, seed=a.seed,
                                  progress=False)
            py_t.append(time.perf_counter() - t0)
        rows = [ln for ln in (Path(tmp) / "final.csv").read_text().splitlines() if ln and not ln.startswith("#")][1:]
        cli_final = np.array([[int(v) for v in ln.split(",")] for ln in rows], dtype=np.int64)
        same = bool(np.array_equal(cli_final[-chains:], run.final)) if cli_final.shape == run.final.shape else False

    J, b = lattice_J(), np.full(L * L, BIAS)

    def f_grad(x):
        s = x.astype(np.float64)
        sj = s @ J
        return 0.5 * np.einsum("ni,ni->n", sj, s) + s @ b, sj + b

    peer = torch_peer(a.peer_dir, a.callback_steps, chains, step_size, a.seed)
    cb = dlp_mcmc.Model.from_callable(L * L, "spin", f_grad)
    t0 = time.perf_counter()
    dlp_mcmc.sample(cb, "dmala", step_size=step_size, chains=chains, steps=a.callback_steps, seed=a.seed, progress=False)
    cb_t = time.perf_counter() - t0
    builtin_step = statistics.median(py_t) / a.steps
    out = {
        "run": {"model": "ising 5x5 periodic, sigma 0.1, bias 0.2", "sampler": "dmala", "step_size": step_size,
                "chains": chains, "steps": a.steps, "seed": a.seed, "repeats": a.repeats},
        "cli_seconds": cli_t, "python_seconds": py_t,
        "cli_median_s": statistics.median(cli_t), "python_median_s": statistics.median(py_t),
        "python_over_cli": statistics.median(py_t) / statistics.median(cli_t),
        "same_final_states": same,
        "callback": {"steps": a.callback_steps, "seconds": cb_t, "us_per_step": 1e6 * cb_t / a.callback_steps,
                     "builtin_us_per_step": 1e6 * builtin_step},
        "pytorch_reference": peer,
        "cpu_count": os.cpu_count(),
    }
    dest = ROOT / "results" / "python-bench"
    dest.mkdir(parents=True, exist_ok=True)
    tmpf = dest / "summary.json.tmp"
    tmpf.write_text(json.dumps(out, indent=2) + "\n")
    os.replace(tmpf, dest / "summary.json")
    print(f"dlp sample (CLI):   median {out['cli_median_s']:.3f} s  {cli_t}")
    print(f"dlp_mcmc.sample (Python): median {out['python_median_s']:.3f} s  {py_t}")
    print(f"ratio Python / CLI: {out['python_over_cli']:.4f}   identical final states: {same}")
    print(f"numpy callback model: {out['callback']['us_per_step']:.1f} µs per step (32 chains) vs built-in "
          f"{out['callback']['builtin_us_per_step']:.2f} µs")
    if "us_per_step" in peer:
        print(f"official-code PyTorch port (port_dlp.LangevinSampler, mh=True): {peer['us_per_step']:.1f} µs per step")
    else:
        print(f"PyTorch reference not run: {peer['skipped']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
