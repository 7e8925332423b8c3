"""Ctrl-C during dlp_mcmc.sample: the run stops at the end of a step and raises
SamplingInterrupted (a KeyboardInterrupt) carrying the partial result, which must equal the
same seed's uninterrupted run of the steps that completed, array for array (a real SIGINT to
this process, and _thread.interrupt_main as Ctrl-C is simulated; built-in models on two
threads, where the tasks stand at different steps when the interrupt comes, and a Python
callback model interrupted from inside its own call)."""

import _thread
import os
import re
import signal
import threading

import numpy as np
import pytest

import dlp_mcmc

J3 = np.array([[0, .5, -.3], [.5, 0, .2], [-.3, .2, 0]])
B3 = np.array([0.1, -0.2, 0.3])
FIELDS = ["final", "trace", "trace_steps", "accept_rate", "accept_prob", "changed", "step_accepted",
          "step_accept_prob", "step_changed"]


def sigint():
    os.kill(os.getpid(), signal.SIGINT)


def interrupted(run, after_s, how):
    """Runs `run()` with `how` fired `after_s` seconds in; returns the SamplingInterrupted.
    `run` never ends by itself, so any other outcome fails the test."""
    timer = threading.Timer(after_s, how)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as e:
            run()
    finally:
        timer.cancel()
    assert isinstance(e.value, dlp_mcmc.SamplingInterrupted), repr(e.value)
    return e.value


@pytest.mark.parametrize("how", [sigint, _thread.interrupt_main], ids=["SIGINT", "interrupt_main"])
def test_ctrl_c_returns_the_steps_that_ran_equal_to_the_uninterrupted_prefix(how):
    model = dlp_mcmc.Model.ising(J3, b=B3)
    args = dict(step_size=0.4, chains=8, seed=3, threads=2, trace=True, thin=1000, progress=False)
    e = interrupted(lambda: dlp_mcmc.sample(model, "dmala", steps=10**12, **args), 0.5, how)
    p = e.partial
    s = p.steps
    assert p.interrupted and 0 < s < 10**12
    m = re.fullmatch(r"sampling interrupted after (\d+) of 1000000000000 steps \(every chain; 0 of them warm-up\); "
                     r"the exception's \.partial holds the result of those steps", str(e))
    assert m and int(m.group(1)) == s, str(e)
    kept = s // 1000
    assert p.final.shape == (8, 3) and p.trace.shape == (kept, 8, 3)
    assert p.step_accepted.shape == p.step_accept_prob.shape == p.step_changed.shape == (kept, 8)
    assert list(p.trace_steps) == [1000 * (k + 1) for k in range(kept)]
    assert p.accept_rate.shape == p.accept_prob.shape == p.changed.shape == (8,)
    full = dlp_mcmc.sample(model, "dmala", steps=s, **args)
    assert not full.interrupted and full.steps == s
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(p, name), getattr(full, name), err_msg=name)
    # And the package runs on after it.
    assert dlp_mcmc.sample(model, "dmala", step_size=0.4, chains=2, steps=3, progress=False).final.shape == (2, 3)


def test_ctrl_c_inside_a_callback_model_keeps_every_completed_step():
    calls = [0]

    def f_grad(x):
        calls[0] += 1
        if calls[0] == 300:
            _thread.interrupt_main()  # the signal is handled by the waiting main thread
        s = x.astype(np.float64)
        return 0.5 * np.einsum("ni,ij,nj->n", s, J3, s) + s @ B3, s @ J3 + B3

    model = dlp_mcmc.Model.from_callable(3, "spin", f_grad)
    args = dict(step_size=0.4, chains=4, seed=5, trace=True, progress=False)
    with pytest.raises(KeyboardInterrupt) as e:
        dlp_mcmc.sample(model, "dmala", steps=10**9, **args)
    assert isinstance(e.value, dlp_mcmc.SamplingInterrupted)
    p = e.value.partial
    # DMALA calls the energy once per step (and once at the start): the 300th call was step 299.
    assert p.interrupted and p.steps >= 299
    assert p.trace.shape == (p.steps, 4, 3) and list(p.trace_steps) == list(range(1, p.steps + 1))
    full = dlp_mcmc.sample(model, "dmala", steps=p.steps, **args)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(p, name), getattr(full, name), err_msg=name)


def test_ctrl_c_in_the_warm_up_raises_with_no_partial():
    model = dlp_mcmc.Model.ising(J3, b=B3)
    e = interrupted(lambda: dlp_mcmc.sample(model, "dmala", step_size="auto", burn_in=10**12, steps=10**12,
                                            chains=4, seed=1, progress=False), 0.5, sigint)
    assert e.partial is None
    assert str(e) == ("sampling interrupted during the step-size warm-up; nothing is kept before the warm-up ends "
                      "(.partial is None)")
