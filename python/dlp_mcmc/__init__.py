"""dlp_mcmc (distribution `dlp-mcmc`): gradient-based discrete samplers (the DLP family and the rest of dlp's registry),
discrete goodness-of-fit tests and exact checks, on numpy arrays, with a Rust core.

>>> import dlp_mcmc
>>> model = dlp_mcmc.Model.ising(J=[[0, .5], [.5, 0]], b=[.1, -.2])
>>> run = dlp_mcmc.sample(model, "dmala", step_size=0.4, chains=8, steps=100, seed=1)
>>> run.final.shape
(8, 2)

The Rust crates do the work and check every value (one layer: the checks and one-line
messages of the ``dlp`` command, raised as ``ValueError``; a wrong type is a ``TypeError``);
this module converts arrays and wraps results in typed classes holding numpy arrays
(:class:`Sample`, :class:`Exact`, :class:`LogZ`, :class:`gof.GofResult`). Nothing crosses the
boundary as JSON text.
"""

from __future__ import annotations

import json
import os
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

import numpy as np

from . import _dlp
from . import gof

__all__ = ["Model", "Sample", "SamplingInterrupted", "sample", "exact", "Exact", "logz", "LogZ", "samplers", "sampler_options", "gof",
           "__version__"]
__version__: str = _dlp.__version__


def _int_array(x: Any, name: str, ndim: int = 2) -> np.ndarray:
    """``x`` as a C-contiguous int64 array of ``ndim`` dimensions (integers or bools only)."""
    a = np.asarray(x)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
        raise TypeError(f"{name} must be an array of integers (model values), got dtype {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {a.shape}")
    return np.ascontiguousarray(a, dtype=np.int64)


