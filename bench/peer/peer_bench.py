#!/usr/bin/env python3
"""Per-step wall time of the official-algorithm PyTorch DLP samplers (DULA, DMALA,
Gibbs-with-Gradients, bg-1 Gibbs) on the periodic LxL Ising model and a 784x500 RBM.

Writes one JSON object per line (schema in README.md) to stdout or --out; progress
goes to stderr.  Each thread count runs in its own child process so that
torch.set_num_threads and the BLAS/OpenMP thread variables agree.

    python peer_bench.py                 # default sweep, threads 1 and 2 (< 3 min)
    python peer_bench.py --quick         # smoke run (< 30 s)
    python peer_bench.py --upstream-dir DIR [--verify]   # use / check the official files

By default the samplers and models come from port_dlp.py (a marked, faithful port:
the upstream repository has no licence, so it is not vendored).  With
--upstream-dir the classes are imported from a checkout of the official code.
"""
import argparse
import importlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
UPSTREAM_COMMIT = "99c30190f09ff593aaebffdcbabafcfb5a73d34b"
SAMPLERS = ("dula", "dmala", "gwg", "bg-1")
# step sizes of the upstream experiment scripts (ising_sample.py, rbm_sample.py)
STEP_SIZE = {"ising": {"dula": 0.2, "dmala": 0.4}, "rbm": {"dula": 0.1, "dmala": 0.2}}
ISING_BIAS = 0.2          # ising_sample.py default --bias
RBM_SHAPE = (784, 500)
RBM_CHAINS = 100

DEFAULTS = dict(L="5,10,25,50,100", B="1,16,256", threads="1,2", sigmas="0.1,0.25",
                budget=0.05, rbm=True)
QUICK = dict(L="10,50", B="1,256", threads="1,2", sigmas="0.1", budget=0.03, rbm=True)


def ints(s):
    return [int(v) for v in str(s).split(",") if v.strip()]


def floats(s):
    return [float(v) for v in str(s).split(",") if v.strip()]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ------------------------------------------------------------ implementations
def load_port():
    sys.path.insert(0, HERE)
    import port_dlp
    return dict(name="torch-port", Ising=port_dlp.LatticeIsingModel, RBM=port_dlp.BernoulliRBM,
                Langevin=lambda d, ss, mh: port_dlp.LangevinSampler(d, 1, temp=2., step_size=ss, mh=mh),
                GWG=lambda d: port_dlp.DiffSampler(d, 1, temp=2.),
                BG=lambda d: port_dlp.BlockGibbsSampler(d, 1))


def _stub(name, **attrs):
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    mod.__peer_stub__ = True
    sys.modules[name] = mod
    return mod


def load_upstream(d):
    """Import the official classes from a checkout DIR (samplers.py, block_samplers.py,
    utils.py, rbm.py).  Modules those files import only for data loading and plotting
    (torchvision, matplotlib, tqdm) are stubbed when absent; igraph is stubbed with the
    port's lattice when absent (only the adjacency matrix is taken from it)."""
    d = os.path.abspath(d)
    missing = [f for f in ("samplers.py", "block_samplers.py", "utils.py", "rbm.py")
               if not os.path.exists(os.path.join(d, f))]
    if missing:
        sys.exit("upstream dir %s lacks %s" % (d, ", ".join(missing)))
    for name in ("torchvision", "matplotlib", "tqdm", "igraph"):
        try:
            importlib.import_module(name)
        except ImportError:
            if name == "torchvision":
                tv = _stub("torchvision")
                tv.transforms = _stub("torchvision.transforms")
            elif name == "matplotlib":
                mpl = _stub("matplotlib")
                mpl.pyplot = _stub("matplotlib.pyplot")
            elif name == "tqdm":
                _stub("tqdm", tqdm=lambda it, *a, **k: it)
            else:
                sys.path.insert(0, HERE)
                import port_dlp

                class _Adj:
                    def __init__(self, A):
                        self.data = A

                class _Graph:
                    def __init__(self, A):
                        self._A = A

                    @staticmethod
                    def Lattice(dim, circular=True):
                        assert circular and len(set(dim)) == 1
                        return _Graph(port_dlp.torus_adjacency(dim[0], len(dim)))

                    def get_adjacency(self):
                        return _Adj(self._A)
                _stub("igraph", Graph=_Graph)
    sys.path.insert(0, d)
    samplers = importlib.import_module("samplers")
    block_samplers = importlib.import_module("block_samplers")
    rbm = importlib.import_module("rbm")
    return dict(name="torch-upstream", Ising=rbm.LatticeIsingModel, RBM=rbm.BernoulliRBM,
                Langevin=lambda dd, ss, mh: samplers.LangevinSampler(
                    dd, 1, fixed_proposal=False, approx=True, multi_hop=False, temp=2.,
                    step_size=ss, mh=mh),
                GWG=lambda dd: samplers.DiffSampler(dd, 1, fixed_proposal=False, approx=True,
                                                    multi_hop=False, temp=2.),
                BG=lambda dd: block_samplers.BlockGibbsSampler(dd, 1),
                igraph_stub=getattr(sys.modules["igraph"], "__peer_stub__", False))


