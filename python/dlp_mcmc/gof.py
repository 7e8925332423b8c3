"""Goodness-of-fit tests of samples (n × d arrays of model values) against a model:
KDSD (Yang et al. 2018), GF-KSD (Han & Liu 2020) and MMD with a permutation test — the
tests of ``dlp gof``, returning a :class:`GofResult` (the fields of its ``dlp.gof.result.v1``
document). The same rows, seed and options give the same statistic and p-value as ``dlp gof``
on a file of those rows. Every value is checked in Rust, with ``dlp gof``'s messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from . import _dlp

__all__ = ["GofResult", "kdsd", "gfksd", "mmd"]


@dataclass(frozen=True)
class GofResult:
    """One test's outcome: ``test`` (kdsd, gfksd or mmd), ``statistic``, ``p_value``,
    ``reject`` (p ≤ ``alpha``), ``statistic_kind`` (u or v), the sample size ``n`` and
    dimension ``d``, ``seed``, ``warnings`` (lines) and ``details`` (kernel, bootstrap,
    reference, … as in ``dlp gof``'s JSON)."""

    test: str
    statistic: float
    p_value: float
    reject: bool
    alpha: float
    statistic_kind: str
    n: int
    d: int
    seed: int
    warnings: list
    details: dict = field(repr=False)

    @staticmethod
    def _from_doc(doc: dict) -> "GofResult":
        keys = ("test", "statistic", "p_value", "reject", "alpha", "statistic_kind", "n", "d", "seed", "warnings")
        return GofResult(**{k: doc[k] for k in keys}, details={k: v for k, v in doc.items() if k not in keys})


def _samples(x: Any, name: str) -> np.ndarray:
    from . import _int_array
    return _int_array(x, name)


def kdsd(samples: Any, model: Any, *, statistic: str = "u", bootstrap: Optional[str] = None, reps: int = 1000,
         alpha: float = 0.05, seed: int = 0, kernel: str = "exp_hamming", kernel_scale: float = 1.0,
         burnin: int = 1000) -> GofResult:
    """Kernelized discrete Stein discrepancy test (``dlp gof --test kdsd``).

    ``statistic`` is ``"u"`` (unbiased) or ``"v"``; ``bootstrap`` ``"multinomial"`` (default
    with u), ``"rademacher"`` (default with v) or ``"model"``: the statistic of ``reps`` fresh
    data sets of n draws from the model, a Monte Carlo test of exact level at every n (exact
    draws for at most 2²⁰ states, else ``burnin`` Gibbs sweeps); ``kernel``
    ``"exp_hamming"`` (exp(−λH/d), λ = ``kernel_scale``) or ``"hamming_linear"``.
    """
    from . import _model
    return GofResult._from_doc(_dlp.kdsd(_samples(samples, "samples"), _model(model), statistic=statistic,
                                         bootstrap=bootstrap, reps=reps, alpha=alpha, seed=seed, kernel=kernel,
                                         kernel_scale=kernel_scale, burnin=burnin))


def gfksd(samples: Any, model: Any, *, statistic: str = "u", bootstrap: Optional[str] = None, reps: int = 1000,
          alpha: float = 0.05, seed: int = 0, surrogate: str = "gaussian", bandwidth: Optional[float] = None,
          jitter: Any = None, burnin: int = 1000) -> GofResult:
    """Gradient-free KSD on a continuous lift (``dlp gof --test gfksd``).

    ``statistic`` and ``bootstrap`` (``"model"`` included) as for :func:`kdsd`.

    ``surrogate`` is ``"gaussian"`` or ``"relaxed"`` (Ising and RBM models); ``bandwidth``
    None (median heuristic) or a positive number; ``jitter`` an optional n × d array of reals
    in (0, 1) replacing the seeded jitter.
    """
    from . import _model
    j = None if jitter is None else np.ascontiguousarray(jitter, dtype=np.float64)
    if j is not None and j.ndim != 2:
        raise ValueError(f"jitter must have 2 dimensions, got shape {j.shape}")
    return GofResult._from_doc(_dlp.gfksd(_samples(samples, "samples"), _model(model), statistic=statistic,
                                          bootstrap=bootstrap, reps=reps, alpha=alpha, seed=seed,
                                          surrogate=surrogate, bandwidth=bandwidth, jitter=j, burnin=burnin))


def mmd(samples: Any, reference: Any = None, *, model: Any = None, model_samples: Optional[int] = None,
        burnin: int = 1000, statistic: str = "u", reps: int = 1000, alpha: float = 0.05, seed: int = 0,
        kernel_scale: float = 1.0) -> GofResult:
    """Squared-MMD permutation test (``dlp gof --test mmd``) of ``samples`` against
    ``reference`` rows, or against ``model_samples`` draws from ``model`` (exact for at most
    2²⁰ states, else ``burnin`` single-site Gibbs sweeps). exp-Hamming kernel, λ =
    ``kernel_scale``."""
    from . import _model
    x = _samples(samples, "samples")
    r = None if reference is None else _samples(reference, "reference")
    inner = None if model is None else _model(model)
    values = None
    if inner is None:
        # Without a model the value list is whatever the arrays hold (as dlp gof reads files).
        values = [int(v) for v in np.unique(np.concatenate([x.ravel(), r.ravel() if r is not None else []]))]
    return GofResult._from_doc(_dlp.mmd(x, model=inner, reference=r, values=values, model_samples=model_samples,
                                        burnin=burnin, statistic=statistic, reps=reps, alpha=alpha, seed=seed,
                                        kernel_scale=kernel_scale))