class Model:
    """A discrete distribution π(x) ∝ exp f(x) that the samplers and tests take.

    Build one from a model file (:meth:`from_file`), from arrays (:meth:`ising`, :meth:`potts`,
    :meth:`rbm`, :meth:`categorical`, :meth:`table`, :meth:`logistic`, :meth:`bnn`) or from your own batched
    energy (:meth:`from_callable`).
    """

    __slots__ = ("_inner",)

    def __init__(self, inner: "_dlp.Model") -> None:
        self._inner = inner

    # ---- constructors -------------------------------------------------------------------
    @staticmethod
    def from_file(path: Union[str, os.PathLike]) -> "Model":
        """Loads a ``dlp.model.v1`` file (JSON or TOML; every kind ``dlp sample`` reads)."""
        return Model(_dlp.Model.from_file(path))

    @staticmethod
    def from_dict(spec: dict, name: str = "<dict>") -> "Model":
        """A model from the keys of a model file (``kind``, ``d``, …; ``schema`` optional)."""
        spec = dict(spec)
        spec.setdefault("schema", "dlp.model.v1")
        return Model(_dlp.Model.from_json(json.dumps(spec), name))

    @staticmethod
    def ising(J: Any, b: Any = None, domain: str = "spin") -> "Model":
        """f(x) = Σ_{i<j} J_ij x_i x_j + Σ b_i x_i; ``J`` symmetric d × d (zero diagonal)."""
        return Model(_dlp.ising(J, b, domain))

    @staticmethod
    def potts(J: Any, h: Any) -> "Model":
        """Potts model: couplings ``J`` (d × d, pairs counted once) and fields ``h`` (d × K)."""
        return Model(_dlp.potts(J, h))

    @staticmethod
    def rbm(W: Any, b: Any, c: Any, domain: str = "binary") -> "Model":
        """RBM marginal over the visible units: ``W`` (d × M), visible bias ``b``, hidden ``c``."""
        return Model(_dlp.rbm(W, b, c, domain))

    @staticmethod
    def categorical(probs: Any = None, logits: Any = None) -> "Model":
        """Independent coordinates with ``probs`` or ``logits`` (d × K)."""
        return Model(_dlp.categorical(probs, logits))

    @staticmethod
    def table(log_prob: Any, d: int, domain: str = "binary", K: Optional[int] = None) -> "Model":
        """Explicit ``log_prob`` of all K^d states (first coordinate most significant)."""
        return Model(_dlp.table(log_prob, d, domain, K))

    @staticmethod
    def logistic(X: Any, y: Any, b: Any = None, domain: str = "spin", scaling: str = "sum",
                 c: Optional[float] = None) -> "Model":
        """Logistic-regression data model: features ``X`` (N × d), labels ``y`` in {0, 1},
        field ``b``; minibatch gradients scaled N/B (``scaling="sum"``) or c/B
        (``scaling="mean_times"`` with ``c``)."""
        return Model(_dlp.logistic(X, y, b, domain, scaling, c))

    @staticmethod
    def bnn(x: Any, y: Any, hidden: int, tau: float = 100.0) -> "Model":
        """Binary Bayesian neural network data model (kind ``bnn``): features ``x`` (N × p),
        targets ``y`` (N), ``hidden`` units, prior temperature ``tau``; d = (p + 2)·hidden + 1."""
        return Model(_dlp.bnn(x, y, hidden, tau))

    @staticmethod
    def from_callable(d: int, domain: str, log_density_grad: Callable[[np.ndarray], Any],
                      k: Optional[int] = None) -> "Model":
        """A model given by your own batched energy.

        ``log_density_grad(x)`` receives the whole batch of states, an ``(n, d)`` int64 array
        of model values (−1/+1 for ``"spin"``, 0/1 for ``"binary"``, 0..k−1 for
        ``"categorical"``) and returns ``(f, grad)``: f of shape ``(n,)`` and ∇f with respect to
        those values, shape ``(n, d)``, or ``(n, d, k)`` (with respect to the one-hot encoding)
        for ``"categorical"``. Samplers call it once per step for all chains, so a PyTorch or
        JAX energy runs batched::

            net = torch.nn.Linear(d, 1)           # any differentiable energy
            def f_grad(x):
                t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
                f = net(t).sum(-1)
                (g,) = torch.autograd.grad(f.sum(), t)
                return f.detach().numpy(), g.numpy()
            model = dlp_mcmc.Model.from_callable(d, "spin", f_grad)

        The sampler runs on one thread for a callback model. An exception in the callback, or
        a result of the wrong shape, stops the run and raises ``ValueError``.
        """
        if not callable(log_density_grad):
            raise TypeError(f"log_density_grad must be callable, got {type(log_density_grad).__name__}")

        def call(x: np.ndarray):
            out = log_density_grad(x)
            if not (isinstance(out, tuple) and len(out) == 2):
                raise ValueError(f"must return a pair (f, grad), got {type(out).__name__}")
            f, g = out
            return (np.ascontiguousarray(f, dtype=np.float64), np.ascontiguousarray(g, dtype=np.float64))

        return Model(_dlp.Model.from_callable(int(d), domain, call, k))

    @staticmethod
    def from_torch(fn: Callable[[Any], Any], d: int, domain: str, *, k: Optional[int] = None, dtype: Any = None,
                   device: Any = None) -> "Model":
        """A model given by a PyTorch energy ``fn`` (a batch of states → f, one per row); ∇f
        by autograd (see :mod:`dlp_mcmc.autograd`). ``dtype`` defaults to ``torch.float64``.
        Needs torch (``pip install 'dlp-mcmc[torch]'``).

        Devices: each sampler step makes the batch with ``torch.as_tensor(..., dtype,
        device=device)`` on ``device`` (default ``torch.device("cpu")``; nothing is inferred
        from ``fn`` or its tensors), runs ``fn`` and the backward pass there, and copies f
        (n) and ∇f (n × d, or n × d × k) back to the host as float64 (``.to("cpu")``, which
        waits for the device). So with ``device="cuda"`` (or ``"cuda:1"``) every step copies
        the batch to the GPU and the results back, one round trip per step, while the
        samplers, their random numbers and the chains stay on the CPU; results then equal a
        CPU run's up to the GPU's rounding, not bit for bit (the chains of a seed may differ).
        Tensors ``fn`` holds (weights) must be on ``device`` too: a mismatch fails at the first
        evaluation with ``ValueError`` carrying torch's device error. A CUDA tensor is never
        handed to ``fn`` unless ``device`` says so. Not run on a GPU (none in CI or on the
        development machine): the placement path is tested with torch's data-less ``"meta"``
        device standing in for one."""
        from .autograd import torch_f_grad
        return Model.from_callable(d, domain, torch_f_grad(fn, domain, k, dtype, device), k=k)

    @staticmethod
    def from_jax(fn: Callable[[Any], Any], d: int, domain: str, *, k: Optional[int] = None,
                 dtype: Any = None) -> "Model":
        """A model given by a JAX energy ``fn`` (a batch of states → f, one per row); ∇f by
        ``jax.value_and_grad``, jit-compiled (see :mod:`dlp_mcmc.autograd`). ``dtype`` defaults
        to float64, which turns on JAX's 64-bit mode. Needs jax (``pip install
        'dlp-mcmc[jax]'``).

        Devices: there is no ``device`` argument. Each step makes the batch with
        ``jnp.asarray``, which puts it on JAX's default device (``jax.devices()[0]``, or the
        one set by ``jax.default_device``); the jitted f and ∇f run where that array is, and
        ``np.asarray`` copies them back to the host. With a CUDA build of jaxlib that sees a
        GPU, that default is the GPU: every step then copies the batch there and f, ∇f back,
        while the samplers and chains stay on the CPU (results equal a CPU run's up to the
        GPU's rounding). Not run on a GPU (none in CI or on the development machine; the
        ``[jax]`` extra installs the CPU build): unverified there."""
        from .autograd import jax_f_grad
        return Model.from_callable(d, domain, jax_f_grad(fn, domain, k, dtype), k=k)

    # ---- properties ---------------------------------------------------------------------
    @property
    def d(self) -> int:
        """Number of coordinates."""
        return self._inner.d

    @property
    def domain(self) -> str:
        """``spin``, ``binary``, ``categorical`` or ``ordinal``."""
        return self._inner.domain

    @property
    def values(self) -> list:
        """The values one coordinate takes."""
        return self._inner.values

    @property
    def kind(self) -> str:
        """The model kind (``ising``, …, ``callable``)."""
        return self._inner.kind

    def to_json(self) -> str:
        """The model as ``dlp.model.v1`` JSON text (models of a registered kind only)."""
        return self._inner.to_json()

    def log_density(self, x: Any) -> np.ndarray:
        """f of each row of ``x`` (n × d model values), up to the normalising constant."""
        return self._inner.log_density(_states(x, self.d))

    def log_density_grad(self, x: Any):
        """(f, ∇f) of each row of ``x``, ∇f in the samplers' coordinates (the bit x ∈ {0,1}
        for binary and spin models, the one-hot matrix for categorical ones)."""
        return self._inner.log_density_grad(_states(x, self.d))

    def __repr__(self) -> str:
        return repr(self._inner)