def make_model(impl, kind, L=None, sigma=None):
    import torch
    if kind == "ising":
        return impl["Ising"](L, sigma, ISING_BIAS)
    m = impl["RBM"](*RBM_SHAPE)
    # random weights exactly as rbm_sample.py does without --data mnist
    m.W.data = torch.randn_like(m.W.data) * (.05 ** .5)
    m.b_v.data = torch.randn_like(m.b_v.data) * 1.0
    m.b_h.data = torch.randn_like(m.b_h.data) * 1.0
    return m


def make_sampler(impl, name, kind, dim):
    if name in ("dula", "dmala"):
        return impl["Langevin"](dim, STEP_SIZE[kind][name], name == "dmala")
    if name == "gwg":
        return impl["GWG"](dim)
    if name == "bg-1":
        return impl["BG"](dim)
    raise ValueError(name)


# --------------------------------------------------------------------- timing
def time_steps(sampler, model, x, budget, slow=0.25):
    """Warm up, calibrate, then time `repeats` runs of n steps.  Returns the per-step
    seconds of each repeat.  A first step slower than `slow` seconds is itself the
    measurement (one cold step: page faults of big temporaries recur every step anyway)."""
    step = lambda x: sampler.step(x.detach(), model).detach()  # as the upstream loop
    t0 = time.perf_counter()
    x = step(x)
    first = time.perf_counter() - t0
    if first >= slow:
        return [first], 1, True
    spent = first
    while spent < budget / 8 and first < budget / 50:  # a few more warm-up steps if cheap
        t0 = time.perf_counter()
        x = step(x)
        first = time.perf_counter() - t0
        spent += first
    repeats = 3 if 3 * first <= budget else 1
    n = max(1, int(budget / (repeats * max(first, 1e-7))))
    per = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            x = step(x)
        per.append((time.perf_counter() - t0) / n)
    return per, n * repeats, False


def child(args):
    import numpy as np
    import torch
    nthr = args.threads_one
    torch.set_num_threads(nthr)
    impl = load_upstream(args.upstream_dir) if args.upstream_dir else load_port()
    if os.environ.get("PEER_BLAS_CORETYPE_AUTO"):
        blas_selfcheck(torch)
    common = dict(impl=impl["name"], threads=nthr, torch=torch.__version__,
                  numpy=np.__version__, blas=blas_name(), python=platform.python_version())
    if hasattr(os, "getloadavg"):
        common["load1_at_start"] = round(os.getloadavg()[0], 2)
    samplers = [s for s in args.samplers.split(",") if s]

    def emit(rec):
        rec.update(common)
        print(json.dumps(rec), flush=True)

    def run(kind, model, dim, B, extra):
        for name in samplers:
            rec = dict(sampler=name, model=kind, **extra, dims=dim, chains=B, validate_args=True)
            for validate in (True, False):
                torch.distributions.Distribution.set_default_validate_args(validate)
                torch.manual_seed(args.seed)
                np.random.seed(args.seed)
                sampler = make_sampler(impl, name, kind, dim)
                x = model.init_dist.sample((B,))
                try:
                    per, steps, cold = time_steps(sampler, model, x, args.budget, args.slow)
                    err = None
                    break
                except Exception as e:  # upstream bg-1 fails at B=1
                    err = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:120])
                    if not (validate and "constraint Simplex" in str(e)):
                        break
                    # torch's default argument check rejects the float32 softmax of a
                    # large OneHotCategorical (sum off by > 1e-6); time it without the check
                    rec.update(validate_args=False, note="torch's default validate_args rejected "
                               "the float32 softmax as not on the simplex; timed with it off")
            torch.distributions.Distribution.set_default_validate_args(True)
            if err:
                rec.update(steps=0, seconds_per_step=None, ns_per_spin_step=None, error=err)
                emit(rec)
                continue
            s = statistics.median(per)
            sites = 1 if name == "bg-1" else dim
            rec.update(steps=steps, repeats=len(per), cold=cold, seconds_per_step=s,
                       seconds_per_step_min=min(per), ns_per_spin_step=s * 1e9 / (B * dim),
                       sites_per_step=sites, ns_per_site_update=s * 1e9 / (B * sites))
            emit(rec)
            log("  %-14s %-5s %-16s B=%-4d thr=%d  %10.3f ms/step  %9.2f ns/spin-step%s" % (
                impl["name"], name, "%s L=%s" % (kind, extra.get("L", "-")) if kind == "ising"
                else "rbm %dx%d" % RBM_SHAPE, B, nthr, s * 1e3, rec["ns_per_spin_step"],
                "" if rec["validate_args"] else "  (validate_args off)"))

    for sigma in floats(args.sigmas):
        for L in ints(args.L):
            torch.manual_seed(args.seed)
            model = make_model(impl, "ising", L=L, sigma=sigma)
            for B in ints(args.B):
                run("ising", model, L * L, B, dict(L=L, sigma=sigma))
            del model
    if args.rbm:
        torch.manual_seed(args.seed)
        model = make_model(impl, "rbm")
        run("rbm", model, RBM_SHAPE[0], RBM_CHAINS, dict(hidden=RBM_SHAPE[1]))


