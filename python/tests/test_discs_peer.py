"""The DISCS peer (bench/peer/discs_jax.py, DISCS's samplers in JAX): it samples the same
targets as dlp's `discs:` tasks (log density and gradient of random states agree with dlp's),
and the quick path of `just bench-peer-discs` runs end to end in this environment (JAX and the
`dlp` binary), writing both sides' records, scored by one estimator."""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import dlp_mcmc
from conftest import ROOT

jax = pytest.importorskip("jax", reason="pip install 'jax[cpu]'")


def discs_jax():
    spec = importlib.util.spec_from_file_location("discs_jax", ROOT / "bench" / "peer" / "discs_jax.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.import_jax()
    return mod


@pytest.mark.parametrize("task", ["ising", "potts", "rbm-standin"])
def test_the_peer_samples_the_same_target_as_dlp(task):
    dj = discs_jax()
    model = dlp_mcmc.Model.from_file(f"discs:{task}")
    jmodel, params, shape = dj.load_task({"model": json.loads(model.to_json())})
    k = len(model.values)
    rng = np.random.default_rng(7)
    idx = rng.integers(0, k, size=(5, model.d))
    values = np.asarray(model.values)[idx]
    f, g = model.log_density_grad(values)
    x = dj.jnp.asarray(idx.reshape((5,) + tuple(shape)), dtype=dj.jnp.int32)
    if k > 2:  # DISCS's Potts differentiates with respect to the one-hot states
        x = dj.jax.nn.one_hot(x, k, dtype=dj.jnp.float32)
    jf, jg = jmodel.get_value_and_grad(params, x)
    jf, jg = np.asarray(jf, dtype=np.float64), np.asarray(jg, dtype=np.float64).reshape(5, -1)
    # float32 on DISCS's side: a relative tolerance on the scale of the terms summed.
    scale = np.abs(f).max() + 1.0
    assert np.allclose(jf, f, rtol=0, atol=1e-5 * scale), (jf, f)
    g = np.asarray(g, dtype=np.float64).reshape(5, -1)
    # dlp's gradient is with respect to the index (0/1, or the one-hot), as DISCS's is.
    assert np.allclose(jg, g, rtol=1e-4, atol=1e-4 * (np.abs(g).max() + 1.0)), np.abs(jg - g).max()
    # and DISCS's first-order flip estimate (1 − 2x)·∇ is exact on the multilinear Ising energy
    if task == "ising":
        i = 17
        flipped = values.copy()
        flipped[:, i] = -flipped[:, i]
        exact = model.log_density(flipped) - f
        assert np.allclose((1 - 2 * idx[:, i]) * jg[:, i], exact, atol=1e-3), ((1 - 2 * idx[:, i]) * jg[:, i], exact)


def test_quick_path_runs_both_sides_and_scores_them(tmp_path, dlp_bin):
    out = tmp_path / "bench"
    env = dict(os.environ, DLP_BIN=dlp_bin, PEER_PYTHON=sys.executable)
    r = subprocess.run(["bash", str(ROOT / "scripts" / "bench_peer_discs.sh"), "--quick", "--no-paper", str(out)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["discs-peer.csv", "discs-peer.json", "discs-peer.md"]
    doc = json.loads((out / "discs-peer.json").read_text())
    recs = {(x["impl"], x["sampler"]): x for x in doc["records"]}
    assert set(recs) == {(i, s) for i in ("rust", "jax-discs") for s in ("dmala", "gwg", "pas")}
    for (impl, sampler), x in recs.items():
        assert x["task"] == "ising" and x["chains"] == 4 and x["kept"] == 30, x
        assert 0 < x["ess"] <= x["kept"] and x["ess_per_second"] > 0, x
        assert 0 < x["accept"] <= 1, x
        # the statistic is a Hamming distance on 2,500 spins
        assert 0 < x["stat_mean"] < 2500, x
    for s in ("dmala", "gwg", "pas"):
        # DISCS counts 4 log-likelihood calls per step of each of these, burn-in included
        assert recs[("jax-discs", s)]["num_ll_calls"] == 4 * 60
        assert recs[("jax-discs", s)]["compile_seconds"] > 0
    assert {p["sampler"] for p in doc["pairs"] if p["ess_per_second_ratio"] > 0} == {"dmala", "gwg", "pas"}
    md = (out / "discs-peer.md").read_text()
    assert md.count("| `ising` |") == 3 and "ESS/s ratio" in md, md
    header = (out / "discs-peer.csv").read_text().splitlines()[0]
    assert header.startswith("impl,task,sampler,chains,steps,burn,kept,ess,"), header
