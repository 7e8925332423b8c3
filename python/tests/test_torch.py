"""Model.from_torch: ∇f of a PyTorch energy by autograd, on the built-in Ising and Potts models:
the same f and ∇f as the numpy callback, and the same chains for the same seed.
`just test-python` runs this file in an environment with Debian's python3-torch."""

import numpy as np
import pytest

import dlp_mcmc
from energies import DOMAIN, B, H, J, check_f_and_grad, check_same_chains

torch = pytest.importorskip("torch", reason="apt-get install python3-torch (or pip install torch)")


def ising_torch(s):
    Jt, Bt = torch.tensor(J, dtype=s.dtype), torch.tensor(B, dtype=s.dtype)
    return 0.5 * ((s @ Jt) * s).sum(-1) + s @ Bt


def potts_torch(X):
    Jt, Ht = torch.tensor(J, dtype=X.dtype), torch.tensor(H, dtype=X.dtype)
    return 0.5 * (X * torch.einsum("ij,njk->nik", Jt, X)).sum((-1, -2)) + (X * Ht).sum((-1, -2))


def model(name):
    domain, k = DOMAIN[name]
    return dlp_mcmc.Model.from_torch(ising_torch if name == "ising" else potts_torch, 4, domain, k=k)


@pytest.mark.parametrize("name", ["ising", "potts"])
def test_f_and_grad(name):
    check_f_and_grad(name, model(name))


@pytest.mark.parametrize("name", ["ising", "potts"])
@pytest.mark.parametrize("sampler", ["dmala", "dula"])
def test_same_chains_as_the_numpy_callback(name, sampler):
    check_same_chains(name, model(name), sampler)


def test_dtype_and_bad_output():
    seen = []

    def f32(s):
        seen.append(s.dtype)
        return ising_torch(s)

    m = dlp_mcmc.Model.from_torch(f32, 4, "spin", dtype=torch.float32)
    f, _ = m.log_density_grad(np.ones((2, 4), dtype=np.int64))
    assert seen == [torch.float32] and f.dtype == np.float64
    bad = dlp_mcmc.Model.from_torch(lambda s: s.sum(), 4, "spin")
    with pytest.raises(ValueError, match=r"fn must return one number per state, shape \(2,\), got \(\)"):
        bad.log_density_grad(np.ones((2, 4), dtype=np.int64))


def test_device_placement_states_on_the_given_device_results_back_on_the_host():
    """The device branch of from_torch, with torch's data-less "meta" device standing in for a
    GPU (there is none here): the batch is made on `device` (CPU when none is given), and f
    and ∇f are copied back to the host; from a meta tensor that copy fails, which must stop the
    run as the callback's ValueError naming torch's message."""
    seen = []

    def fn(s):
        seen.append((s.device.type, s.dtype, s.requires_grad))
        return (s * s).sum(-1)

    x = np.ones((2, 4), dtype=np.int64)
    dlp_mcmc.Model.from_torch(fn, 4, "spin").log_density_grad(x)
    assert seen == [("cpu", torch.float64, True)]
    seen.clear()
    meta = dlp_mcmc.Model.from_torch(fn, 4, "spin", device="meta")
    with pytest.raises(ValueError, match="Cannot copy out of meta tensor"):
        meta.log_density_grad(x)
    assert seen == [("meta", torch.float64, True)]
    seen.clear()
    with pytest.raises(ValueError, match="Cannot copy out of meta tensor"):
        dlp_mcmc.sample(meta, "dmala", step_size=0.4, chains=3, steps=2, progress=False)
    assert seen == [("meta", torch.float64, True)]
