"""Bad input raises ValueError or TypeError with one line (the `dlp` command's line where
the command has the same check), never a Rust panic."""

import _thread
import threading

import numpy as np
import pytest

import dlp_mcmc
from conftest import run_cli


@pytest.fixture(scope="module")
def ising(examples):
    return dlp_mcmc.Model.from_file(examples / "ising-4x4.json")


def cli_error(dlp_bin, *args):
    r = run_cli(dlp_bin, *args)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line
    return line[len("error: "):]


def test_unknown_sampler_message_is_the_cli_line(dlp_bin, examples, ising, tmp_path):
    line = cli_error(dlp_bin, "sample", "--model", str(examples / "ising-4x4.json"), "--sampler", "nope",
                     "--chains", "2", "--steps", "2", "--out", str(tmp_path / "o.csv"))
    with pytest.raises(ValueError) as e:
        dlp_mcmc.sample(ising, "nope", chains=2, steps=2)
    assert str(e.value) == line


def test_bad_model_file_message_is_the_cli_line(dlp_bin, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "dlp.model.v1", "kind": "ising", "d": 2, "J": [[0, 1], [2, 0]]}')
    line = cli_error(dlp_bin, "exact", "--model", str(bad), "--sampler", "gibbs")
    with pytest.raises(ValueError) as e:
        dlp_mcmc.Model.from_file(bad)
    assert str(e.value) == line
    with pytest.raises(ValueError, match="no-such.json"):
        dlp_mcmc.Model.from_file(tmp_path / "no-such.json")


def test_wrong_shapes_and_dtypes(ising):
    x = np.ones((20, 16), dtype=np.int64)
    with pytest.raises(ValueError, match=r"samples has 3 columns, the model has d = 16 coordinates"):
        dlp_mcmc.gof.kdsd(x[:, :3], ising)
    with pytest.raises(ValueError, match=r"must have 2 dimensions"):
        dlp_mcmc.gof.kdsd(x[0], ising)
    with pytest.raises(TypeError, match=r"integers"):
        dlp_mcmc.gof.kdsd(x.astype(np.float64), ising)
    with pytest.raises(ValueError, match=r"init has 3 rows, expected chains = 4"):
        dlp_mcmc.sample(ising, step_size=0.4, chains=4, steps=1, init=np.ones((3, 16), dtype=np.int64))
    with pytest.raises(ValueError, match=r"samples has 5 rows; at least 10"):
        dlp_mcmc.gof.kdsd(x[:5], ising)
    with pytest.raises(TypeError):
        dlp_mcmc.sample("not a model")
    with pytest.raises(ValueError, match="chains must be at least 1"):
        dlp_mcmc.sample(ising, chains=0)


def test_values_outside_the_domain(ising):
    x = np.ones((20, 16), dtype=np.int64)
    x[3, 5] = 0
    with pytest.raises(ValueError) as e:
        dlp_mcmc.gof.kdsd(x, ising)
    assert str(e.value) == "samples[3, 5] = 0 is outside the spin domain [-1, 1]"
    with pytest.raises(ValueError, match=r"init\[3, 5\] = 0 is outside"):
        dlp_mcmc.sample(ising, step_size=0.4, chains=20, steps=1, init=x)


def test_nan_parameters_and_bad_numbers(ising):
    # The model's own check (a model file's message, without the file name).
    with pytest.raises(ValueError, match=r"J\[0\]\[1\] is not a finite number: NaN"):
        dlp_mcmc.Model.ising(J=[[0, np.nan], [np.nan, 0]])
    with pytest.raises(ValueError, match="step_size must be a finite number > 0, got NaN"):
        dlp_mcmc.sample(ising, step_size=float("nan"), chains=2, steps=1)
    with pytest.raises(ValueError, match="statistic must be u or v"):
        dlp_mcmc.gof.kdsd(np.ones((20, 16), dtype=np.int64), ising, statistic="w")


def test_callback_returning_the_wrong_shape():
    def short_f(x):
        return np.zeros(len(x) - 1), np.zeros(x.shape)

    def bad_grad(x):
        return np.zeros(len(x)), np.zeros((len(x), 2))

    def not_a_pair(x):
        return np.zeros(len(x))

    for fn, message in [(short_f, r"log_density_grad returned f of shape \[3\], expected \(4,\)"),
                        (bad_grad, r"log_density_grad returned grad of shape \[4, 2\], expected \[4, 3\]"),
                        (not_a_pair, r"must return a pair \(f, grad\)")]:
        m = dlp_mcmc.Model.from_callable(3, "binary", fn)
        with pytest.raises(ValueError, match=message):
            dlp_mcmc.sample(m, "dmala", chains=4, steps=5)


def test_callback_raising_stops_the_run_with_a_value_error():
    calls = []

    def boom(x):
        calls.append(len(x))
        if len(calls) == 3:
            raise ZeroDivisionError("division by zero")
        return np.zeros(len(x)), np.zeros(x.shape)

    m = dlp_mcmc.Model.from_callable(3, "spin", boom)
    with pytest.raises(ValueError, match="log_density_grad raised ZeroDivisionError: division by zero") as e:
        dlp_mcmc.sample(m, "dmala", chains=4, steps=100)
    assert isinstance(e.value.__cause__, ZeroDivisionError)
    # One call to start the chains and one per step (with every chain that moved), and the
    # run stopped at the failing one.
    assert len(calls) == 3 and calls[0] == 4 and all(n <= 4 for n in calls)


def test_keyboard_interrupt_stops_a_run(ising):
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            dlp_mcmc.sample(ising, "dmala", step_size=0.4, chains=4, steps=10**9, progress=False)
    finally:
        timer.cancel()


def test_ctrl_c_inside_a_callback_is_a_keyboard_interrupt():
    def interrupted(x):
        raise KeyboardInterrupt

    m = dlp_mcmc.Model.from_callable(3, "binary", interrupted)
    with pytest.raises(KeyboardInterrupt):
        dlp_mcmc.sample(m, "dmala", chains=2, steps=10)


@pytest.mark.parametrize("sampler,step_size", [("dmala", 0.5), ("gibbs", None), ("gwg", None)])
def test_callback_raising_inside_exact_rows_is_a_value_error(sampler, step_size):
    # The exact rows evaluate every state; the callback fails on one of them. The error comes
    # back as the run's does (before: the transition row panicked).
    def fails_at_ones(x):
        if (x == 1).all(axis=1).any():
            raise ZeroDivisionError("division by zero")
        return x.sum(axis=1) * 0.3, np.full(x.shape, 0.3)

    m = dlp_mcmc.Model.from_callable(3, "binary", fails_at_ones)
    with pytest.raises(ValueError, match="log_density_grad raised ZeroDivisionError: division by zero") as e:
        dlp_mcmc.exact(m, sampler, step_size=step_size)
    assert isinstance(e.value.__cause__, ZeroDivisionError)
