"""Binding overhead and per-step cost of user energies (benchmark, not a test).

Two parts, in one run, on one thread each (the BLAS of numpy, torch and XLA, and dlp's
runner; so that the machine's other load touches every row alike):

1. dlp_mcmc.sample against `dlp sample` on the same run: the 5×5 periodic Ising lattice
   (σ = 0.1, bias 0.2: coupling 2σ per pair in the model file), 32 chains, --steps DMALA steps
   at α = 0.4, seed --seed; both sides alternately (the order flipped every repeat), --repeats
   times; the medians and their ratio, the median of the per-pair ratios with a
   distribution-free 95% interval, and whether the final states are identical.
2. Per DMALA step (µs), at each of --chains (default 32 and 1,024): the same Ising lattice
   (α = 0.4) and a 784×500 binary RBM (W ~ N(0, 0.05), biases ~ N(0, 1), drawn from --seed:
   the peer benchmark's random RBM; α = 0.2), each as the package's built-in model, a numpy
   callback (f and ∇f by hand), `Model.from_torch` and `Model.from_jax` (f only, ∇f by
   autograd, float64, the package's default), beside the official DMALA code's PyTorch port
   (bench/peer/port_dlp.py: LangevinSampler(mh=True), temperature 2 as upstream, float32 as
   upstream, its own autograd) on the same energy. A sample() row's time per step is
   (t(2n) − t(n)) / n for runs of n and 2n steps after an untimed run of n steps (JAX
   compiles there, once per padded batch size), so the chains' start and the call's fixed
   costs cancel; n grows until t(n) ≥ --budget seconds. The port's is t(n) / n of its step
   loop.

    python3 python/bench/overhead.py [--quick] [--seed S] [--repeats R] [--dlp PATH] [--out DIR]

A framework that is not importable is reported as not run, with the reason. Writes
DIR/summary.json (everything, with the machine's load and versions), DIR/per_step.csv (tidy:
one row per model, chains, implementation) atomically (default DIR: results/python-bench),
prints progress on stderr and a Markdown table on stdout. No plot: the table is the output.
"""

import os

