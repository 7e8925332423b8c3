"""Goodness-of-fit tests of samples (n × d arrays of model values) against a model:
KDSD (Yang et al. 2018), GF-KSD (Han & Liu 2020) and MMD with a permutation test — the
tests of ``dlp gof``, returning the fields of its ``dlp.gof.result.v1`` JSON as a dict
(``statistic``, ``p_value``, ``reject``, the settings and ``warnings``). The same rows, seed
and options give the same statistic and p-value as ``dlp gof`` on a file of those rows.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import numpy as np

from . import _dlp

__all__ = ["kdsd", "gfksd", "mmd"]


def _common(reps: Any, alpha: Any, seed: Any) -> tuple:
    from . import _count
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)):
        raise TypeError(f"alpha must be a number, got {type(alpha).__name__}")
    return _count(reps, "reps", 1), float(alpha), _count(seed, "seed", 0)


def kdsd(samples: Any, model: Any, *, statistic: str = "u", bootstrap: Optional[str] = None, reps: int = 1000,
         alpha: float = 0.05, seed: int = 0, kernel: str = "exp_hamming", kernel_scale: float = 1.0,
         burnin: int = 1000) -> dict:
    """Kernelized discrete Stein discrepancy test (``dlp gof --test kdsd``).

    ``statistic`` is ``"u"`` (unbiased) or ``"v"``; ``bootstrap`` ``"multinomial"`` (default
    with u), ``"rademacher"`` (default with v) or ``"model"``: the statistic of ``reps`` fresh
    data sets of n draws from the model, a Monte Carlo test of exact level at every n (exact
    draws for at most 2²⁰ states, else ``burnin`` Gibbs sweeps); ``kernel``
    ``"exp_hamming"`` (exp(−λH/d), λ = ``kernel_scale``) or ``"hamming_linear"``.
    """
    from . import _count, _int_array, _model
    reps, alpha, seed = _common(reps, alpha, seed)
    out = _dlp.kdsd(_int_array(samples, "samples"), _model(model), statistic=statistic, bootstrap=bootstrap,
                    reps=reps, alpha=alpha, seed=seed, kernel=kernel, kernel_scale=float(kernel_scale),
                    burnin=_count(burnin, "burnin", 0))
    return json.loads(out)


def gfksd(samples: Any, model: Any, *, statistic: str = "u", bootstrap: Optional[str] = None, reps: int = 1000,
          alpha: float = 0.05, seed: int = 0, surrogate: str = "gaussian", bandwidth: Optional[float] = None,
          jitter: Any = None, burnin: int = 1000) -> dict:
    """Gradient-free KSD on a continuous lift (``dlp gof --test gfksd``).

    ``statistic`` and ``bootstrap`` (``"model"`` included) as for :func:`kdsd`.

    ``surrogate`` is ``"gaussian"`` or ``"relaxed"`` (Ising and RBM models); ``bandwidth``
    None (median heuristic) or a positive number; ``jitter`` an optional n × d array of reals
    in (0, 1) replacing the seeded jitter.
    """
    from . import _count, _int_array, _model
    reps, alpha, seed = _common(reps, alpha, seed)
    j = None
    if jitter is not None:
        j = np.ascontiguousarray(jitter, dtype=np.float64)
        if j.ndim != 2:
            raise ValueError(f"jitter must have 2 dimensions, got shape {j.shape}")
        if not np.all((j > 0) & (j < 1)):
            bad = tuple(int(i) for i in np.argwhere(~((j > 0) & (j < 1)))[0])
            raise ValueError(f"jitter{list(bad)} = {j[bad]} is not in (0, 1)")
    out = _dlp.gfksd(_int_array(samples, "samples"), _model(model), statistic=statistic, bootstrap=bootstrap,
                     reps=reps, alpha=alpha, seed=seed, surrogate=surrogate,
                     bandwidth=None if bandwidth is None else float(bandwidth), jitter=j,
                     burnin=_count(burnin, "burnin", 0))
    return json.loads(out)


def mmd(samples: Any, reference: Any = None, *, model: Any = None, model_samples: Optional[int] = None,
        burnin: int = 1000, statistic: str = "u", reps: int = 1000, alpha: float = 0.05, seed: int = 0,
        kernel_scale: float = 1.0) -> dict:
    """Squared-MMD permutation test (``dlp gof --test mmd``) of ``samples`` against
    ``reference`` rows, or against ``model_samples`` draws from ``model`` (exact for at most
    2²⁰ states, else ``burnin`` single-site Gibbs sweeps). exp-Hamming kernel, λ =
    ``kernel_scale``."""
    from . import _count, _int_array, _model
    reps, alpha, seed = _common(reps, alpha, seed)
    x = _int_array(samples, "samples")
    r = None if reference is None else _int_array(reference, "reference")
    inner = None if model is None else _model(model)
    values = None
    if inner is None:
        # Without a model the value list is whatever the arrays hold (as dlp gof reads files).
        values = [int(v) for v in np.unique(np.concatenate([x.ravel(), r.ravel() if r is not None else []]))]
    m = None if model_samples is None else _count(model_samples, "model_samples", 2)
    out = _dlp.mmd(x, model=inner, reference=r, values=values, model_samples=m,
                   burnin=_count(burnin, "burnin", 0), statistic=statistic, reps=reps, alpha=alpha, seed=seed,
                   kernel_scale=float(kernel_scale))
    return json.loads(out)
