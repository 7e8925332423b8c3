"""Sample.to_arviz: ArviZ (>= 1.0) DataTree with posterior (states, statistics) and
sample_stats (acceptance probability, accepted, coordinates changed, lp), whose ESS and R-hat
by ArviZ's own functions equal the package's ess()/rhat() to 1e-10."""

import numpy as np
import pytest

import dlp_mcmc

az = pytest.importorskip("arviz", minversion="1.0", reason="pip install 'arviz>=1.0' (Python >= 3.12)")
azs = pytest.importorskip("arviz_stats", reason="pip install 'arviz>=1.0'")


def magnetisation(x):
    return x.sum(axis=1)


@pytest.fixture(scope="module")
def run(examples):
    model = dlp_mcmc.Model.from_file(examples / "ising-4x4.json")
    return dlp_mcmc.sample(model, "dmala", step_size=0.4, chains=4, steps=600, burn_in=100, thin=2, seed=3,
                           trace=True, progress=False)


def test_structure(run):
    dt = run.to_arviz({"m": magnetisation})
    post, stats = dt["posterior"], dt["sample_stats"]
    kept = run.trace.shape[0]
    assert post["x"].dims == ("chain", "draw", "coordinate") and post["x"].shape == (4, kept, 16)
    np.testing.assert_array_equal(post["x"].values, run.trace.transpose(1, 0, 2))
    np.testing.assert_array_equal(post["m"].values, run.trace.sum(axis=2).T)
    np.testing.assert_array_equal(post["draw"].values, run.trace_steps)
    assert set(stats.data_vars) == {"acceptance_rate", "accepted", "changed", "lp"}
    assert post.attrs["sampler"] == "dmala" and post.attrs["inference_library"] == "dlp-mcmc"
    # lp is f of the kept state; a rejected step changes nothing.
    lp = run.model.log_density(run.trace[5])
    np.testing.assert_allclose(stats["lp"].values[:, 5], lp, rtol=0, atol=0)
    acc, changed = stats["accepted"].values, stats["changed"].values
    assert np.all(changed[~acc] == 0) and np.all((0 <= stats["acceptance_rate"].values)
                                                  & (stats["acceptance_rate"].values <= 1))
    summary = az.summary(dt, var_names=["m"])
    assert "ess_bulk" in summary.columns and "r_hat" in summary.columns


def test_every_step_kept_gives_the_per_chain_means():
    J = np.array([[0, .5, -.3], [.5, 0, .2], [-.3, .2, 0]])
    run = dlp_mcmc.sample(dlp_mcmc.Model.ising(J), "dmala", step_size=0.6, chains=3, steps=50, seed=1, trace=True,
                          progress=False)
    stats = run.to_arviz(states=False)["sample_stats"]
    np.testing.assert_allclose(stats["acceptance_rate"].values.mean(axis=1), run.accept_prob, rtol=1e-12)
    np.testing.assert_allclose(stats["accepted"].values.mean(axis=1), run.accept_rate, rtol=1e-12)
    np.testing.assert_allclose(stats["changed"].values.mean(axis=1), run.changed, rtol=1e-12)


def test_ess_and_rhat_equal_arviz(run):
    dt = run.to_arviz({"m": magnetisation, "x0": lambda x: x[:, 0]})
    for name, fn in (("m", magnetisation), ("x0", lambda x: x[:, 0])):
        ess = float(azs.ess(dt, var_names=[name], method="bulk")[name])
        rhat = float(azs.rhat(dt, var_names=[name], method="rank")[name])
        assert run.ess(fn) == pytest.approx(ess, rel=1e-10), name
        assert run.rhat(fn) == pytest.approx(rhat, rel=1e-10), name


def test_to_arviz_needs_the_trace(examples):
    run = dlp_mcmc.sample(dlp_mcmc.Model.from_file(examples / "ising-3.json"), "gibbs", chains=2, steps=3,
                          progress=False)
    with pytest.raises(ValueError, match="to_arviz needs the trace"):
        run.to_arviz()


def test_dlp_sample_format_cmdstan_round_trip(dlp_bin, examples, tmp_path):
    """`dlp sample --format cmdstan` writes CmdStan CSVs (lp__, accept_stat__, x.1, …) that
    CmdStanPy reads and `arviz.from_cmdstanpy` converts (ArviZ 1.x has no from_cmdstan): the
    same draws, lp and acceptance as the package's run of the same seed, and the same ESS/R-hat."""
    cmdstanpy = pytest.importorskip("cmdstanpy", reason="pip install cmdstanpy")
    from conftest import run_cli
    path = examples / "ising-4x4.json"
    r = run_cli(dlp_bin, "sample", "--model", str(path), "--sampler", "dmala", "--step-size", "0.4", "--chains", "4",
                "--steps", "600", "--burn-in", "100", "--thin", "2", "--seed", "3", "--out", str(tmp_path / "final.csv"),
                "--trace", str(tmp_path / "run.csv"), "--format", "cmdstan", "--quiet")
    assert r.returncode == 0, r.stderr
    files = [tmp_path / f"run_{c}.csv" for c in range(1, 5)]
    fit = cmdstanpy.from_csv([str(f) for f in files])
    dt = az.from_cmdstanpy(posterior=fit)
    run = dlp_mcmc.sample(dlp_mcmc.Model.from_file(path), "dmala", step_size=0.4, chains=4, steps=600, burn_in=100,
                          thin=2, seed=3, trace=True, progress=False)
    np.testing.assert_array_equal(dt["posterior"]["x"].values, run.trace.transpose(1, 0, 2))
    mine = run.to_arviz()["sample_stats"]
    np.testing.assert_array_equal(dt["sample_stats"]["lp"].values, mine["lp"].values)
    np.testing.assert_array_equal(dt["sample_stats"]["acceptance_rate"].values, mine["acceptance_rate"].values)
    m = dt["posterior"]["x"].sum("x_dim_0").rename("m").to_dataset()
    assert float(azs.ess(m, method="bulk")["m"]) == pytest.approx(run.ess(magnetisation), rel=1e-10)
    assert float(azs.rhat(m, method="rank")["m"]) == pytest.approx(run.rhat(magnetisation), rel=1e-10)
