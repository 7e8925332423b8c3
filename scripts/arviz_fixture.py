#!/usr/bin/env python3
"""Writes crates/dlp-core/tests/fixtures/arviz_diagnostics.json: fixed seeded chain sets and
ArviZ's rank-normalised split R-hat, bulk ESS and tail ESS for each (Vehtari et al. 2021).

The Rust test `crates/dlp-core/tests/diagnostics_arviz.rs` reads the chains and must
reproduce ArviZ's numbers to ~1e-6 relative. Regenerate with

    python3 -m venv /tmp/azenv && /tmp/azenv/bin/pip install arviz==0.23.4
    /tmp/azenv/bin/python scripts/arviz_fixture.py

(the file records the arviz, numpy and scipy versions that produced it).
"""

import json
import pathlib

import arviz as az
import numpy as np
import scipy

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/dlp-core/tests/fixtures/arviz_diagnostics.json"


def ar1(rng, phi, chains, draws, innovations=None, offsets=None):
    """x_t = phi x_{t-1} + e_t, started from the stationary law (normal innovations)."""
    e = innovations if innovations is not None else rng.standard_normal((chains, draws))
    x = np.empty((chains, draws))
    x[:, 0] = e[:, 0] / np.sqrt(max(1.0 - phi * phi, 1e-12))
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    if offsets is not None:
        x += np.asarray(offsets)[:, None]
    return x


def two_state(rng, stay, chains, draws):
    """A ±1 Markov chain that keeps its value w.p. `stay`: many ties, like Ising spins."""
    x = np.empty((chains, draws))
    x[:, 0] = np.where(rng.random(chains) < 0.5, -1.0, 1.0)
    for t in range(1, draws):
        flip = rng.random(chains) >= stay
        x[:, t] = np.where(flip, -x[:, t - 1], x[:, t - 1])
    return x


def main():
    rng = np.random.default_rng(20220707)
    cases = [
        ("ar1_phi_0.3", ar1(rng, 0.3, 4, 500)),
        ("ar1_phi_0.9", ar1(rng, 0.9, 4, 500)),
        # Negative autocorrelation: ESS above the number of draws (Geyer's odd lags matter).
        ("ar1_phi_-0.6", ar1(rng, -0.6, 4, 500)),
        # Heavy tails: Student-t (2.5 degrees of freedom) innovations.
        ("ar1_phi_0.5_student_t", ar1(rng, 0.5, 4, 500, innovations=rng.standard_t(2.5, (4, 500)))),
        # Chains that disagree: R-hat well above 1.
        ("ar1_phi_0.7_shifted", ar1(rng, 0.7, 4, 500, offsets=[0.0, 0.0, 1.5, -1.0])),
        # Odd number of draws: the split drops the middle draw.
        ("ar1_phi_0.5_odd_draws", ar1(rng, 0.5, 4, 501)),
        # Discrete values with ties (average ranks).
        ("two_state_stay_0.8", two_state(rng, 0.8, 4, 500)),
        # One chain: ESS is defined (split into two halves), R-hat is not.
        ("ar1_phi_0.6_one_chain", ar1(rng, 0.6, 1, 1000)),
    ]
    out = {
        "generator": "scripts/arviz_fixture.py",
        "arviz": az.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "calls": 'az.rhat(x, method="rank"), az.ess(x, method="bulk"), az.ess(x, method="tail") on x[chain, draw]',
        "cases": [],
    }
    for name, x in cases:
        # Round to 10 significant digits first (a smaller file), then compute on the rounded
        # values, so the Rust test sees exactly the draws ArviZ saw.
        x = np.vectorize(lambda v: float(f"{v:.10g}"))(x)
        rhat = float(az.rhat(x, method="rank"))
        out["cases"].append(
            {
                "name": name,
                "n_chains": int(x.shape[0]),
                "n_draws": int(x.shape[1]),
                "rhat_rank": None if np.isnan(rhat) else rhat,
                "ess_bulk": float(az.ess(x, method="bulk")),
                "ess_tail": float(az.ess(x, method="tail")),
                # Row-major chains × draws.
                "draws": [float(v) for v in x.ravel()],
            }
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    for c in out["cases"]:
        print(f'{c["name"]:28s} rhat={c["rhat_rank"]} bulk={c["ess_bulk"]:.3f} tail={c["ess_tail"]:.3f}')


if __name__ == "__main__":
    main()
