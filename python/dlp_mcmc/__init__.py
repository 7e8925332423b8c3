"""dlp_mcmc (distribution `dlp-mcmc`): gradient-based discrete samplers (the DLP family and the rest of dlp's registry),
discrete goodness-of-fit tests and exact checks, on numpy arrays, with a Rust core.

>>> import dlp_mcmc
>>> model = dlp_mcmc.Model.ising(J=[[0, .5], [.5, 0]], b=[.1, -.2])
>>> run = dlp_mcmc.sample(model, "dmala", step_size=0.4, chains=8, steps=100, seed=1)
>>> run.final.shape
(8, 2)

The Rust crates do the work; this module checks argument types and shapes, converts arrays
and wraps results. Bad input raises ``ValueError`` (or ``TypeError`` for a wrong type) with
the one-line message the ``dlp`` command prints.
"""

from __future__ import annotations

import json
import os
import unicodedata
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from . import _dlp
from . import gof

__all__ = ["Model", "Sample", "sample", "exact", "Exact", "samplers", "gof", "__version__"]
__version__: str = _dlp.__version__


def _int_array(x: Any, name: str, ndim: int = 2) -> np.ndarray:
    """``x`` as a C-contiguous int64 array of ``ndim`` dimensions (integers or bools only)."""
    a = np.asarray(x)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
        raise TypeError(f"{name} must be an array of integers (model values), got dtype {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {a.shape}")
    return np.ascontiguousarray(a, dtype=np.int64)


def _float_array(x: Any, name: str) -> list:
    """``x`` as a nested list of finite floats (for model-file JSON)."""
    a = np.asarray(x)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_):
        raise TypeError(f"{name} must be an array of numbers, got dtype {a.dtype}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
        raise ValueError(f"{name}{list(bad)} is not finite ({a[bad]})")
    return a.tolist()


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
    def _kind(kind: str, d: int, domain: Optional[str], **keys: Any) -> "Model":
        spec: dict = {"kind": kind, "d": int(d)}
        if domain is not None:
            spec["domain"] = domain
        spec.update({k: v for k, v in keys.items() if v is not None})
        return Model.from_dict(spec, name=f"<dlp_mcmc.Model.{kind}>")

    @staticmethod
    def ising(J: Any, b: Any = None, domain: str = "spin") -> "Model":
        """f(x) = Σ_{i<j} J_ij x_i x_j + Σ b_i x_i; ``J`` symmetric d × d (zero diagonal)."""
        J = _float_array(J, "J")
        d = len(J)
        return Model._kind("ising", d, domain, J=J, b=None if b is None else _float_array(b, "b"))

    @staticmethod
    def potts(J: Any, h: Any) -> "Model":
        """Potts model: couplings ``J`` (d × d, pairs counted once) and fields ``h`` (d × K)."""
        h = _float_array(h, "h")
        return Model._kind("potts", len(h), None, K=len(h[0]) if h else 0, J=_float_array(J, "J"), h=h)

    @staticmethod
    def rbm(W: Any, b: Any, c: Any, domain: str = "binary") -> "Model":
        """RBM marginal over the visible units: ``W`` (d × M), visible bias ``b``, hidden ``c``."""
        W = _float_array(W, "W")
        return Model._kind("rbm", len(W), domain, W=W, b=_float_array(b, "b"), c=_float_array(c, "c"))

    @staticmethod
    def categorical(probs: Any = None, logits: Any = None) -> "Model":
        """Independent coordinates with ``probs`` or ``logits`` (d × K)."""
        if (probs is None) == (logits is None):
            raise ValueError("give exactly one of probs and logits")
        p = _float_array(probs if probs is not None else logits, "probs" if probs is not None else "logits")
        key = "probs" if probs is not None else "logits"
        return Model._kind("categorical", len(p), None, K=len(p[0]) if p else 0, **{key: p})

    @staticmethod
    def table(log_prob: Any, d: int, domain: str = "binary", K: Optional[int] = None) -> "Model":
        """Explicit ``log_prob`` of all K^d states (first coordinate most significant)."""
        return Model._kind("table", d, domain, K=K, log_prob=_float_array(log_prob, "log_prob"))

    @staticmethod
    def logistic(X: Any, y: Any, b: Any = None, domain: str = "spin", minibatch: Optional[dict] = None) -> "Model":
        """Logistic-regression data model (features ``X`` N × d, labels ``y`` in {0,1})."""
        X = _float_array(X, "X")
        y = _int_array(y, "y", ndim=1).tolist()
        d = len(X[0]) if X else 0
        return Model._kind("logistic", d, domain, X=X, y=y, b=None if b is None else _float_array(b, "b"),
                           minibatch=minibatch)

    @staticmethod
    def bnn(x: Any, y: Any, hidden: int, tau: Optional[float] = None) -> "Model":
        """Binary Bayesian neural network data model (kind ``bnn``): features ``x`` (N × p),
        targets ``y`` (N), ``hidden`` units, prior scale ``tau``; d = (p + 2)·hidden + 1."""
        x = _float_array(x, "x")
        p = len(x[0]) if x else 0
        h = _count(hidden, "hidden", 1)
        return Model._kind("bnn", (p + 2) * h + 1, None, x=x, y=_float_array(y, "y"), hidden=h,
                           tau=None if tau is None else float(tau))

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


# Counts and seeds reach Rust as 64-bit unsigned integers; a larger Python int would raise
# OverflowError in the conversion instead of the ValueError naming the argument.
_U64_MAX = 2**64 - 1


def _count(x: Any, name: str, minimum: int) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(x).__name__}")
    if x < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {x}")
    if x > _U64_MAX:
        raise ValueError(f"{name} must be at most {_U64_MAX}, got {x}")
    return int(x)


