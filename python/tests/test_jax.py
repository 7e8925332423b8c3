"""Model.from_jax: ∇f of a JAX energy (jax.value_and_grad, jit-compiled), on the built-in Ising
and Potts models: the same f and ∇f as the numpy callback, and the same chains for the same
seed, in float64 (from_jax turns JAX's 64-bit mode on)."""

import numpy as np
import pytest

import dlp_mcmc
from energies import DOMAIN, B, H, J, check_f_and_grad, check_same_chains

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
