"""dlp_mcmc.gof on arrays gives the statistic and p-value that `dlp gof` gives on files holding
the same rows, bit for bit (same code, same seeded streams)."""

import json

import numpy as np
import pytest

import dlp_mcmc
from conftest import read_rows, run_cli


def cli_gof(dlp_bin, *args):
    r = run_cli(dlp_bin, "gof", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("test,extra,kwargs", [
    ("kdsd", [], {}),
    ("kdsd", ["--statistic", "v"], {"statistic": "v"}),
    ("kdsd", ["--kernel", "hamming-linear"], {"kernel": "hamming_linear"}),
    ("gfksd", [], {}),
    ("gfksd", ["--surrogate", "relaxed"], {"surrogate": "relaxed"}),
    ("kdsd", ["--bootstrap", "model"], {"bootstrap": "model"}),
    ("gfksd", ["--bootstrap", "model"], {"bootstrap": "model"}),
    ("mmd", [], {}),
])
def test_p_values_equal_dlp_gof_on_the_same_files(dlp_bin, examples, test, extra, kwargs):
    model_path, samples_path = examples / "ising-4x4.json", examples / "ising-4x4-samples.csv"
    cli = cli_gof(dlp_bin, "--test", test, "--samples", str(samples_path), "--model", str(model_path),
                  "--reps", "200", "--seed", "4", *extra)
    model = dlp_mcmc.Model.from_file(model_path)
    fn = {"kdsd": dlp_mcmc.gof.kdsd, "gfksd": dlp_mcmc.gof.gfksd, "mmd": dlp_mcmc.gof.mmd}[test]
    if test == "mmd":
        py = fn(read_rows(samples_path), model=model, reps=200, seed=4, **kwargs)
    else:
        py = fn(read_rows(samples_path), model, reps=200, seed=4, **kwargs)
    assert isinstance(py, dlp_mcmc.gof.GofResult)
    assert py.statistic == cli["statistic"]
    assert py.p_value == cli["p_value"]
    assert py.reject == cli["reject"]
    for key in ("test", "statistic_kind", "alpha", "n", "d", "seed", "warnings"):
        assert getattr(py, key) == cli[key], key
    for key in ("kernel", "bootstrap"):
        assert py.details[key] == cli[key], key


def test_mmd_against_a_reference_array_equals_dlp_gof_with_reference_file(dlp_bin, examples, tmp_path):
    rows = read_rows(examples / "ising-4x4-samples.csv")
    header = ",".join(f"x{i}" for i in range(16))
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    np.savetxt(a, rows[:120], fmt="%d", delimiter=",", header=header, comments="")
    np.savetxt(b, rows[120:], fmt="%d", delimiter=",", header=header, comments="")
    cli = cli_gof(dlp_bin, "--test", "mmd", "--samples", str(a), "--reference", str(b), "--reps", "300", "--seed", "2")
    py = dlp_mcmc.gof.mmd(rows[:120], rows[120:], reps=300, seed=2)
    assert (py.statistic, py.p_value, py.details["m"]) == (cli["statistic"], cli["p_value"], cli["m"])


def test_exact_equals_dlp_exact(dlp_bin, examples):
    r = run_cli(dlp_bin, "exact", "--model", str(examples / "potts-3.json"), "--sampler", "dmala", "--step-size", "0.5")
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    py = dlp_mcmc.exact(dlp_mcmc.Model.from_file(examples / "potts-3.json"), "dmala", step_size=0.5)
    assert isinstance(py.stationary, np.ndarray) and py.stationary.tolist() == cli["stationary"]
    assert py.target.tolist() == cli["target"]
    assert py.states.tolist() == cli["states"]
    assert py.total_variation == cli["total_variation"]
    assert py.report["schema"] == cli["schema"] == "dlp.exact.report.v2"
    # The spectral quantities come from an eigensolver: equal to rounding, not bitwise.
    for key, value in cli["mixing"].items():
        expected = pytest.approx(value, rel=1e-12, abs=1e-12) if isinstance(value, float) else value
        assert py.mixing[key] == expected, key


def test_reducible_pas_has_no_single_law_and_warns():
    # The 4-spin chain with a strong field: pas-2 keeps the parity of the number of ones.
    J = 0.2 * (np.eye(4, k=1) + np.eye(4, k=-1))
    model = dlp_mcmc.Model.ising(J, b=np.full(4, 1.5), domain="spin")
    ex = dlp_mcmc.exact(model, "pas-2")
    assert not ex.irreducible and ex.verdict == "reducible: 2 closed classes (parity)"
    assert ex.stationary is None and ex.total_variation is None
    with pytest.raises(ValueError, match="no unique stationary law"):
        ex.marginals()
    for c in ex.closed_classes:
        law = np.asarray(c["stationary"])
        assert law.min() >= 0 and abs(law.sum() - 1) < 1e-12
    assert abs(ex.uniform_start_limit.sum() - 1) < 1e-12
    mix = dlp_mcmc.exact(model, "pas", step_size=2.0)
    assert mix.irreducible and mix.aperiodic and mix.total_variation < 1e-10
    with pytest.warns(RuntimeWarning, match="even number of sites"):
        dlp_mcmc.sample(model, "pas-2", step_size=None, chains=2, steps=2)