def samplers() -> list:
    """Every registered sampler name form (``dlp samplers``; ``<k>`` stands for an integer)."""
    return [form for entry in _dlp.sampler_names() for form in entry.split(" | ")]


class Sample:
    """The result of :func:`sample`.

    Attributes: ``final`` (chains × d model values), ``trace`` (kept steps × chains × d, or
    None), ``trace_steps`` (the step number of each kept slice), ``accept_rate`` (per chain,
    fraction of steps accepted), ``accept_prob`` (per chain, mean acceptance probability),
    ``changed`` (per chain, mean coordinates changed per step), ``sampler`` (its name),
    ``step_size`` and ``step_size_min`` (as used, adapted or given), ``warmup_steps`` (run
    by the adaptation before the recorded steps).
    """

    def __init__(self, raw: dict) -> None:
        self.final: np.ndarray = raw["final"]
        self.trace: Optional[np.ndarray] = raw["trace"]
        self.trace_steps: Optional[np.ndarray] = raw["trace_steps"]
        self.accept_rate: np.ndarray = raw["accept_rate"]
        self.accept_prob: np.ndarray = raw["accept_prob"]
        self.changed: np.ndarray = raw["changed"]
        self.sampler: str = raw["sampler"]
        self.step_size: Optional[float] = raw["step_size"]
        self.step_size_min: Optional[float] = raw["step_size_min"]
        self.warmup_steps: int = raw["warmup_steps"]

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


def sample(model: Model, sampler: str = "dmala", step_size: Union[float, str, None] = 0.4, chains: int = 100,
           steps: int = 2000, burn_in: int = 0, thin: int = 1, seed: int = 0, threads: Optional[int] = None,
           init: Union[str, Any] = "random", trace: bool = False, preconditioner: Optional[Sequence[float]] = None,
           batch_size: Optional[int] = None, step_size_min: Optional[float] = None,
           progress: bool = False, target_accept: Optional[float] = None) -> Sample:
    """Runs ``chains`` chains of ``sampler`` (any name of :func:`samplers`) for ``steps`` steps.

    ``init`` is ``"random"`` (uniform, from ``seed``, as ``dlp sample``), ``"zeros"`` (first
    value of every coordinate) or a chains × d array of model values. With ``trace=True`` the
    states after step ``burn_in`` are kept every ``thin`` steps. ``step_size=None`` for
    samplers without one. The same seed gives the same arrays for any ``threads``
    (None = one per core); Ctrl-C stops the run and raises KeyboardInterrupt.
    ``preconditioner`` (pdula/pdmala), ``batch_size`` (sg-* samplers on data models) and
    ``step_size_min`` (acs-* samplers) are the CLI's ``--preconditioner``, ``--batch-size``
    and ``--step-size-min``. ``step_size="auto"`` adapts α first, as ``dlp sample
    --step-size auto`` does (dual averaging toward ``target_accept``, 0.574 by default, over
    ``burn_in`` warm-up steps, half of ``steps`` when 0; then frozen); ``Sample.step_size``
    is the α used. ``progress=True`` shows the CLI's progress bar on stderr (when
    stderr is a terminal).
    """
    inner = _model(model)
    if not isinstance(sampler, str):
        raise TypeError(f"sampler must be a str, got {type(sampler).__name__}")
    chains = _count(chains, "chains", 1)
    steps = _count(steps, "steps", 0)
    burn_in = _count(burn_in, "burn_in", 0)
    thin = _count(thin, "thin", 1)
    seed = _count(seed, "seed", 0)
    threads = 0 if threads is None else _count(threads, "threads", 1)
    adapt = isinstance(step_size, str)
    if adapt and step_size != "auto":
        raise ValueError(f"step_size must be a number, None or \"auto\", got {_quote(step_size)}")
    if not adapt and step_size is not None and (
            isinstance(step_size, bool) or not isinstance(step_size, (int, float, np.floating, np.integer))):
        raise TypeError(f"step_size must be a number, got {type(step_size).__name__}")
    init_array = None
    random_init = True
    if isinstance(init, str):
        if init not in ("random", "zeros"):
            raise ValueError(f"init must be \"random\", \"zeros\" or an array, got {_quote(init)}")
        random_init = init == "random"
    else:
        init_array = _int_array(init, "init")
    pre = None if preconditioner is None else [float(h) for h in _float_array(preconditioner, "preconditioner")]
    raw = _dlp.sample(inner, sampler, step_size=None if step_size is None or adapt else float(step_size),
                      step_size_min=None if step_size_min is None else float(step_size_min),
                      preconditioner=pre, batch_size=None if batch_size is None else _count(batch_size, "batch_size", 1),
                      chains=chains, steps=steps, burn_in=burn_in, thin=thin, seed=seed, threads=threads,
                      init=init_array, random_init=random_init, keep_trace=bool(trace), progress=bool(progress),
                      adapt=adapt, target_accept=None if target_accept is None else float(target_accept))
    return Sample(raw)


