"""Sampling: marginals against dlp_mcmc.exact's law, a numpy callback model against the same
built-in model, thread-count independence, trace and diagnostics."""

import re

import numpy as np
import pytest

import dlp_mcmc

# J and b of data/examples/ising-3.json (spin), for the callback twin.
J3 = np.array([[0.0, 0.5, -0.3], [0.5, 0.0, 0.2], [-0.3, 0.2, 0.0]])
B3 = np.array([0.1, -0.2, 0.3])


def ising_f_grad(x):
    """f(s) = Σ_{i<j} J_ij s_i s_j + b·s and ∂f/∂s for a batch of spins (n × d)."""
    s = x.astype(np.float64)
    f = 0.5 * np.einsum("ni,ij,nj->n", s, J3, s) + s @ B3
    return f, s @ J3 + B3


def test_dmala_final_states_follow_the_exact_law(examples):
    model = dlp_mcmc.Model.from_file(examples / "ising-3.json")
    ex = dlp_mcmc.exact(model, "dmala", step_size=0.4)
    # DMALA is Metropolis-adjusted: its stationary law is the target to rounding.
    assert ex.total_variation < 1e-10
    assert ex.states.shape == (8, 3)
    chains, steps = 4000, 200
    # Distance to stationarity after `steps` steps is at most SLEM^steps / sqrt(min π): make it
    # negligible against the sampling noise so that the chi-square below tests the sampler.
    slem = ex.mixing["slem"]
    assert slem ** steps / np.sqrt(ex.stationary.min()) < 1e-6
    run = dlp_mcmc.sample(model, "dmala", step_size=0.4, chains=chains, steps=steps, seed=11)
    index = {tuple(s): i for i, s in enumerate(ex.states.tolist())}
    counts = np.bincount([index[tuple(x)] for x in run.final.tolist()], minlength=8)
    expected = chains * ex.stationary
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    # Chains are independent (own streams), so chi2 ~ χ²(7) under the exact law; 24.32 is
    # its 0.999 quantile: false-failure rate 1e-3 (and fixed seed, so the outcome is fixed).
    assert chi2 < 24.32, (chi2, counts, expected)
    # Marginals: P(s_i = +1) within 4.5 standard errors (each < 7e-6 two-sided).
    m = ex.marginals()[1]
    se = np.sqrt(m * (1 - m) / chains)
    assert np.all(np.abs((run.final == 1).mean(axis=0) - m) < 4.5 * se)


def test_numpy_callback_gives_the_same_chains_as_the_builtin_model(examples):
    # The callback runs on the runner's thread while this (main) thread waits inside
    # dlp_mcmc.sample: it could not take the GIL, and the run would hang, if dlp_mcmc.sample held it.
    builtin = dlp_mcmc.Model.from_file(examples / "ising-3.json")
    twin = dlp_mcmc.Model.from_callable(3, "spin", ising_f_grad)
    x = np.array([[-1, -1, -1], [1, -1, 1], [1, 1, -1]])
    f1, g1 = builtin.log_density_grad(x)
    f2, g2 = twin.log_density_grad(x)
    np.testing.assert_allclose(f2 - f2[0], f1 - f1[0], atol=1e-12)
    np.testing.assert_allclose(g2, g1, atol=1e-12)
    for sampler, step in [("dmala", 0.4), ("dula", 0.3), ("gibbs", None)]:
        a = dlp_mcmc.sample(builtin, sampler, step_size=step, chains=16, steps=300, seed=5, trace=True)
        b = dlp_mcmc.sample(twin, sampler, step_size=step, chains=16, steps=300, seed=5, trace=True)
        np.testing.assert_array_equal(a.trace, b.trace, err_msg=sampler)
        np.testing.assert_array_equal(a.accept_rate, b.accept_rate)


