"""Property tests (hypothesis) of the Python argument layer: any argument values given to
``dlp_mcmc.sample``, ``dlp_mcmc.Model.from_dict``/``from_file`` and ``dlp_mcmc.gof.kdsd`` either work or
raise ``ValueError``/``TypeError`` whose message is one line without control characters;
never another exception (an ``OverflowError`` from the Rust conversion, a panic), never a
hang (hypothesis' deadline bounds each example)."""

import json
import math
import unicodedata

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dlp_mcmc

# A few dozen examples per test: the short run stays within seconds (`just test-python`).
FAST = settings(max_examples=30, deadline=5000, suppress_health_check=[HealthCheck.too_slow], derandomize=True,
                database=None)

ISING = dlp_mcmc.Model.from_dict({"kind": "ising", "d": 3, "J": [[0, .5, -.3], [.5, 0, .2], [-.3, .2, 0]], "b": [.1, -.2, .3]})


def one_line(e: BaseException) -> None:
    """The rejection is a ValueError/TypeError with a one-line message, no control characters."""
    assert isinstance(e, (ValueError, TypeError)), f"{type(e).__name__}: {e}"
    m = str(e)
    assert m.strip(), f"empty message from {type(e).__name__}"
    bad = [c for c in m if unicodedata.category(c) == "Cc"]
    assert not bad, f"control characters {bad!r} in {m!r}"


# Values of every type at the edges: integers beyond 64 bits, negative, bools, non-finite
# floats, strings with line breaks and escapes, containers.
odd = st.one_of(
    st.sampled_from([0, 1, 2, -1, 2**63, 2**64, -2**63 - 1, 10**30, True, False, None]),
    st.sampled_from([0.0, -0.0, 0.5, -1.5, 1e308, math.inf, -math.inf, math.nan, 2.0**70]),
    st.sampled_from(["", "random", "zeros", "auto", "a\nb", "\x1b[31m", "\x00", "é", "u", "v"]),
    st.text(max_size=8),
    st.lists(st.integers(-3, 3), max_size=3),
    st.just({}),
)

# Small valid counts (so that a run that is accepted is quick) or anything odd.
count = st.one_of(st.integers(0, 3), odd)


def call(f, *args, **kwargs):
    try:
        f(*args, **kwargs)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - any other exception type is the failure
        one_line(e)


@FAST
@given(sampler=st.one_of(st.sampled_from(["gibbs", "dmala", "gwg", "nope", "a\nb", ""]), odd),
       step_size=odd, chains=count, steps=count, burn_in=count, thin=count, seed=odd, threads=count, init=odd)
def test_sample_arguments(sampler, step_size, chains, steps, burn_in, thin, seed, threads, init):
    # Accepted runs must stay small: huge valid counts are a long run, not a bad argument.
    for v in (chains, steps, burn_in, thin, threads):
        if isinstance(v, int) and not isinstance(v, bool) and v > 3:
            return
    call(dlp_mcmc.sample, ISING, sampler, step_size=step_size, chains=chains, steps=steps, burn_in=burn_in, thin=thin,
         seed=seed, threads=threads, init=init)


keys = st.sampled_from(["kind", "d", "domain", "K", "values", "J", "b", "h", "W", "c", "log_prob", "probs", "logits",
                        "X", "y", "hidden", "tau", "minibatch", "lattice", "edges", "name", "a\nb", "schema"])
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
              st.sampled_from(["ising", "potts", "rbm", "spin", "binary", "categorical", "a\nb"])),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


@FAST
@given(spec=st.dictionaries(keys, json_values, max_size=6), name=st.sampled_from(["<dict>", "m.json", "a\nb"]))
def test_model_from_dict(spec, name):
    call(dlp_mcmc.Model.from_dict, spec, name)


@FAST
@given(data=st.binary(max_size=200), ext=st.sampled_from([".json", ".toml", ".txt"]))
def test_model_from_file(tmp_path_factory, data, ext):
    p = tmp_path_factory.mktemp("m") / f"model{ext}"
    p.write_bytes(data)
    call(dlp_mcmc.Model.from_file, p)


@FAST
@given(statistic=odd, bootstrap=odd, reps=count, alpha=odd, seed=odd, kernel=odd, kernel_scale=odd,
       rows=st.integers(0, 12), cols=st.integers(1, 4))
def test_kdsd_arguments(statistic, bootstrap, reps, alpha, seed, kernel, kernel_scale, rows, cols):
    if isinstance(reps, int) and not isinstance(reps, bool) and reps > 3:
        return
    x = np.where(np.arange(rows * cols).reshape(rows, cols) % 2 == 0, 1, -1).astype(np.int64)
    call(dlp_mcmc.gof.kdsd, x, ISING, statistic=statistic, bootstrap=bootstrap, reps=reps, alpha=alpha, seed=seed,
         kernel=kernel, kernel_scale=kernel_scale)


def test_found_defects_stay_fixed():
    """The cases the properties found, pinned: an integer beyond 64 bits raised OverflowError,
    and a string with a line break was printed raw."""
    with pytest.raises(ValueError, match=r"^seed must be at most 18446744073709551615, got 18446744073709551616$"):
        dlp_mcmc.sample(ISING, "gibbs", step_size=None, chains=1, steps=1, seed=2**64)
    with pytest.raises(ValueError) as e:
        dlp_mcmc.sample(ISING, "gibbs", step_size=None, chains=1, steps=1, init="a\nb")
    assert str(e.value) == 'init must be "random", "zeros" or an array, got "a\\nb"'
    assert json.loads(str(e.value).split("got ", 1)[1]) == "a\nb"


arrays = st.one_of(odd, st.just([[0, .5], [.5, 0]]), st.just(np.zeros((2, 2))), st.just(np.array([np.nan, 1.0])),
                   st.just([[1, 2, 3]]), st.just(np.ones((2, 2, 2))))


@FAST
@given(a=arrays, b=arrays, c=arrays, domain=odd, k=count)
def test_array_constructor_arguments(a, b, c, domain, k):
    for build in (lambda: dlp_mcmc.Model.ising(a, b=b, domain=domain), lambda: dlp_mcmc.Model.potts(a, b),
                  lambda: dlp_mcmc.Model.rbm(a, b, c, domain=domain), lambda: dlp_mcmc.Model.categorical(probs=a),
                  lambda: dlp_mcmc.Model.categorical(logits=a), lambda: dlp_mcmc.Model.table(a, d=k, domain=domain),
                  lambda: dlp_mcmc.Model.logistic(a, b, c, domain=domain),
                  lambda: dlp_mcmc.Model.bnn(a, b, hidden=k)):
        call(build)


@FAST
@given(key=st.sampled_from(["step_size", "step_size_min", "preconditioner", "batch_size", "target_accept", "x"]),
       value=odd, sampler=st.sampled_from(["dmala", "acs-dmala-2", "pdmala", "sg-dula", "gibbs"]),
       method=odd, chains=count, temperatures=count)
def test_sampler_options_and_logz_arguments(key, value, sampler, method, chains, temperatures):
    call(dlp_mcmc.sample, ISING, sampler, chains=2, steps=2, progress=False, **{key: value})
    for v in (chains, temperatures):
        if isinstance(v, int) and not isinstance(v, bool) and v > 3:
            return
    call(dlp_mcmc.logz, ISING, method, chains=chains, temperatures=temperatures)
