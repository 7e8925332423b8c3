"""Model.from_jax: ∇f of a JAX energy (jax.value_and_grad, jit-compiled), on the built-in Ising
and Potts models: the same f and ∇f as the numpy callback, and the same chains for the same
seed, in float64 (from_jax turns JAX's 64-bit mode on)."""

import numpy as np
import pytest

import dlp_mcmc
from energies import DOMAIN, B, H, J, builtin, check_f_and_grad, check_same_chains

jax = pytest.importorskip("jax", reason="pip install 'jax[cpu]'")
jnp = pytest.importorskip("jax.numpy", reason="pip install 'jax[cpu]'")


def ising_jax(s):
    return 0.5 * ((s @ J) * s).sum(-1) + s @ B


def potts_jax(X):
    return 0.5 * (X * jnp.einsum("ij,njk->nik", J, X)).sum((-1, -2)) + (X * H).sum((-1, -2))


def model(name):
    domain, k = DOMAIN[name]
    return dlp_mcmc.Model.from_jax(ising_jax if name == "ising" else potts_jax, 4, domain, k=k)


@pytest.mark.parametrize("name", ["ising", "potts"])
def test_f_and_grad(name):
    check_f_and_grad(name, model(name))
    assert jax.config.jax_enable_x64


@pytest.mark.parametrize("name", ["ising", "potts"])
@pytest.mark.parametrize("sampler", ["dmala", "dula"])
def test_same_chains_as_the_numpy_callback(name, sampler):
    check_same_chains(name, model(name), sampler)


def test_bad_output():
    bad = dlp_mcmc.Model.from_jax(lambda s: s.sum(), 4, "spin")
    with pytest.raises(ValueError, match=r"fn must return one number per state, shape \(2,\), got \(\)"):
        bad.log_density_grad(np.ones((2, 4), dtype=np.int64))


def test_batches_of_any_size_compile_once_per_power_of_two():
    """jit traces once per input shape; batches padded to powers of two keep the number of
    traces logarithmic in the largest batch, and the padded rows do not show in f and ∇f."""
    traces = []

    def energy(s):
        traces.append(s.shape[0])  # Python code in a jitted function runs only while tracing
        return ising_jax(s)

    m = dlp_mcmc.Model.from_jax(energy, 4, "spin")
    reference = builtin("ising")  # the built-in Rust Ising: f and ∇f without JAX
    rng = np.random.default_rng(0)
    for n in range(1, 34):
        x = rng.choice([-1, 1], size=(n, 4))
        f, g = m.log_density_grad(x)
        assert f.shape == (n,) and g.shape == (n, 4)
        f0, g0 = reference.log_density_grad(x)
        np.testing.assert_allclose(f, f0, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, g0, rtol=1e-12, atol=1e-12)
    # Sizes 1, 2, 4, …, 64: seven shapes (33 distinct sizes without the padding).
    assert sorted(set(traces)) == [1, 2, 4, 8, 16, 32, 64], traces
    assert len(traces) <= 7 * 2, traces  # value_and_grad may trace twice per shape at most