def test_a_seed_gives_the_same_arrays_for_any_thread_count(examples):
    model = dlp_mcmc.Model.from_file(examples / "ising-4x4.json")
    runs = [dlp_mcmc.sample(model, "dmala", chains=10, steps=100, seed=3, threads=t, trace=True, thin=10)
            for t in (1, 2, 3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.final, runs[0].final)
        np.testing.assert_array_equal(r.trace, runs[0].trace)
        np.testing.assert_array_equal(r.changed, runs[0].changed)


def test_trace_shape_diagnostics_and_init(examples):
    model = dlp_mcmc.Model.from_file(examples / "ising-4x4.json")
    run = dlp_mcmc.sample(model, "dmala", step_size=0.4, chains=4, steps=100, burn_in=20, thin=5, seed=1, trace=True)
    assert run.trace.shape == (16, 4, 16)
    assert run.trace_steps.tolist() == list(range(25, 101, 5))
    np.testing.assert_array_equal(run.trace[-1], run.final)
    assert set(np.unique(run.final)) <= {-1, 1}
    assert run.accept_rate.shape == (4,) and np.all((0 <= run.accept_rate) & (run.accept_rate <= 1))
    assert np.all(run.changed >= 0)
    assert run.ess(lambda x: x.sum(axis=1)) > 0
    assert np.isfinite(run.rhat(lambda x: x.sum(axis=1)))
    zeros = dlp_mcmc.sample(model, "dmala", step_size=0.4, chains=2, steps=0, init="zeros")
    np.testing.assert_array_equal(zeros.final, -np.ones((2, 16), dtype=np.int64))
    start = np.ones((2, 16), dtype=np.int64)
    np.testing.assert_array_equal(dlp_mcmc.sample(model, "dmala", step_size=0.4, chains=2, steps=0, init=start).final, start)


def test_the_cli_and_the_package_draw_the_same_final_states(dlp_bin, examples, tmp_path):
    from conftest import read_rows, run_cli
    out = tmp_path / "final.csv"
    r = run_cli(dlp_bin, "sample", "--model", str(examples / "ising-4x4.json"), "--sampler", "dmala",
                "--step-size", "0.4", "--chains", "8", "--steps", "50", "--seed", "9", "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    cli = read_rows(out)
    py = dlp_mcmc.sample(dlp_mcmc.Model.from_file(examples / "ising-4x4.json"), "dmala", step_size=0.4, chains=8, steps=50,
                    seed=9)
    np.testing.assert_array_equal(py.final, cli)


# pas-2 is flagged as reducible on bits; its warning is tested in test_gof.py.
@pytest.mark.filterwarnings("ignore:pas-2 flips an even number:RuntimeWarning")
def test_every_registered_sampler_is_available_by_name(examples):
    names = dlp_mcmc.samplers()
    assert "dmala" in names and "gwg-<k>" in names
    ising = dlp_mcmc.Model.ising(J=J3, b=B3)
    rbm = dlp_mcmc.Model.from_file(examples / "rbm-small.json")
    logistic = dlp_mcmc.Model.from_file(examples / "logistic-spin.json")
    for name in names:
        # A wrapper (`pt-<K>:<sampler>`) around gwg; every integer part 2.
        concrete = re.sub(r"<[^>]+>", "2", name.replace("<sampler>", "gwg"))
        options = dlp_mcmc.sampler_options(concrete)
        kwargs = {"chains": 2, "steps": 3, "seed": 0}
        model = logistic if name.startswith("sg-") else ising
        given = {"step_size": 0.2, "preconditioner": [1.0] * model.d, "batch_size": 20}
        kwargs.update({k: v for k, v in given.items() if k in options})
        # An option the sampler does not take is refused, naming what it takes.
        with pytest.raises(ValueError, match=f"does not apply to {concrete} \\(it takes"):
            dlp_mcmc.sample(model, concrete, chains=1, steps=1, no_such_option=1)
        if name == "block-gibbs":
            model = rbm
        run = dlp_mcmc.sample(model, concrete, **kwargs)
        assert run.final.shape == (2, model.d), name


def test_step_size_auto_adapts_like_dlp_sample(dlp_bin, examples, tmp_path):
    from conftest import read_rows, run_cli
    out = tmp_path / "final.csv"
    r = run_cli(dlp_bin, "sample", "--model", str(examples / "ising-4x4.json"), "--sampler", "dmala",
                "--chains", "8", "--steps", "200", "--seed", "2", "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    header = open(out).readline()
    model = dlp_mcmc.Model.from_file(examples / "ising-4x4.json")
    run = dlp_mcmc.sample(model, "dmala", step_size="auto", chains=8, steps=200, seed=2, trace=True)
    # The CLI adapts by default for dmala and writes the adapted α in its comment line.
    assert f"--step-size {run.step_size} " in header, (header, run.step_size)
    np.testing.assert_array_equal(run.final, read_rows(out))
    assert run.warmup_steps == 100 and run.trace_steps[0] == 101
    with pytest.raises(ValueError, match="step-size adaptation needs a Metropolis-adjusted sampler"):
        dlp_mcmc.sample(model, "dula", step_size="auto", chains=2, steps=10)
    with pytest.raises(ValueError, match=r"sampler option step_size does not apply to gibbs \(it takes no options\)"):
        dlp_mcmc.sample(model, "gibbs", step_size="auto", chains=2, steps=10)


def test_categorical_callback_with_one_hot_gradient_matches_the_builtin_model():
    logits = np.log(np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8]]))

    def f_grad(x):
        f = logits[np.arange(3), x].sum(axis=1)
        return f, np.broadcast_to(logits, (len(x), 3, 3))

    builtin = dlp_mcmc.Model.categorical(logits=logits)
    twin = dlp_mcmc.Model.from_callable(3, "categorical", f_grad, k=3)
    assert twin.values == [0, 1, 2]
    for sampler in ("dmala", "dula", "gibbs"):
        step = None if sampler == "gibbs" else 0.5
        a = dlp_mcmc.sample(builtin, sampler, step_size=step, chains=8, steps=200, seed=4, trace=True)
        b = dlp_mcmc.sample(twin, sampler, step_size=step, chains=8, steps=200, seed=4, trace=True)
        np.testing.assert_array_equal(a.trace, b.trace, err_msg=sampler)