def _states(x: Any, d: int) -> np.ndarray:
    a = _int_array(x, "x", ndim=np.ndim(x) if np.ndim(x) in (1, 2) else 2)
    return a.reshape(1, -1) if a.ndim == 1 else a


def _model(model: Any) -> "_dlp.Model":
    if not isinstance(model, Model):
        raise TypeError(f"model must be a dlp_mcmc.Model, got {type(model).__name__}")
    return model._inner


def _quote(s: str) -> str:
    """``s`` in double quotes with control characters escaped: a value the user typed may
    hold a line break or a terminal escape, and a message is one plain line."""
    q = json.dumps(s, ensure_ascii=False)
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cc" else c for c in q)


def samplers() -> list:
    """Every registered sampler name form (``dlp samplers``; ``<k>`` stands for an integer)."""
    return [form for entry in _dlp.sampler_names() for form in entry.split(" | ")]


def sampler_options(sampler: str) -> Optional[dict]:
    """The options ``sampler`` takes in :func:`sample`'s ``**options``, as {keyword: required}
    (the registry's parameters; ``target_accept`` goes with ``step_size``); None for an
    unknown name."""
    params = _dlp.sampler_params(sampler)
    if params is None:
        return None
    out = dict(params)
    if "step_size" in out:
        out["target_accept"] = False
    return out