# ----------------------------------------------------------------------- BLAS
def _loaded_blas():
    """(path, core name) of the OpenBLAS this process loaded, or (None, None)."""
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return None, None
    for lib in sorted(libs):
        try:
            fn = ctypes.CDLL(lib).openblas_get_corename
            fn.restype = ctypes.c_char_p
            return lib, fn().decode()
        except (OSError, AttributeError):
            continue
    return None, None


def blas_name():
    import torch
    if torch.backends.mkl.is_available():
        return "mkl"
    lib, core = _loaded_blas()
    if lib:
        variant = os.path.basename(os.path.dirname(lib))  # openblas-openmp / -pthread
        forced = os.environ.get("OPENBLAS_CORETYPE")
        return "%s core=%s%s" % (variant, core, " (OPENBLAS_CORETYPE=%s)" % forced if forced else "")
    m = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    return m.group(1) if m else "unknown"


def blas_selfcheck(torch):
    """With an overridden OpenBLAS core type, make sure sgemm is still right."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(67, 301, generator=g)
    b = torch.randn(301, 129, generator=g)
    ref = (a.double()[:, :, None] * b.double()[None]).sum(1)  # no BLAS involved
    err = ((a @ b).double() - ref).abs().max().item()
    if not err < 1e-3:
        sys.exit("sgemm with OPENBLAS_CORETYPE=%s is wrong (max err %g): rerun with "
                 "--blas-coretype none" % (os.environ.get("OPENBLAS_CORETYPE"), err))


def blas_env(coretype_flag):
    """Environment for the children when torch uses Debian's OpenBLAS (the PyPI build
    uses MKL and needs nothing):
      * prefer the OpenMP build of OpenBLAS (one thread pool shared with torch's
        OpenMP) over the pthread build, which oversubscribes the cores at 2 threads;
      * Debian's OpenBLAS 0.3.21 falls back to its slowest kernels (Prescott) on CPUs
        it does not know; name the best core the CPU supports, checked in each child."""
    if coretype_flag == "none" and os.environ.get("PEER_BLAS_VARIANT") == "system":
        return {}
    probe = ("import sys, json\nsys.path.insert(0, %r)\nimport torch, peer_bench as p\n"
             "print(json.dumps([torch.backends.mkl.is_available()] + list(p._loaded_blas())))"
             % HERE)
    try:
        mkl, lib, core = json.loads(subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True,
            timeout=120).stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, OSError, ValueError, IndexError):
        return {}
    env = {}
    if mkl or not lib:
        return env
    omp_dir = os.path.join(os.path.dirname(os.path.dirname(lib)), "openblas-openmp")
    if ("openblas-openmp" not in lib and os.path.exists(os.path.join(omp_dir, "libblas.so.3"))
            and os.environ.get("PEER_BLAS_VARIANT") != "system"):
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            [omp_dir] + [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p])
    if os.environ.get("OPENBLAS_CORETYPE") or coretype_flag == "none":
        return env
    if coretype_flag != "auto":
        env["OPENBLAS_CORETYPE"] = coretype_flag
    elif core in ("Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom"):
        try:
            flags = set(open("/proc/cpuinfo").read().split())
        except OSError:
            flags = set()
        if {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"} <= flags:
            env["OPENBLAS_CORETYPE"] = "SkylakeX"
        elif {"avx2", "fma"} <= flags:
            env["OPENBLAS_CORETYPE"] = "Haswell"
    if "OPENBLAS_CORETYPE" in env:
        env["PEER_BLAS_CORETYPE_AUTO"] = "1"
    return env


# --------------------------------------------------------------------- verify
def verify(args):
    """Port vs upstream, bit for bit, from the same seed."""
    import numpy as np
    import torch
    torch.set_num_threads(1)
    up, port = load_upstream(args.upstream_dir), load_port()
    ok = True
    if up.get("igraph_stub"):
        log("note: igraph not installed: upstream lattice built by the port's adjacency")
    else:
        for L in (5, 10):
            same = torch.equal(up["Ising"](L, .1, .2).G.float(), port["Ising"](L, .1, .2).G)
            log("adjacency L=%d igraph vs port: %s" % (L, "same" if same else "DIFFERENT"))
            ok &= same

    def trajectory(impl, kind, L, sigma, name, B):
        torch.manual_seed(args.seed)
        np.random.seed(args.seed)
        model = make_model(impl, kind, L=L, sigma=sigma)
        sampler = make_sampler(impl, name, kind, model.data_dim)
        x = model.init_dist.sample((B,))
        try:
            for _ in range(25):
                x = sampler.step(x.detach(), model).detach()
        except Exception as e:
            return "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:80])
        return x, model(x).detach()

    for kind, L, sigma in (("ising", 5, .1), ("ising", 10, .25), ("rbm", None, None)):
        for B in (4, 1):
            for name in SAMPLERS:
                u = trajectory(up, kind, L, sigma, name, B)
                p = trajectory(port, kind, L, sigma, name, B)
                if isinstance(p, str):
                    good, msg = False, "port fails: " + p
                elif isinstance(u, str):
                    good, msg = B == 1, "upstream fails (%s); port runs" % u
                else:
                    good = torch.equal(u[0], p[0]) and torch.equal(u[1], p[1])
                    msg = "identical states and energies" if good else "DIFFERENT"
                ok &= good
                log("%-5s %-6s L=%-4s B=%d: %s" % (name, kind, L, B, msg))
    log("verify: %s" % ("OK" if ok else "FAILED"))
    return 0 if ok else 1


# ----------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke sweep, < 30 s")
    ap.add_argument("--L", help="Ising side lengths (default %s)" % DEFAULTS["L"])
    ap.add_argument("--B", help="numbers of chains (default %s)" % DEFAULTS["B"])
    ap.add_argument("--sigmas", help="Ising couplings sigma (default %s)" % DEFAULTS["sigmas"])
    ap.add_argument("--threads", help="torch.set_num_threads values, one child each "
                    "(default %s)" % DEFAULTS["threads"])
    ap.add_argument("--samplers", default=",".join(SAMPLERS))
    ap.add_argument("--no-rbm", dest="rbm", action="store_false", default=None)
    ap.add_argument("--budget", type=float,
                    help="seconds of timed steps per configuration (default %s)" % DEFAULTS["budget"])
    ap.add_argument("--slow", type=float, default=0.25, help="a first step at least this "
                    "slow (s) is timed alone, without warm-up (default 0.25)")
    ap.add_argument("--seed", type=int, default=1234567)
    ap.add_argument("--upstream-dir", help="checkout of ruqizhang/discrete-langevin to import "
                    "the official classes from (commit %s)" % UPSTREAM_COMMIT[:7])
    ap.add_argument("--verify", action="store_true", help="with --upstream-dir: check the port "
                    "against upstream bit for bit, then exit")
    ap.add_argument("--blas-coretype", default="auto",
                    help="OpenBLAS core override for children: auto (default), none, or a "
                    "name; PEER_BLAS_VARIANT=system keeps the system's OpenBLAS build")
    ap.add_argument("--out", help="write JSON lines here instead of stdout")
    ap.add_argument("--threads-one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    preset = QUICK if args.quick else DEFAULTS
    for k, v in preset.items():
        if getattr(args, k, None) is None:
            setattr(args, k, v)

    if args.verify:
        if not args.upstream_dir:
            sys.exit("--verify needs --upstream-dir")
        sys.exit(verify(args))
    if args.threads_one is not None:
        return child(args)

    benv = blas_env(args.blas_coretype)
    out = open(args.out, "w") if args.out else sys.stdout
    t_start = time.time()
    for n in ints(args.threads):
        env = dict(os.environ, OMP_NUM_THREADS=str(n), MKL_NUM_THREADS=str(n),
                   OPENBLAS_NUM_THREADS=str(n))
        env.update(benv)
        cmd = [sys.executable, os.path.abspath(__file__), "--threads-one", str(n)]
        for k in ("L", "B", "sigmas", "samplers", "budget", "slow", "seed", "upstream_dir"):
            v = getattr(args, k)
            if v is not None:
                cmd += ["--" + k.replace("_", "-"), str(v)]
        if not args.rbm:
            cmd.append("--no-rbm")
        log("== threads=%d%s" % (n, "".join(" %s=%s" % kv for kv in sorted(benv.items())
                                            if kv[0] != "PEER_BLAS_CORETYPE_AUTO")))
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
        for line in p.stdout:
            out.write(line)
            out.flush()
        if p.wait() != 0:
            sys.exit("child for threads=%d failed (exit %d)" % (n, p.returncode))
    log("done in %.1f s" % (time.time() - t_start))


if __name__ == "__main__":
    main()
