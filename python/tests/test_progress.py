"""The progress bar: moved from the Rust side to the chain-steps run (warm-up included), at a
bounded rate, off with progress=False; Ctrl-C stops the run cleanly and says how far it got
(test_interrupt.py checks the partial result it carries)."""

import _thread
import re
import threading
import time

import numpy as np
import pytest

import dlp_mcmc

J3 = np.array([[0, .5, -.3], [.5, 0, .2], [-.3, .2, 0]])


class Recorder:
    """Stands in for the tqdm bar: records every position it is moved to, and when."""

    made = []

    def __init__(self, total, desc):
        self.total, self.desc, self.moves, self.closed = total, desc, [], False
        Recorder.made.append(self)

    def to(self, done):
        self.moves.append((time.monotonic(), done))

    def close(self):
        self.closed = True


@pytest.fixture
def recorder(monkeypatch):
    Recorder.made = []
    monkeypatch.setattr(dlp_mcmc, "_Bar", Recorder)
    return Recorder


def test_the_bar_ends_at_every_chain_step_warm_up_included(recorder):
    model = dlp_mcmc.Model.ising(J3)
    run = dlp_mcmc.sample(model, "dmala", chains=5, steps=400, seed=1)  # adapts over 200 steps
    assert run.warmup_steps == 200
    (bar,) = recorder.made
    assert bar.total == 5 * 400 and bar.desc == "dmala ×5" and bar.closed
    assert bar.moves[-1][1] == 5 * 400
    dlp_mcmc.sample(model, "dmala", chains=5, steps=10, step_size=0.4, seed=1, progress=False)
    assert len(recorder.made) == 1


def test_ctrl_c_stops_cleanly_and_says_how_far_it_got(recorder):
    model = dlp_mcmc.Model.ising(J3)
    timer = threading.Timer(1.0, _thread.interrupt_main)
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as e:
            dlp_mcmc.sample(model, "dmala", step_size=0.4, chains=4, steps=10**12, seed=0, threads=1)
    finally:
        timer.cancel()
    elapsed = time.monotonic() - t0
    m = re.fullmatch(r"sampling interrupted after (\d+) of 1000000000000 steps \(every chain; 0 of them warm-up\); "
                     r"the exception's \.partial holds the result of those steps", str(e.value))
    assert m, str(e.value)
    assert e.value.partial.steps == int(m.group(1)) > 0
    # The bar counts chain-steps: all 4 chains ran those steps.
    ran = 4 * e.value.partial.steps
    (bar,) = recorder.made
    assert bar.closed
    done = [d for _, d in bar.moves]
    assert done == sorted(done) and done[-1] == ran
    # At most one move per 50 ms tick, plus the last one after the run.
    assert len(bar.moves) <= elapsed / 0.05 + 2, (len(bar.moves), elapsed)
    # The package still works after the interrupt.
    assert dlp_mcmc.sample(model, "dmala", step_size=0.4, chains=2, steps=3, progress=False).final.shape == (2, 3)


def test_the_tqdm_bar_shows_the_count(capsys):
    bar = dlp_mcmc._Bar(10, "dmala ×2")
    bar.to(4)
    time.sleep(0.6)  # the bar appears after half a second
    bar.to(10)
    bar.close()
    err = capsys.readouterr().err
    assert "dmala ×2" in err and re.search(r"100%.*10(\.0)?/10(\.0)?", err), err
