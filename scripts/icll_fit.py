#!/usr/bin/env python3
"""Fits the two polynomials of ICLL's f(φ) = Ein(e^φ) in crates/dlp-core/src/transform/lanes.rs
(ICLL_EIN, ICLL_E1) and prints them with the worst relative error of the f64 evaluation.

Not run by any recipe or test: the coefficients are committed, and the Rust tests check them
against the direct series / continued fraction and 40-digit values. Needs mpmath and numpy
(`pip install mpmath numpy`); about a minute.

  G(u) ≈ Ein(u)/u on u ∈ [0, SPLIT], least squares at 400 Chebyshev nodes (relative).
  S(w) ≈ u·e^u·E₁(u), w = 1/u ∈ [1/60, 1/SPLIT], least squares weighted by 1/(f·u·e^u):
         an error δ in S moves f by e^{−u}·w·δ, so what matters is δ·e^{−u}·w/f.
f = u·G(u) below SPLIT, (φ + γ) + e^{−u}·w·S(w) from it; both by Estrin's scheme as in Rust.
"""
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 50
SPLIT, DEG_EIN, DEG_E1, NODES = 4.0, 16, 10, 400


def ein(u):
    """Ein(u) = Σ (−1)^{k+1} u^k/(k·k!) to 45 digits (no cancellation for u ≤ 8 at 50 digits)."""
    s, t, k = mp.mpf(0), mp.mpf(1), 1
    while True:
        t *= u / k
        s += t / k if k % 2 else -t / k
        if abs(t / k) < mp.mpf(10) ** -45:
            return s
        k += 1


def lstsq(fun, xs, weights, deg):
    a = mp.matrix([[w * x**j for j in range(deg + 1)] for x, w in zip(xs, weights)])
    b = mp.matrix([w * fun(x) for x, w in zip(xs, weights)])
    c, _ = mp.qr_solve(a, b)
    return [float(c[j]) for j in range(deg + 1)]


def nodes(lo, hi):
    return [lo + (hi - lo) * (1 - mp.cos(mp.pi * (i + 0.5) / NODES)) / 2 for i in range(NODES)]


def truth(u):
    return ein(u) if u <= 8 else mp.euler + mp.log(u) + mp.e1(u)


def estrin(c, x):
    q, xp = list(c), x
    while len(q) > 1:
        q = [q[i] + q[i + 1] * xp if i + 1 < len(q) else q[i] for i in range(0, len(q), 2)]
        xp = xp * xp
    return q[0]


def main():
    g = lstsq(lambda u: ein(u) / u, nodes(mp.mpf(0), mp.mpf(SPLIT)), [1] * NODES, DEG_EIN)
    ws = nodes(mp.mpf(1) / 60, 1 / mp.mpf(SPLIT))
    weight = [1 / (truth(1 / w) * mp.exp(1 / w) / w) for w in ws]
    s = lstsq(lambda w: mp.exp(1 / w) * mp.e1(1 / w) / w, ws, weight, DEG_E1)
    worst = (0.0, None)
    for phi in np.concatenate([np.linspace(-25, 7, 20001), np.log(SPLIT) + np.linspace(-1e-9, 1e-9, 11)]):
        u = np.exp(phi)
        f = u * estrin(g, u) if u < SPLIT else (phi + 0.5772156649015329) + (np.exp(-u) / u) * estrin(s, 1 / u)
        t = truth(mp.exp(mp.mpf(phi)))
        worst = max(worst, (float(abs((f - t) / t)), phi), key=lambda p: p[0])
    print(f"worst relative error {worst[0]:.2e} at φ = {worst[1]}", file=sys.stderr)
    for name, c in [("ICLL_EIN", g), ("ICLL_E1", s)]:
        print(f"const {name}: [f64; {len(c)}] = [{', '.join(repr(x) for x in c)}];")


if __name__ == "__main__":
    main()
