"""Array constructors build the same models as the shipped files (exact: every state's f
compared), and models report their space."""

import itertools
import json

import numpy as np
import pytest

import dlp_mcmc


def all_states(model):
    return np.array(list(itertools.product(model.values, repeat=model.d)), dtype=np.int64)


def same_law(a, b):
    """f agrees up to a constant on every state (to 1e-12)."""
    x = all_states(a)
    fa, fb = a.log_density(x), b.log_density(x)
    np.testing.assert_allclose(fa - fa[0], fb - fb[0], atol=1e-12)


@pytest.mark.parametrize("name,build", [
    ("ising-3.json", lambda s: dlp_mcmc.Model.ising(J=s["J"], b=s["b"], domain=s["domain"])),
    ("potts-3.json", lambda s: dlp_mcmc.Model.potts(
        J=_dense(s["d"], s["edges"]), h=s["h"])),
    ("rbm-small.json", lambda s: dlp_mcmc.Model.rbm(W=s["W"], b=s["b"], c=s["c"], domain=s["domain"])),
])
def test_constructors_equal_the_file_models(examples, name, build):
    spec = json.loads((examples / name).read_text())
    from_file = dlp_mcmc.Model.from_file(examples / name)
    built = build(spec)
    assert (built.kind, built.d, built.domain, built.values) == (
        from_file.kind, from_file.d, from_file.domain, from_file.values)
    same_law(built, from_file)
    # A table of the file model's log-densities is the same law again.
    x = all_states(from_file)
    table = dlp_mcmc.Model.table(from_file.log_density(x), d=from_file.d, domain=from_file.domain,
                            K=len(from_file.values) if from_file.domain == "categorical" else None)
    same_law(table, from_file)


def _dense(d, edges):
    J = np.zeros((d, d))
    for i, j, w in edges:
        J[i, j] = J[j, i] = w
    return J


def test_categorical_and_logistic_and_from_dict(examples):
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    a, b = dlp_mcmc.Model.categorical(probs=p), dlp_mcmc.Model.categorical(logits=np.log(p))
    assert (a.domain, a.values) == ("categorical", [0, 1, 2])
    same_law(a, b)
    x = all_states(a)
    np.testing.assert_allclose(np.exp(a.log_density(x)).sum(), 1.0, atol=1e-12)
    spec = json.loads((examples / "logistic-spin.json").read_text())
    lg = dlp_mcmc.Model.logistic(X=spec["X"], y=spec["y"], b=spec.get("b"), domain="spin",
                                 scaling=spec["minibatch"]["scaling"])
    same_law(lg, dlp_mcmc.Model.from_file(examples / "logistic-spin.json"))
    run = dlp_mcmc.sample(lg, "sg-dula", step_size=0.3, batch_size=20, chains=3, steps=5, seed=1)
    assert run.final.shape == (3, 8)
    same_law(dlp_mcmc.Model.from_dict(json.loads(dlp_mcmc.Model.from_file(examples / "ising-3.json").to_json())),
             dlp_mcmc.Model.from_file(examples / "ising-3.json"))


def test_bnn_constructor():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(30, 2)), rng.normal(size=30)
    # Every build registers the bnn kind (dlp-models' KINDS), so a ValueError here is a bug.
    m = dlp_mcmc.Model.bnn(x=x, y=y, hidden=2, tau=50.0)
    assert (m.kind, m.d, m.domain) == ("bnn", (2 + 2) * 2 + 1, "binary")
    run = dlp_mcmc.sample(m, "sg-dula", step_size=0.1, batch_size=10, chains=2, steps=3, seed=0)
    assert run.final.shape == (2, 9)
