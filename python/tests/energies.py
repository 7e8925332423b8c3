"""The energies of test_torch.py and test_jax.py: Ising (spin) and Potts (categorical) on 4
sites, as built-in models and numpy callbacks, and the checks both files run on a framework's
models (same f and ∇f as the numpy callback and the built-in model, same chains)."""

import numpy as np

import dlp_mcmc

# Ising on spins: f(s) = ½ sᵀJs + b·s (J symmetric, zero diagonal, so each pair counts once).
J = np.array([[0.0, 0.5, -0.3, 0.1], [0.5, 0.0, 0.2, 0.0], [-0.3, 0.2, 0.0, -0.4], [0.1, 0.0, -0.4, 0.0]])
B = np.array([0.1, -0.2, 0.3, 0.05])
# Potts with K = 3: f(X) = ½ Σ_ij J_ij ⟨X_i, X_j⟩ + Σ_i ⟨h_i, X_i⟩ on the one-hot X (d × K).
H = np.array([[0.1, 0.0, -0.1], [0.0, 0.2, 0.0], [0.3, 0.0, 0.0], [-0.2, 0.1, 0.1]])


def ising_numpy(x):
    s = x.astype(np.float64)
    return 0.5 * np.einsum("ni,ij,nj->n", s, J, s) + s @ B, s @ J + B


def potts_numpy(x):
    X = np.eye(3)[x]
    JX = np.einsum("ij,njk->nik", J, X)
    return 0.5 * np.einsum("nik,nik->n", X, JX) + np.einsum("ik,nik->n", H, X), JX + H


def builtin(name):
    return dlp_mcmc.Model.ising(J, b=B) if name == "ising" else dlp_mcmc.Model.potts(J, H)


def numpy_model(name):
    if name == "ising":
        return dlp_mcmc.Model.from_callable(4, "spin", ising_numpy)
    return dlp_mcmc.Model.from_callable(4, "categorical", potts_numpy, k=3)


DOMAIN = {"ising": ("spin", None), "potts": ("categorical", 3)}


def check_f_and_grad(name, model):
    """f (up to a constant) and ∇f equal the built-in model's and the numpy callback's."""
    ref = builtin(name)
    x = np.random.default_rng(0).choice(ref.values, size=(50, 4))
    f0, g0 = ref.log_density_grad(x)
    for m in (numpy_model(name), model):
        f, g = m.log_density_grad(x)
        np.testing.assert_allclose(f - f[0], f0 - f0[0], atol=1e-12)
        np.testing.assert_allclose(g, g0, atol=1e-12)


def check_same_chains(name, model, sampler):
    """The same seed gives the same trace and acceptances as the numpy callback."""
    runs = [dlp_mcmc.sample(m, sampler, step_size=0.5, chains=8, steps=150, seed=7, trace=True, progress=False)
            for m in (numpy_model(name), model)]
    np.testing.assert_array_equal(runs[1].trace, runs[0].trace)
    np.testing.assert_array_equal(runs[1].accept_rate, runs[0].accept_rate)