# One thread for every library, set before numpy, torch or jax load their thread pools.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import csv  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import dlp_mcmc  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
L, SIGMA, BIAS = 5, 0.1, 0.2
RBM_SHAPE = (784, 500)
STEP_SIZE = {"ising": 0.4, "rbm": 0.2}
IMPLS = ["built-in", "numpy callback", "from_torch", "from_jax", "official PyTorch port"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def lattice_model() -> dict:
    return {"schema": "dlp.model.v1", "kind": "ising", "name": "5x5 periodic lattice (benchmark)", "d": L * L,
            "domain": "spin", "lattice": {"shape": [L, L], "periodic": True, "coupling": 2 * SIGMA},
            "b": [BIAS] * (L * L)}


def lattice_J() -> np.ndarray:
    """The lattice's J with f(s) = ½ sᵀJs + b·s: 2σ on each periodic bond, both directions."""
    d = L * L
    J = np.zeros((d, d))
    for r in range(L):
        for c in range(L):
            i = r * L + c
            for j in (((r + 1) % L) * L + c, r * L + (c + 1) % L):
                J[i, j] += 2 * SIGMA
                J[j, i] += 2 * SIGMA
    return J


def rbm_params(seed: int):
    """W (784 × 500), visible bias b, hidden bias c: the peer benchmark's random RBM."""
    rng = np.random.default_rng(seed)
    d, m = RBM_SHAPE
    return rng.normal(0, 0.05 ** 0.5, (d, m)), rng.normal(0, 1, d), rng.normal(0, 1, m)


class Energies:
    """The two energies in each framework, and the port's modules on the same parameters."""

    def __init__(self, seed: int) -> None:
        self.J, self.b = lattice_J(), np.full(L * L, BIAS)
        self.W, self.bv, self.ch = rbm_params(seed)

    # ---- the package's models ---------------------------------------------------------
    def builtin(self, kind: str, path: Path) -> dlp_mcmc.Model:
        if kind == "ising":
            return dlp_mcmc.Model.from_file(path)
        return dlp_mcmc.Model.rbm(self.W, self.bv, self.ch, domain="binary")

    def numpy(self, kind: str) -> dlp_mcmc.Model:
        if kind == "ising":
            J, b = self.J, self.b

            def f_grad(x):
                s = x.astype(np.float64)
                sj = s @ J
                return 0.5 * np.einsum("ni,ni->n", sj, s) + s @ b, sj + b

            return dlp_mcmc.Model.from_callable(L * L, "spin", f_grad)
        W, bv, ch = self.W, self.bv, self.ch

        def f_grad(x):
            v = x.astype(np.float64)
            a = v @ W + ch
            return np.logaddexp(0, a).sum(1) + v @ bv, (1 / (1 + np.exp(-a))) @ W.T + bv

        return dlp_mcmc.Model.from_callable(RBM_SHAPE[0], "binary", f_grad)

    def torch(self, kind: str) -> dlp_mcmc.Model:
        import torch
        if kind == "ising":
            J, b = torch.from_numpy(self.J), torch.from_numpy(self.b)
            return dlp_mcmc.Model.from_torch(lambda s: 0.5 * ((s @ J) * s).sum(-1) + s @ b, L * L, "spin")
        W, bv, ch = (torch.from_numpy(a) for a in (self.W, self.bv, self.ch))
        f = lambda v: torch.nn.functional.softplus(v @ W + ch).sum(-1) + v @ bv  # noqa: E731
        return dlp_mcmc.Model.from_torch(f, RBM_SHAPE[0], "binary")

    def jax(self, kind: str, chains: int) -> dlp_mcmc.Model:
        """`Model.from_jax`'s model (the same callback, built here so that it can be primed):
        from_jax compiles once per padded batch size, a power of two up to `chains`, and a
        sampler meets those sizes at random times (the callback gets the chains that need
        evaluating), so every size is compiled here before any run is timed."""
        import jax
        import jax.numpy as jnp
        from dlp_mcmc.autograd import jax_f_grad
        jax.config.update("jax_enable_x64", True)  # before the arrays: float64 parameters
        if kind == "ising":
            J, b = jnp.asarray(self.J), jnp.asarray(self.b)
            fn, d, domain, state = (lambda s: 0.5 * ((s @ J) * s).sum(-1) + s @ b), L * L, "spin", -1.0
        else:
            W, bv, ch = (jnp.asarray(a) for a in (self.W, self.bv, self.ch))
            fn, d, domain, state = (lambda v: jax.nn.softplus(v @ W + ch).sum(-1) + v @ bv), RBM_SHAPE[0], "binary", 0.0
        f_grad = jax_f_grad(fn, domain, None, None)
        size = 1
        while True:
            f_grad(np.full((size, d), state))
            if size >= chains:
                break
            size *= 2
        return dlp_mcmc.Model.from_callable(d, domain, f_grad)

    # ---- the official code's port -----------------------------------------------------
    def port(self, kind: str, peer_dir: Path):
        import torch
        if not (peer_dir / "port_dlp.py").exists():
            raise ImportError(f"no port_dlp.py in {peer_dir}")
        sys.path.insert(0, str(peer_dir))
        import port_dlp  # the peer's port, found at run time
        if kind == "ising":
            return port_dlp.LatticeIsingModel(L, init_sigma=SIGMA, init_bias=BIAS), L * L
        m = port_dlp.BernoulliRBM(*RBM_SHAPE)
        # nn.Linear's weight is (hidden × visible): W transposed; float32 as upstream.
        m.W.data = torch.from_numpy(self.W.T.astype(np.float32).copy())
        m.b_v.data = torch.from_numpy(self.bv.astype(np.float32))
        m.b_h.data = torch.from_numpy(self.ch.astype(np.float32))
        return m, RBM_SHAPE[0]


def timed(fn, *args, **kwargs) -> float:
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


def per_step_sample(model, kind: str, chains: int, budget: float, seed: int, max_steps: int) -> dict:
    """(t(2n) − t(n)) / n of dlp_mcmc.sample runs (fixed costs cancel), n grown to the budget."""
    def run(n):
        dlp_mcmc.sample(model, "dmala", step_size=STEP_SIZE[kind], chains=chains, steps=n, seed=seed, threads=1,
                        progress=False)

    run(2)
    n = 2
    while True:
        t1 = timed(run, n)
        if t1 >= budget or n >= max_steps:
            break
        n = min(max_steps, max(2 * n, int(1.2 * n * budget / max(t1, 1e-9))))
    # One more untimed run of n steps before the two timed ones: a from_jax energy compiles once
    # per padded batch size (powers of two up to the chains), and the sizes a run meets grow
    # with its length, so a t(n) straight after the 2-step warm-up carried compilations that
    # t(2n) did not (the 1,024-chain Ising row was refused twice for t(2n) ≤ t(n)).
    run(n)
    t1 = timed(run, n)
    t2 = timed(run, 2 * n)
    if t2 <= t1:
        # Noise, or a first run with costs the second had not (JAX compiling for batch sizes it
        # had not met: a callback is called with the chains that need evaluating, so sizes vary).
        return {"not_run": f"t(2n) = {t2:.4f} s <= t(n) = {t1:.4f} s at n = {n} (noise, or first-run costs)"}
    return {"us_per_step": 1e6 * (t2 - t1) / n, "steps": n, "t_n": t1, "t_2n": t2}


def port_runner(energies: Energies, kind: str, chains: int, seed: int, peer_dir: Path):
    """A function running n DMALA steps of the port on its model of `kind` (chains kept)."""
    import torch
    torch.manual_seed(seed)
    model, d = energies.port(kind, peer_dir)
    import port_dlp
    sampler = port_dlp.LangevinSampler(d, 1, temp=2.0, step_size=STEP_SIZE[kind], mh=True)
    state = {"x": (torch.rand(chains, d) < 0.5).float()}

    def run(n):
        x = state["x"]
        for _ in range(n):
            x = sampler.step(x.detach(), model).detach()
        state["x"] = x

    return run


def per_step_loop(run, budget: float, max_steps: int) -> dict:
    """t(n) / n of `run(n)` (no fixed costs inside it) after a 2-step warm-up, n grown to the budget."""
    run(2)
    n = 2
    while True:
        t = timed(run, n)
        if t >= budget or n >= max_steps:
            return {"us_per_step": 1e6 * t / n, "steps": n, "t_n": t}
        n = min(max_steps, max(2 * n, int(1.2 * n * budget / max(t, 1e-9))))


def cli_vs_python(exe: str, path: Path, tmp: Path, steps: int, repeats: int, seed: int) -> dict:
    chains, step_size = 32, STEP_SIZE["ising"]
    model = dlp_mcmc.Model.from_file(path)
    cli_args = [exe, "sample", "--model", str(path), "--sampler", "dmala", "--step-size", str(step_size),
                "--chains", str(chains), "--steps", str(steps), "--seed", str(seed), "--quiet", "--threads", "1",
                "--out", str(tmp / "final.csv")]
    cli_t, py_t = [], []
    run = None

    def package() -> float:
        nonlocal run
        t0 = time.perf_counter()
        run = dlp_mcmc.sample(model, "dmala", step_size=step_size, chains=chains, steps=steps, seed=seed, threads=1,
                              progress=False)
        return time.perf_counter() - t0

    for r in range(repeats):
        log(f"CLI vs package: repeat {r + 1}/{repeats}")
        # Pairs in turn, the order flipped every repeat, so neither side always runs first.
        if r % 2 == 0:
            cli_t.append(timed(subprocess.run, cli_args, check=True))
            py_t.append(package())
        else:
            py_t.append(package())
            cli_t.append(timed(subprocess.run, cli_args, check=True))
    rows = [ln for ln in (tmp / "final.csv").read_text().splitlines() if ln and not ln.startswith("#")][1:]
    cli_final = np.array([[int(v) for v in ln.split(",")] for ln in rows], dtype=np.int64)
    same = bool(cli_final.shape == run.final.shape and np.array_equal(cli_final, run.final))
    return {"model": "ising 5x5 periodic, sigma 0.1, bias 0.2", "sampler": "dmala", "step_size": step_size,
            "chains": chains, "steps": steps, "threads": 1, "repeats": repeats,
            "cli_seconds": cli_t, "python_seconds": py_t, "cli_median_s": statistics.median(cli_t),
            "python_median_s": statistics.median(py_t),
            "python_over_cli": statistics.median(py_t) / statistics.median(cli_t), "same_final_states": same,
            **paired_ratio([p / c for p, c in zip(py_t, cli_t)])}


def paired_ratio(ratios: list) -> dict:
    """The median of the per-pair ratios package / CLI (pairing cancels the machine's drift
    between repeats) and a distribution-free 95% interval for it: the order statistics
    r_(k), r_(n+1-k) with k the largest such that P(Binomial(n, 1/2) < k) <= 0.025 (none below
    6 pairs)."""
    r, n = sorted(ratios), len(ratios)
    k = 0
    while sum(math.comb(n, i) for i in range(k + 1)) / 2**n <= 0.025:
        k += 1
    out = {"paired_ratio_median": statistics.median(r), "pairs": n}
    if k >= 1:
        out["paired_ratio_ci95"] = [r[k - 1], r[n - k]]
    return out


def versions() -> dict:
    out = {"python": platform.python_version(), "numpy": np.__version__, "dlp_mcmc": dlp_mcmc.__version__}
    for name in ("torch", "jax", "jaxlib"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = None
    return out


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def fmt(row: dict) -> str:
    return f"{row['us_per_step']:,.1f}" if "us_per_step" in row else "not run"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="seconds: 2,000 CLI steps, 1 repeat, 32 chains, a 0.02 s budget per row")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=50_000, help="steps of the CLI-vs-package run")
    ap.add_argument("--chains", default="32,1024", help="chain counts of the per-step table")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of the shorter timed run of each row")
    ap.add_argument("--max-steps", type=int, default=100_000, help="most steps of one timed run")
    ap.add_argument("--dlp", help="the dlp binary (default: target/release/dlp, built if absent)")
    ap.add_argument("--no-cli", action="store_true", help="skip part 1 (needs no dlp binary)")
    ap.add_argument("--peer-dir", type=Path, default=ROOT / "bench" / "peer",
                    help="directory of port_dlp.py, the official code's PyTorch port (needs torch)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "python-bench")
    a = ap.parse_args()
    if a.quick:
        a.steps, a.repeats, a.chains, a.budget, a.max_steps = 2_000, 1, "32", 0.02, 200
    try:
        chain_counts = [int(c) for c in a.chains.split(",")]
    except ValueError:
        print(f"error: --chains must be integers separated by commas, got {a.chains!r}", file=sys.stderr)
        return 2
    exe = a.dlp or str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "dlp")
    if not a.dlp and not a.no_cli:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "dlp-cli", "--bin", "dlp"], cwd=ROOT, check=True)
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass
    load_start = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    energies = Energies(a.seed)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = tmp / "ising-5x5.json"
        path.write_text(json.dumps(lattice_model()))
        cli = None if a.no_cli else cli_vs_python(exe, path, tmp, a.steps, a.repeats, a.seed)
        for kind in ("ising", "rbm"):
            for chains in chain_counts:
                for impl in IMPLS:
                    log(f"per step: {kind}, {chains} chains, {impl}")
                    try:
                        if impl == "official PyTorch port":
                            r = per_step_loop(port_runner(energies, kind, chains, a.seed, a.peer_dir), a.budget,
                                              a.max_steps)
                        else:
                            model = {"built-in": lambda: energies.builtin(kind, path),
                                     "numpy callback": lambda: energies.numpy(kind),
                                     "from_torch": lambda: energies.torch(kind),
                                     "from_jax": lambda: energies.jax(kind, chains)}[impl]()
                            r = per_step_sample(model, kind, chains, a.budget, a.seed, a.max_steps)
                    except ImportError as e:
                        r = {"not_run": f"not importable: {e}"}
                    rows.append({"model": kind, "chains": chains, "implementation": impl, **r})
    out = {
        "cli_vs_python": cli,
        "per_step": rows,
        "per_step_method": "sample(): (t(2n) - t(n)) / n after an untimed run of n steps; port: t(n) / n of its step loop",
        "machine": {"cpu_count": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                    "load_average_start": load_start, "load_average_end": os.getloadavg(), "threads": 1},
        "versions": versions(),
        "commit": git_commit(),
        "started_utc": started,
        "seed": a.seed,
        "quick": a.quick,
    }
    a.out.mkdir(parents=True, exist_ok=True)
    write_atomic(a.out / "summary.json", json.dumps(out, indent=2) + "\n")
    fields = ["model", "chains", "implementation", "us_per_step", "steps", "not_run"]
    with tempfile.NamedTemporaryFile("w", dir=a.out, delete=False, newline="", suffix=".tmp") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    os.replace(f.name, a.out / "per_step.csv")
    if cli is None:
        print("CLI vs package: not run (--no-cli)")
    else:
        print(f"dlp sample (CLI): median {cli['cli_median_s']:.3f} s; dlp_mcmc.sample: median "
              f"{cli['python_median_s']:.3f} s; package / CLI = {cli['python_over_cli']:.3f}; identical final "
              f"states: {cli['same_final_states']}")
        ci = cli.get("paired_ratio_ci95")
        print(f"paired package / CLI over {cli['pairs']} pairs: median {cli['paired_ratio_median']:.3f}"
              + (f", 95% interval [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else " (no interval below 6 pairs)"))
    print()
    print("| model | chains | " + " | ".join(IMPLS) + " |")
    print("|---|---:|" + "---:|" * len(IMPLS))
    for kind in ("ising", "rbm"):
        for chains in chain_counts:
            cells = [fmt(r) for impl in IMPLS for r in rows
                     if (r["model"], r["chains"], r["implementation"]) == (kind, chains, impl)]
            name = "Ising 5×5" if kind == "ising" else "RBM 784×500"
            print(f"| {name} | {chains:,} | " + " | ".join(cells) + " |")
    for r in rows:
        if "not_run" in r:
            print(f"not run: {r['model']}, {r['chains']} chains, {r['implementation']}: {r['not_run']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