@dataclass(frozen=True)
class Sample:
    """The result of :func:`sample`: arrays per chain, the trace when kept, and what ran.

    ``final`` (chains × d model values), ``trace`` (kept steps × chains × d, or None),
    ``trace_steps`` (the step number of each kept slice), ``accept_rate`` (per chain, fraction
    of steps accepted), ``accept_prob`` (per chain, mean acceptance probability), ``changed``
    (per chain, mean coordinates changed per step), ``sampler`` (its name), ``step_size`` and
    ``step_size_min`` (as used, adapted or given), ``warmup_steps`` (run by the adaptation
    before the recorded steps), ``ladder`` (parallel tempering's inverse temperatures, as given or
    adapted; None for other samplers, and when the default 1, ½, ¼, … ran unadapted: a
    one-window warm-up spends its window on the inner step size), ``steps`` (the steps after
    the warm-up that every chain ran: all of them, unless ``interrupted``, the result of an
    interrupted run, :class:`SamplingInterrupted`). With the trace, each kept step's records per chain (kept steps
    × chains): ``step_accepted``, ``step_accept_prob``, ``step_changed``.
    :meth:`to_arviz` gives ArviZ's DataTree.
    """

    final: np.ndarray
    trace: Optional[np.ndarray]
    trace_steps: Optional[np.ndarray]
    accept_rate: np.ndarray
    accept_prob: np.ndarray
    changed: np.ndarray
    sampler: str
    step_size: Optional[float]
    step_size_min: Optional[float]
    warmup_steps: int
    ladder: Optional[list] = None
    steps: int = 0
    interrupted: bool = False
    step_accepted: Optional[np.ndarray] = None
    step_accept_prob: Optional[np.ndarray] = None
    step_changed: Optional[np.ndarray] = None
    model: Optional["Model"] = field(default=None, repr=False, compare=False)

    def to_arviz(self, statistics: Optional[dict] = None, *, states: bool = True) -> Any:
        """The trace as ArviZ (≥ 1.0) data: an ``xarray.DataTree`` with groups

        * ``posterior``: ``x`` (chain, draw, coordinate), the states (model values), unless
          ``states=False``, and each of ``statistics`` ({name: function of an (n × d) array of
          states giving n numbers}) as (chain, draw);
        * ``sample_stats``: ``acceptance_rate`` (the step's acceptance probability),
          ``accepted``, ``changed`` (coordinates changed) and ``lp`` (f of the state, up to
          the normalising constant), each (chain, draw);

        with the kept step numbers as the ``draw`` coordinate. ``arviz.summary``, ``ess``,
        ``rhat`` and the plots take it. Needs ``trace=True`` and ArviZ (``pip install
        'dlp-mcmc[arviz]'``)."""
        try:
            from arviz_base import from_dict
        except ImportError as e:
            raise ImportError("to_arviz needs ArviZ >= 1.0: pip install 'dlp-mcmc[arviz]'") from e
        if self.trace is None:
            raise ValueError("to_arviz needs the trace: call dlp_mcmc.sample(..., trace=True)")
        kept, chains, d = self.trace.shape
        posterior: dict = {}
        dims: dict = {}
        if states:
            posterior["x"] = self.trace.transpose(1, 0, 2)
            dims["x"] = ["coordinate"]
        for name, statistic in (statistics or {}).items():
            posterior[name] = self._draws(statistic)
        stats = {"acceptance_rate": self.step_accept_prob.T, "accepted": self.step_accepted.T,
                 "changed": self.step_changed.T}
        if self.model is not None:
            stats["lp"] = self.model.log_density(self.trace.reshape(kept * chains, d)).reshape(kept, chains).T
        coords = {"coordinate": np.arange(d), "draw": self.trace_steps}
        attrs = {"sampler": self.sampler, "step_size": self.step_size, "inference_library": "dlp-mcmc",
                 "inference_library_version": __version__}
        return from_dict({"posterior": posterior, "sample_stats": stats}, dims=dims, coords=coords,
                         attrs={"posterior": attrs, "sample_stats": attrs})

    def _draws(self, statistic: Callable[[np.ndarray], Any]) -> np.ndarray:
        if self.trace is None:
            raise ValueError("ess and rhat need the trace: call dlp_mcmc.sample(..., trace=True)")
        kept, chains, d = self.trace.shape
        s = np.asarray(statistic(self.trace.reshape(kept * chains, d)), dtype=np.float64)
        if s.shape != (kept * chains,):
            raise ValueError(f"statistic must return one number per state, shape ({kept * chains},), got {s.shape}")
        return np.ascontiguousarray(s.reshape(kept, chains).T)

    def ess(self, statistic: Callable[[np.ndarray], Any]) -> float:
        """Bulk ESS (rank-normalised, split chains) of ``statistic`` over the trace.
        ``statistic`` maps an (n × d) array of states to n numbers."""
        return _dlp.ess_bulk(self._draws(statistic))

    def rhat(self, statistic: Callable[[np.ndarray], Any]) -> float:
        """Rank-normalised split R-hat of ``statistic`` over the trace (needs ≥ 2 chains)."""
        return _dlp.rhat(self._draws(statistic))

    def __repr__(self) -> str:
        return (f"Sample(sampler={self.sampler!r}, chains={self.final.shape[0]}, d={self.final.shape[1]}, "
                f"mean accept={float(np.mean(self.accept_rate)):.3f})")