class Exact(dict):
    """``dlp exact``'s report (a dict, ``dlp.exact.report.v2``) with numpy views:
    ``states`` (n_states × d), ``target`` π, the chain's class structure (``irreducible``,
    ``aperiodic``, ``verdict``, ``closed_classes``), ``stationary`` (the sampler's law, when it is
    unique) and ``total_variation``, and :meth:`marginals`. For a reducible chain there is no
    single stationary law: ``stationary`` and ``total_variation`` raise, and
    ``closed_classes`` and ``uniform_start_limit`` say what the chain does instead."""

    @property
    def states(self) -> np.ndarray:
        """Every state, in enumeration order (model values)."""
        return np.asarray(self["states"], dtype=np.int64)

    @property
    def target(self) -> np.ndarray:
        """The target law π over :attr:`states`."""
        return np.asarray(self["target"])

    @property
    def irreducible(self) -> bool:
        """One closed class and no transient state."""
        return bool(self["ergodicity"]["irreducible"])

    @property
    def aperiodic(self) -> bool:
        """Every closed class has period 1."""
        return bool(self["ergodicity"]["aperiodic"])

    @property
    def verdict(self) -> str:
        """One line: "irreducible and aperiodic", "reducible: 2 closed classes (parity)", …"""
        return str(self["ergodicity"]["verdict"])

    @property
    def closed_classes(self) -> list:
        """Each closed class: size, period, target mass, its states and its law over them."""
        return list(self["ergodicity"]["closed_classes"])

    @property
    def uniform_start_limit(self) -> Optional[np.ndarray]:
        """For a chain without a unique law: the limit of a chain started uniformly at random."""
        v = self.get("uniform_start_limit")
        return None if v is None else np.asarray(v)

    @property
    def stationary(self) -> np.ndarray:
        """The sampler's stationary law over :attr:`states` (ValueError if it is not unique)."""
        if "stationary" not in self:
            raise ValueError(f"{self['sampler']} has no unique stationary law here: {self.verdict}")
        return np.asarray(self["stationary"])

    @property
    def total_variation(self) -> float:
        """TV distance between the stationary law and π (ValueError if the law is not unique)."""
        if "total_variation" not in self:
            raise ValueError(f"{self['sampler']} has no unique stationary law here: {self.verdict}")
        return float(self["total_variation"])

    def marginals(self, law: str = "stationary") -> dict:
        """P(x_i = v) for every coordinate i and value v, as {v: array of d} under ``law``."""
        p = self.stationary if law == "stationary" else self.target
        s = self.states
        return {int(v): (p[:, None] * (s == v)).sum(axis=0) for v in np.unique(s)}


def exact(model: Model, sampler: str, step_size: Optional[float] = None,
          preconditioner: Optional[Sequence[float]] = None) -> Exact:
    """The sampler's exact stationary law on a small model, beside the target (``dlp exact``)."""
    inner = _model(model)
    pre = None if preconditioner is None else [float(h) for h in _float_array(preconditioner, "preconditioner")]
    return Exact(json.loads(_dlp.exact(inner, sampler, None if step_size is None else float(step_size), pre)))
