"""Native interop: numpy arrays straight into the models, typed results holding numpy arrays
(no JSON text), `logz` equal to `dlp logz`, and the keyword-only `sample` whose sampler options
are checked against the registry."""

import dataclasses
import itertools
import json

import numpy as np
import pytest

import dlp_mcmc
from conftest import run_cli

J3 = np.array([[0, .5, -.3], [.5, 0, .2], [-.3, .2, 0]])
B3 = np.array([.1, -.2, .3])


def test_results_are_typed_classes_holding_numpy_arrays(examples):
    model = dlp_mcmc.Model.ising(J3, b=B3)
    run = dlp_mcmc.sample(model, "dmala", step_size=0.4, chains=4, steps=20, seed=1, trace=True)
    assert dataclasses.is_dataclass(run)
    for name in ("final", "trace", "trace_steps", "accept_rate", "accept_prob", "changed"):
        assert isinstance(getattr(run, name), np.ndarray), name
    assert run.final.dtype == np.int64 and run.accept_rate.dtype == np.float64
    ex = dlp_mcmc.exact(model, "dmala", step_size=0.4)
    assert isinstance(ex, dlp_mcmc.Exact) and ex.states.dtype == np.int64 and ex.stationary.shape == (8,)
    g = dlp_mcmc.gof.kdsd(run.trace.reshape(-1, 3), model, reps=50, seed=1)
    assert isinstance(g, dlp_mcmc.gof.GofResult) and isinstance(g.p_value, float) and isinstance(g.reject, bool)
    z = dlp_mcmc.logz(model)
    assert isinstance(z, dlp_mcmc.LogZ) and z.n_states == 8


def test_models_take_any_float_array_layout():
    # Fortran order, a read-only view and nested lists: the same model (f compared on every state).
    x = np.array(list(itertools.product([-1, 1], repeat=3)), dtype=np.int64)
    ref = dlp_mcmc.Model.ising(J3, b=B3).log_density(x)
    ro = J3.copy()
    ro.setflags(write=False)
    for J in (np.asfortranarray(J3), ro, J3.tolist()):
        np.testing.assert_allclose(dlp_mcmc.Model.ising(J, b=list(B3)).log_density(x), ref, atol=1e-12)
    # An integer array is converted: f(s) = Σ_{i<j} J_ij s_i s_j exactly.
    Ji = np.array([[0, 1, 0], [1, 0, 2], [0, 2, 0]])
    f = dlp_mcmc.Model.ising(Ji).log_density(x)
    np.testing.assert_array_equal(f, [(Ji[0, 1] * s[0] * s[1] + Ji[1, 2] * s[1] * s[2]) for s in x])


def test_model_messages_come_from_the_model_constructors():
    with pytest.raises(ValueError, match=r"^J must have 2 dimensions, got shape \(3,\)$"):
        dlp_mcmc.Model.ising(B3)
    with pytest.raises(ValueError, match=r"^b has length 2 but d = 3$"):
        dlp_mcmc.Model.ising(J3, b=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"^domain must be spin or binary, got \"potts\"$"):
        dlp_mcmc.Model.ising(J3, domain="potts")
    with pytest.raises(ValueError, match="give exactly one of probs and logits"):
        dlp_mcmc.Model.categorical()
    with pytest.raises(ValueError, match=r"probs\[0\] sums to 0.5, not 1"):
        dlp_mcmc.Model.categorical(probs=[[0.25, 0.25]])


def test_logz_equals_dlp_logz(dlp_bin, examples):
    path = examples / "ising-3.json"
    model = dlp_mcmc.Model.from_file(path)
    r = run_cli(dlp_bin, "logz", "--model", str(path), "--method", "exact")
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    z = dlp_mcmc.logz(model)
    assert (z.method, z.log_z, z.std_err, z.n_states) == ("exact", cli["log_z"], 0.0, cli["n_states"])
    # The definition, on the 8 states.
    x = np.array(list(itertools.product(model.values, repeat=model.d)))
    assert z.log_z == pytest.approx(np.log(np.exp(model.log_density(x)).sum()), abs=1e-12)
    r = run_cli(dlp_bin, "logz", "--model", str(path), "--method", "ais", "--chains", "50", "--temperatures", "100",
                "--seed", "3", "--quiet")
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    a = dlp_mcmc.logz(model, "ais", chains=50, temperatures=100, seed=3)
    assert (a.log_z, a.std_err, a.ess, a.sampler) == (cli["log_z"], cli["std_err"], cli["ess"], cli["sampler"])
    assert a.log_weights.shape == (50,)
    with pytest.raises(ValueError, match=r"^chains applies to method \"ais\" only$"):
        dlp_mcmc.logz(model, chains=10)
    with pytest.raises(ValueError, match="chains must be at least 2"):
        dlp_mcmc.logz(model, "ais", chains=1)


def test_sample_is_keyword_only_and_checks_options_against_the_registry():
    model = dlp_mcmc.Model.ising(J3, b=B3)
    with pytest.raises(TypeError):
        dlp_mcmc.sample(model, "dmala", 0.4)  # the old positional step_size
    assert dlp_mcmc.sampler_options("dmala") == {"step_size": True, "target_accept": False}
    assert dlp_mcmc.sampler_options("gibbs") == {}
    assert dlp_mcmc.sampler_options("nope") is None
    with pytest.raises(ValueError, match=r"^unknown sampler option stepsize does not apply to dmala "
                                         r"\(it takes step_size, target_accept\)$"):
        dlp_mcmc.sample(model, "dmala", chains=2, steps=2, stepsize=0.4)
    with pytest.raises(ValueError, match=r"^sampler option batch_size does not apply to dmala"):
        dlp_mcmc.sample(model, "dmala", chains=2, steps=2, step_size=0.4, batch_size=3)
    with pytest.raises(TypeError, match=r"^step_size must be a number, got list$"):
        dlp_mcmc.sample(model, "dmala", chains=2, steps=2, step_size=[0.4])
    # Counts cross into Rust once, with the CLI's messages.
    with pytest.raises(ValueError, match=r"^chains must be at least 1$"):
        dlp_mcmc.sample(model, "dmala", chains=0, steps=2, step_size=0.4)
    with pytest.raises(ValueError, match=r"^seed must be at least 0, got -1$"):
        dlp_mcmc.sample(model, "dmala", chains=1, steps=2, step_size=0.4, seed=-1)
    with pytest.raises(TypeError, match=r"^steps must be an integer, got float$"):
        dlp_mcmc.sample(model, "dmala", chains=1, steps=2.0, step_size=0.4)
    # Without a step size dmala adapts one over half the steps, as `dlp sample` does.
    run = dlp_mcmc.sample(model, "dmala", chains=4, steps=40, seed=0)
    assert run.warmup_steps == 20 and run.step_size > 0