def sample(model: Model, sampler: str = "dmala", *, chains: int = 100, steps: int = 2000, burn_in: int = 0,
           thin: int = 1, seed: int = 0, threads: Optional[int] = None, init: Union[str, Any] = "random",
           trace: bool = False, progress: bool = True, **options: Any) -> Sample:
    """Runs ``chains`` chains of ``sampler`` (any name of :func:`samplers`) for ``steps`` steps.

    Run settings are keyword-only: ``init`` is ``"random"`` (uniform, from ``seed``, as ``dlp
    sample``), ``"zeros"`` (first value of every coordinate) or a chains × d array of model
    values; with ``trace=True`` the states after step ``burn_in`` are kept every ``thin``
    steps; the same seed gives the same arrays for any ``threads`` (None = one per core).

    Ctrl-C stops the run at the end of its current step and raises :class:`SamplingInterrupted`
    (a ``KeyboardInterrupt``) whose ``partial`` is the :class:`Sample` of the steps every chain
    completed (``interrupted=True``, ``steps`` of them after the warm-up): the same arrays as
    an uninterrupted run of that many steps with the same seed, since chains that were behind
    are first brought to the step of the furthest one. Ctrl-C during the step-size warm-up
    leaves ``partial`` None (nothing is kept before the warm-up ends).

    ``**options`` are the sampler's own parameters, checked against the registry's (see
    :func:`sampler_options`): ``step_size`` (α; ``"auto"`` adapts it over ``burn_in``
    warm-up steps, half of ``steps`` when 0, toward ``target_accept``, as ``dlp sample
    --step-size auto``; not given to a sampler that adapts: adapted too, as ``dlp sample``;
    None: no step size), ``step_size_min`` (acs-* samplers), ``preconditioner`` (pdula/pdmala),
    ``batch_size`` (sg-* samplers on data models) and ``ladder`` (``pt-<K>:<inner>``: K inverse
    temperatures from 1 down; adapted toward equal swap rates when the warm-up runs and none is
    given). ``Sample.step_size`` is the α used.
    ``progress`` (default True) shows a tqdm bar of the chain-steps run (``tqdm.auto``: a
    widget in notebooks, text on stderr elsewhere; it appears after half a second), updated
    from the Rust side at most 20 times a second; ``progress=False`` turns it off.
    """
    inner = _model(model)
    if not isinstance(sampler, str):
        raise TypeError(f"sampler must be a str, got {type(sampler).__name__}")
    init_array = None
    random_init = True
    if isinstance(init, str):
        if init not in ("random", "zeros"):
            raise ValueError(f"init must be \"random\", \"zeros\" or an array, got {_quote(init)}")
        random_init = init == "random"
    else:
        init_array = _int_array(init, "init")
    bar = _progress_bar(chains, steps, sampler) if progress else None
    try:
        raw = _dlp.sample(inner, sampler, chains=chains, steps=steps, burn_in=burn_in, thin=thin, seed=seed,
                          threads=threads, init=init_array, random_init=random_init, keep_trace=bool(trace),
                          progress=None if bar is None else bar.to, options=options)
    finally:
        if bar is not None:
            bar.close()
    interrupt = raw.pop("interrupt", None)
    message = raw.pop("interrupt_message", None)
    result = Sample(**raw, model=model) if raw else None
    if interrupt is not None:
        raise SamplingInterrupted(message, result) from interrupt
    return result


class SamplingInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`sample` (a ``KeyboardInterrupt``, so ``except KeyboardInterrupt``
    still catches it). ``partial``: the :class:`Sample` of the steps every chain completed
    (``partial.interrupted`` is True, ``partial.steps`` says how many after the warm-up), or
    None when the interrupt came during the step-size warm-up."""

    def __init__(self, message: str, partial: Optional["Sample"]) -> None:
        super().__init__(message)
        self.partial = partial


class _Bar:
    """A tqdm bar that the Rust side moves to the chain-steps run so far (``to``)."""

    def __init__(self, total: Optional[int], desc: str) -> None:
        from tqdm.auto import tqdm
        self._bar = tqdm(total=total, desc=desc, unit="chain-step", unit_scale=True, delay=0.5)

    def to(self, done: int) -> None:
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        self._bar.close()


def _progress_bar(chains: Any, steps: Any, sampler: str) -> "_Bar":
    """The bar of a run (its total when the counts are integers; they are checked in Rust)."""
    ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (chains, steps))
    return _Bar(int(chains) * int(steps) if ints else None, f"{sampler} ×{chains}")


@dataclass(frozen=True)
class Exact:
    """``dlp exact``'s report (the fields of ``dlp.exact.report.v2``) with numpy arrays.

    ``states`` (n_states × d model values, enumeration order), ``target`` π over them, the
    chain's class structure (``irreducible``, ``aperiodic``, ``verdict``, ``closed_classes``),
    ``stationary`` (the sampler's law when it is unique, else None) and ``total_variation``
    (TV to π, else None), ``uniform_start_limit`` (for a chain without a unique law: the limit
    from a uniform start), ``mixing`` (spectral gap, SLEM, …) and ``report`` (every field).
    """

    sampler: str
    states: np.ndarray
    target: np.ndarray
    irreducible: bool
    aperiodic: bool
    verdict: str
    closed_classes: list
    stationary: Optional[np.ndarray]
    total_variation: Optional[float]
    uniform_start_limit: Optional[np.ndarray]
    mixing: Optional[dict]
    report: dict = field(repr=False)

    @staticmethod
    def _from_report(r: dict) -> "Exact":
        erg = r["ergodicity"]
        arr = lambda k: None if r.get(k) is None else np.asarray(r[k], dtype=np.float64)  # noqa: E731
        return Exact(sampler=r["sampler"], states=np.asarray(r["states"], dtype=np.int64), target=arr("target"),
                     irreducible=bool(erg["irreducible"]), aperiodic=bool(erg["aperiodic"]),
                     verdict=str(erg["verdict"]), closed_classes=list(erg["closed_classes"]),
                     stationary=arr("stationary"), total_variation=r.get("total_variation"),
                     uniform_start_limit=arr("uniform_start_limit"), mixing=r.get("mixing"), report=r)

    def marginals(self, law: str = "stationary") -> dict:
        """P(x_i = v) for every coordinate i and value v, as {v: array of d} under ``law``
        (``"stationary"`` or ``"target"``)."""
        if law not in ("stationary", "target"):
            raise ValueError(f"law must be \"stationary\" or \"target\", got {_quote(str(law))}")
        p = self.stationary if law == "stationary" else self.target
        if p is None:
            raise ValueError(f"{self.sampler} has no unique stationary law here: {self.verdict}")
        s = self.states
        return {int(v): (p[:, None] * (s == v)).sum(axis=0) for v in np.unique(s)}


def exact(model: Model, sampler: str, *, step_size: Optional[float] = None,
          preconditioner: Optional[Any] = None) -> Exact:
    """The sampler's exact stationary law on a small model, beside the target (``dlp exact``)."""
    pre = None if preconditioner is None else np.asarray(preconditioner, dtype=np.float64).tolist()
    r = _dlp.exact(_model(model), sampler, None if step_size is None else float(step_size), pre)
    r["schema"] = "dlp.exact.report.v2"
    return Exact._from_report(r)


@dataclass(frozen=True)
class LogZ:
    """The result of :func:`logz`: ``log_z``, its ``std_err`` (0 for exact), ``method``;
    for exact ``n_states``; for AIS ``chains``, ``temperatures``, ``sampler``, ``seed``,
    ``ess`` (of the weights), ``mean_accept`` and ``log_weights`` (one per chain)."""

    method: str
    log_z: float
    std_err: float
    n_states: Optional[int] = None
    chains: Optional[int] = None
    temperatures: Optional[int] = None
    sampler: Optional[str] = None
    seed: Optional[int] = None
    ess: Optional[float] = None
    mean_accept: Optional[float] = None
    log_weights: Optional[np.ndarray] = None


def logz(model: Model, method: str = "exact", *, chains: Optional[int] = None, temperatures: Optional[int] = None,
         sampler: Optional[str] = None, step_size: Optional[float] = None, seed: Optional[int] = None,
         threads: Optional[int] = None) -> LogZ:
    """log Z = log Σ_x exp f(x) (``dlp logz``): ``method="exact"`` enumerates (at most 2^24
    states); ``"ais"`` runs annealed importance sampling from the uniform base (``chains``
    ≥ 2, default 100; ``temperatures`` K, default 1000; ``sampler``, default gwg, with its
    ``step_size``; ``seed``; ``threads``). For a data model log Z is the log evidence."""
    return LogZ(**_dlp.logz(_model(model), method, chains=chains, temperatures=temperatures, sampler=sampler,
                            step_size=step_size, seed=seed, threads=threads))