def test_parallel_tempering_takes_a_ladder_and_reports_the_one_used():
    ising = dlp_mcmc.Model.ising(J=J3, b=B3)
    run = dlp_mcmc.sample(ising, "pt-3:gwg", chains=4, steps=50, seed=1, progress=False, ladder=[1.0, 0.5, 0.2])
    assert run.ladder == [1.0, 0.5, 0.2] and run.sampler == "pt-3:gwg"
    assert run.final.shape == (4, 3) and set(np.unique(run.final)) <= {-1, 1}
    # No ladder and an adapting inner sampler: the warm-up adapts α and the ladder, whose ends
    # stay at 1 and the default hottest ½.
    # Two warm-up windows of 100 steps: one for α, one for the ladder.
    adapted = dlp_mcmc.sample(ising, "pt-2:dmala", chains=4, steps=400, seed=1, progress=False, step_size="auto")
    assert len(adapted.ladder) == 2 and adapted.ladder[0] == 1.0 and adapted.ladder[1] == pytest.approx(0.5)
    assert adapted.step_size > 0 and adapted.warmup_steps == 200
    with pytest.raises(ValueError, match="decrease strictly"):
        dlp_mcmc.sample(ising, "pt-2:gwg", chains=2, steps=5, seed=0, progress=False, ladder=[1.0, 1.5])
    with pytest.raises(ValueError, match="does not apply to gwg"):
        dlp_mcmc.sample(ising, "gwg", chains=2, steps=5, seed=0, progress=False, ladder=[1.0, 0.5])
