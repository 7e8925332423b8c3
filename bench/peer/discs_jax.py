#!/usr/bin/env python3
"""DISCS's own samplers on DISCS's classical tasks, in current JAX on the CPU: the peer of
`just bench-peer-discs`.

A re-statement, not a copy, of google-research/discs (Apache-2.0; commit
aa8c12281a790fb36e98b32cc52279041b107f4a, 2023-12-09; it pins jax 0.3.25): every class and
function below names the DISCS file it re-states and keeps its arithmetic, its random calls in
the same order and its structure (one jit-compiled step over all chains, a Python loop over
steps as `Sampling_Experiment._compute_chain`, the sampler's adaptation toward acceptance
0.574 running through burn-in *and* kept steps, DISCS's `num_ll_calls` counter). Only the
spellings that current JAX no longer accepts change (`jnp.clip(a_min=…)` → `min=`, axes as
tuples, `jax.tree_map` → `jax.tree_util.tree_map`), plus two things named where they happen:
the DMALA state's `log_tau`/`log_z` start as float32 zeros (DISCS: int32 zeros, which only
makes jit compile the step a second time when the dtype changes at step 1), and the chains'
initial states, reference state and model parameters are read from the task file that `dlp
discs --export` writes, so that both sides sample the same target from the same states and
score the same statistic (DISCS draws them from its own `PRNGKey`s).

Usage (the task file from `dlp discs --task ising --chains 100 --seed 0 --export T.json`):

    discs_jax.py --task-file T.json --samplers dmala,gwg,pas --steps 1000 --out DIR

writes DIR/jax-<task>.jsonl (one JSON line per sampler) and DIR/<task>--<sampler>.i32 (the kept
steps' statistic, little-endian int32, chains × kept, chain-major), which `dlp discs --peer`
scores with dlp's DISCS ESS. Seconds are the wall time of the kept steps' jitted step calls,
each followed by `block_until_ready` (DISCS's `time.time()` around an asynchronous dispatch
would time the dispatch only); compile time is measured apart (`compile_seconds`) and excluded.
"""

import argparse
import json
import math
import os
import sys
import time

SAMPLERS = {"dmala": "dmala", "gwg": "gwg", "pas": "path_auxiliary"}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task-file", required=True, help="JSON written by `dlp discs --export`")
    p.add_argument("--samplers", default="dmala,gwg,pas", help="comma-separated: dmala, gwg, pas")
    p.add_argument("--steps", type=int, required=True, help="chain length, burn-in included")
    p.add_argument("--ess-ratio", type=float, default=0.5, help="burn-in fraction (DISCS's ess_ratio)")
    p.add_argument("--seed", type=int, default=0, help="PRNGKey of the chains (DISCS: PRNGKey(10))")
    p.add_argument("--threads", type=int, default=1, help="XLA CPU threads (1: single-threaded Eigen)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    bad = [s for s in a.samplers.split(",") if s not in SAMPLERS]
    if bad:
        p.error(f"--samplers: unknown {','.join(bad)} (have {','.join(SAMPLERS)})")
    if a.steps < 2 or not 0 <= a.ess_ratio < 1 or a.threads < 1:
        p.error("need --steps >= 2, --ess-ratio in [0, 1), --threads >= 1")
    return a


def set_threads(n):
    """XLA's CPU client reads its flags at import: one thread means no Eigen thread pool."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if n == 1:
        flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    else:
        flags = f"intra_op_parallelism_threads={n}"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flags).strip()


# Imported by main() after the thread flags are set (and by tests, which take the default).
jax = jnp = special = None


def import_jax():
    global jax, jnp, special
    import jax as _jax
    import jax.numpy as _jnp
    from jax.scipy import special as _special
    jax, jnp, special = _jax, _jnp, _special


# ---- discs/common/math_util.py ----------------------------------------------------------

def prod(it):
    base = 1
    for v in it:
        base *= v
    return base


def gumbel(rng, loc):
    uniform_sample = jax.random.uniform(rng, shape=loc.shape, minval=0.0, maxval=1.0, dtype=loc.dtype)
    return loc - jnp.log(-jnp.log(uniform_sample))


def log1mexp(x):
    x = -jnp.abs(x)
    return jnp.where(x > -0.693, jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x)))


def noreplacement_sampling_renormalize(ll_idx, axis=-1):
    ll_base = jnp.max(ll_idx, axis=axis, keepdims=True)
    prob_idx = jnp.exp(ll_idx - ll_base)
    ll_delta = jnp.log(jnp.cumsum(prob_idx, axis=axis) - prob_idx) + ll_base
    return jnp.clip(ll_idx - log1mexp(ll_delta), max=0.0)


def multinomial(rng, log_prob, num_samples, replacement=True, is_nsample_const=True, batch_size=1,
                return_ll=False, need_ordering_info=False):
    """math_util.multinomial, every branch DISCS's samplers here reach."""
    num_classes = log_prob.shape[-1]
    pbatch_shape = log_prob.shape[:-1]
    if is_nsample_const:
        if replacement:
            idx = jax.random.categorical(key=rng, logits=log_prob, shape=(num_samples,) + pbatch_shape)
            idx = jnp.transpose(idx, axes=tuple(range(1, idx.ndim)) + (0,))
        else:
            perturbed_ll = gumbel(rng, loc=log_prob)
            _, idx = jax.lax.top_k(perturbed_ll, k=num_samples)
        if return_ll:
            ll_idx = jnp.take_along_axis(log_prob, idx, -1)
            if not replacement and num_samples > 1:
                ll_idx = noreplacement_sampling_renormalize(ll_idx)
            return idx, ll_idx
        return idx
    if replacement:
        def body_fun(val):
            cnt, key, total_count = val
            key, next_key = jax.random.split(key)
            idx = jax.random.categorical(key=key, logits=log_prob, shape=(batch_size,) + pbatch_shape)
            onehot = jax.nn.one_hot(idx, num_classes=num_classes, dtype=jnp.int32)
            mask = jnp.arange(batch_size, dtype=cnt.dtype) + cnt < num_samples
            mask = jnp.expand_dims(mask, tuple(range(1, onehot.ndim))).astype(jnp.int32)
            total_count = total_count + jnp.sum(onehot * mask, axis=0)
            return (cnt + batch_size, next_key, total_count)

        init_val = (jnp.zeros(shape=(), dtype=num_samples.dtype), rng,
                    jnp.zeros(shape=log_prob.shape, dtype=jnp.int32))
        _, _, selected = jax.lax.while_loop(lambda val: jnp.less(val[0], num_samples), body_fun, init_val)
        ll_selected = log_prob * selected
    else:
        perturbed_ll = gumbel(rng, loc=log_prob)
        sorted_ll = jnp.sort(perturbed_ll)
        threshold = jnp.expand_dims(sorted_ll[..., num_classes - num_samples], axis=-1)
        selected_mask = (perturbed_ll >= threshold).astype(jnp.int32)
        if need_ordering_info:
            selected = {"selected_mask": selected_mask, "perturbed_ll": perturbed_ll}
        else:
            selected = selected_mask
    if return_ll:
        if not replacement:
            sorted_idx = jnp.argsort(-perturbed_ll)
            sorted_ll = jnp.take_along_axis(log_prob, sorted_idx, -1)
            idx_ll = noreplacement_sampling_renormalize(sorted_ll)
            flat_idx = jnp.reshape(sorted_idx, (-1, num_classes))
            flat_ll = jnp.reshape(idx_ll, (-1, num_classes))
            ll_selected = (jnp.zeros_like(flat_ll)
                           .at[jnp.expand_dims(jnp.arange(flat_idx.shape[0]), 1), flat_idx].set(flat_ll))
            ll_selected = jnp.reshape(ll_selected, log_prob.shape) * selected_mask
        return selected, ll_selected
    return selected


def bernoulli_logp(rng, log_prob):
    noise = jax.random.uniform(rng, shape=log_prob.shape, minval=0.0, maxval=1.0, dtype=jnp.float32)
    return jnp.log(noise + 1e-24) < log_prob


def mh_step(rng, log_prob, current_sample, new_sample):
    use_new_sample = bernoulli_logp(rng, log_prob)
    return (jnp.where(jnp.expand_dims(use_new_sample, tuple(range(1, new_sample.ndim))), new_sample,
                      current_sample), use_new_sample)


def copy_pytree(pytree):  # discs/common/utils.py
    return jax.tree_util.tree_map(jnp.array, pytree)


# ---- models: discs/models/{ising,potts,rbm}.py, parameters from a dlp.model.v1 file -------

def value_and_grad(forward, params, x):
    """The models' `get_value_and_grad` (identical in ising.py, potts.py, rbm.py)."""
    x = x.astype(jnp.float32)

    def fun(z):
        loglikelihood = forward(params, z)
        return jnp.sum(loglikelihood), loglikelihood

    (_, loglikelihood), grad = jax.value_and_grad(fun, has_aux=True)(x)
    return loglikelihood, grad


class Ising:
    """discs/models/ising.py `Ising.forward` (open lattice: it slices `[:, :-1]`)."""
    num_categories = 2

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, params, x):
        params = params["params"]
        w_h = params[0][:, :-1]
        w_v = params[1][:-1, :]
        w_b = params[2]
        message = jnp.zeros_like(x)
        message = message.at[:, :-1, :].set(message[:, :-1, :] + (2 * x[:, 1:, :] - 1) * w_v)
        message = message.at[:, 1:, :].set(message[:, 1:, :] + (2 * x[:, :-1, :] - 1) * w_v)
        message = message.at[:, :, :-1].set(message[:, :, :-1] + (2 * x[:, :, 1:] - 1) * w_h)
        message = message.at[:, :, 1:].set(message[:, :, 1:] + (2 * x[:, :, :-1] - 1) * w_h)
        message = message / 2 + w_b
        loglike = (2 * x - 1) * message
        loglike = loglike.reshape(x.shape[0], -1)
        return -jnp.sum(loglike, axis=-1)

    def get_value_and_grad(self, params, x):
        return value_and_grad(self.forward, params, x)


class Potts:
    """discs/models/potts.py `Potts.forward` (one-hot states, open lattice)."""

    def __init__(self, shape, num_categories):
        self.sample_shape = tuple(shape)
        self.num_categories = num_categories

    def forward(self, params, x):
        params = params["params"]
        if len(x.shape) - 1 == len(self.sample_shape):
            x = jax.nn.one_hot(x, self.num_categories)
        w_h = params[0][:, :-1, :]
        w_v = params[1][:-1, :, :]
        ll = jnp.zeros_like(x)
        ll = ll.at[:, :, :-1].set(ll[:, :, :-1] + x[:, :, 1:] * w_h)
        ll = ll.at[:, :, 1:].set(ll[:, :, 1:] + x[:, :, :-1] * w_h)
        ll = ll.at[:, :-1, :].set(ll[:, :-1, :] + x[:, 1:, :] * w_v)
        ll = ll.at[:, 1:, :].set(ll[:, 1:, :] + x[:, :-1, :] * w_v)
        ll = ll / 2 + params[2]
        loglike = (x * ll).reshape(x.shape[0], -1)
        return -jnp.sum(loglike, axis=-1)

    def get_value_and_grad(self, params, x):
        return value_and_grad(self.forward, params, x)


class BinaryRBM:
    """discs/models/rbm.py `NNBinary.__call__`: Σ softplus(v W + b_h) + v · b_v."""
    num_categories = 2

    def __init__(self, num_visible):
        self.shape = (num_visible,)

    def forward(self, params, v):
        sp = jnp.sum(jax.nn.softplus(v @ params["w"] + params["b_h"]), axis=-1)
        return sp + jnp.sum(v * params["b_v"], axis=-1)

    def get_value_and_grad(self, params, x):
        return value_and_grad(self.forward, params, x)


def load_task(task):
    """(model, params, sample shape) of a `dlp discs --export` task, in DISCS's parametrisation.

    dlp writes log p = Σ_edges λ s_i s_j + Σ_i h_i s_i (Ising on spins s = 2x − 1), Σ_edges λ
    [c_i = c_j] + Σ_i h_{i,c_i} (Potts), Σ_i b_i x_i + Σ_k softplus(c_k + Σ_i W_ik x_i) (RBM);
    DISCS's forward computes λ Σ s_i s_j − Σ b_i s_i from `params = [−λ, −λ, b]`, so b = −h."""
    m = task["model"]
    f32 = lambda a: jnp.asarray(a, dtype=jnp.float32)
    kind = m["kind"]
    if kind in ("ising", "potts"):
        lat = m.get("lattice")
        if lat is None or lat["periodic"] or len(lat["shape"]) != 2:
            raise SystemExit(f"error: {kind} task without an open 2-D lattice (DISCS's only form)")
        h, w = lat["shape"]
        lam = float(lat["coupling"])
        if kind == "ising":
            if m.get("domain", "spin") != "spin":
                raise SystemExit("error: the Ising task must be on spins")
            b = -f32(m["b"]).reshape(h, w)
            shape = (h, w)
            model = Ising(shape)
        else:
            k = int(m["K"])
            b = -f32(m["h"]).reshape(h, w, k)
            shape = (h, w)
            model = Potts(shape, k)
        wts = -lam * jnp.ones(b.shape, dtype=jnp.float32)
        return model, {"params": jnp.stack([wts, wts, b])}, shape
    if kind == "rbm":
        if m.get("domain", "binary") != "binary":
            raise SystemExit("error: the RBM task must be binary")
        model = BinaryRBM(int(m["d"]))
        return model, {"w": f32(m["W"]), "b_v": f32(m["b"]), "b_h": f32(m["c"])}, model.shape
    raise SystemExit(f"error: model kind {kind!r} is not one of DISCS's Ising, Potts, RBM here")


# ---- samplers ---------------------------------------------------------------------------

class LocallyBalancedSampler:
    """discs/samplers/locallybalanced.py (the base of DMALA, GWG and PAS), SQRT weights."""

    def __init__(self, shape, num_categories):
        self.sample_shape = tuple(shape)
        self.num_categories = num_categories

    def make_init_state(self, rng):  # abstractsampler.py
        return {"num_ll_calls": jnp.zeros((), jnp.int32), "steps": jnp.zeros((), jnp.int32)}

    def select_sample(self, rng, log_acc, current_sample, new_sample, sampler_state):
        y, _ = mh_step(rng, log_acc, current_sample, new_sample)
        y = y.astype(jnp.int32) if self.num_categories == 2 else jnp.argmax(y, axis=-1)
        sampler_state = copy_pytree(sampler_state)
        sampler_state["steps"] += 1  # abstractsampler.update_sampler_state
        return y, sampler_state

    @staticmethod
    def apply_weight_function_logscale(logt):  # balancing_fn_type = 'SQRT'
        return logt / 2.0


class DMALA(LocallyBalancedSampler):
    """discs/samplers/dmala.py, config dmala_config.py: adaptive, target 0.574, SQRT,
    schedule_step 100, reset_z_est 20 (step_size 0.2 unused when adaptive)."""
    target_acceptance_rate, schedule_step, reset_z_est = 0.574, 100, 20

    def make_init_state(self, rng):
        state = super().make_init_state(rng)
        state["log_tau"] = jnp.zeros((), jnp.float32)
        state["log_z"] = jnp.zeros((), jnp.float32)
        return state

    def update_sampler_state(self, state, acc, local_stats):
        cur_step = state["steps"]
        state["num_ll_calls"] += 4
        log_z = jnp.where(cur_step % self.reset_z_est == 0, local_stats["log_z"], state["log_z"])
        logs_ema = jnp.where(cur_step < self.schedule_step, 0, 1)
        log_z = (logs_ema * log_z) + ((1 - logs_ema) * local_stats["log_z"])
        n = jnp.exp(state["log_tau"] + log_z)
        n = n + 3 * (acc - self.target_acceptance_rate)
        state["log_tau"] = jnp.clip(jnp.log(n) - log_z, min=-log_z)
        state["log_z"] = log_z

    def select_dmala(self, rng, local_stats, log_acc, x, y, sampler_state):
        y, new_state = self.select_sample(rng, log_acc, x, y, sampler_state)
        acc = jnp.mean(jnp.exp(jnp.clip(log_acc, max=0.0)))
        self.update_sampler_state(new_state, acc, local_stats)
        return y, new_state

    def set_z(self, log_rates):
        if self.num_categories > 2:
            log_rates = log_rates.reshape(log_rates.shape[0], -1, self.num_categories)
            return jnp.mean(jnp.sum(jnp.exp(log_rates), axis=(-2, -1)))
        log_rates = log_rates.reshape(log_rates.shape[0], -1)
        return jnp.mean(jnp.sum(jnp.exp(log_rates), axis=(-1,)))

    def reset_stats(self, log_rates):
        log_z = jnp.log(self.set_z(log_rates))
        return {"log_tau": math.log(3.0) - log_z, "log_z": log_z}

    def get_value_and_rates(self, model, model_param, x):
        ll_x, grad_x = model.get_value_and_grad(model_param, x)
        if self.num_categories == 2:
            ll_delta = (1 - 2 * x) * grad_x
        else:
            ll_delta = grad_x - jnp.sum(grad_x * x, axis=-1, keepdims=True)
        return ll_x, {"weights": self.apply_weight_function_logscale(ll_delta), "delta": ll_delta}

    def step(self, model, rng, x, model_param, state):
        if self.num_categories != 2:
            x = jax.nn.one_hot(x, self.num_categories, dtype=jnp.float32)
        rng_new_sample, rng_acceptance = jax.random.split(rng)
        ll_x, log_rate_x = self.get_value_and_rates(model, model_param, x)
        local_stats = self.reset_stats(log_rate_x["weights"])
        log_tau = jnp.where(state["steps"] == 0, local_stats["log_tau"], state["log_tau"])
        dist_x = self.get_dist_at(x, log_tau, log_rate_x)
        y, aux = self.sample_from_proposal(rng_new_sample, x, dist_x)
        ll_x2y = self.get_ll_onestep(dist_x, aux=aux)
        ll_y, log_rate_y = self.get_value_and_rates(model, model_param, y)
        dist_y = self.get_dist_at(y, log_tau, log_rate_y)
        aux = x if self.num_categories > 2 else aux
        ll_y2x = self.get_ll_onestep(dist_y, aux=aux)
        log_acc = ll_y + ll_y2x - ll_x - ll_x2y
        new_x, new_state = self.select_dmala(rng_acceptance, local_stats, log_acc, x, y, state)
        return new_x, new_state, jnp.mean(jnp.clip(jnp.exp(log_acc), max=1))


class BinaryDMALA(DMALA):
    def get_dist_at(self, x, log_tau, log_rate_x):
        threshold_x = log_tau + log_rate_x["weights"]
        threshold_x -= jnp.logaddexp(threshold_x, jnp.zeros_like(threshold_x))
        return jnp.exp(jnp.clip(threshold_x, max=0.0))

    def sample_from_proposal(self, rng, x, dist_x):
        flip = jax.random.bernoulli(rng, p=dist_x)
        return x * (1 - flip) + flip * (1 - x), flip

    def get_ll_onestep(self, dist, aux):
        return jnp.sum(jnp.log(dist + 1e-32) * aux + jnp.log(1 - dist + 1e-32) * (1 - aux),
                       axis=tuple(range(1, dist.ndim)))


class CategoricalDMALA(DMALA):
    def get_dist_at(self, x, log_tau, log_rate_x):
        log_posterior_x = (log_tau + log_rate_x["weights"]) * (1 - x)
        return jax.nn.log_softmax(log_posterior_x, axis=-1)

    def sample_from_proposal(self, rng, x, dist_x):
        y = jax.random.categorical(rng, logits=dist_x)
        y = jax.nn.one_hot(y, self.num_categories, dtype=jnp.float32)
        return y, y

    def get_ll_onestep(self, dist, aux):
        return jnp.sum(jax.nn.log_softmax(dist) * aux, axis=tuple(range(1, dist.ndim)))


class GWG(LocallyBalancedSampler):
    """discs/samplers/gwg.py `GibbsWithGradSampler`; config gwg_config.py: adaptive, target
    0.574, SQRT, num_flips 1 (binary: `AdaptiveGWGSampler`; categorical:
    `CategoricalGWGSampler`, one move, not adaptive)."""

    def select_gwg(self, rng, log_acc, x, y, state):
        y, state = self.select_sample(rng, log_acc, x, y, state)
        state["num_ll_calls"] += 4
        return y, state

    def step(self, model, rng, x, model_param, state):
        if self.num_categories != 2:
            x = jax.nn.one_hot(x, self.num_categories, dtype=jnp.float32)
        rng_new_sample, rng_acceptance = jax.random.split(rng)
        ll_x, grad_x = model.get_value_and_grad(model_param, x)
        dist_x = self.get_dist_at(x, grad_x)
        y, aux = self.sample_from_proposal(rng_new_sample, x, dist_x, state)
        ll_x2y = self.get_ll_onestep(dist_x, aux=aux, src_to_dst="x2y")
        ll_y, grad_y = model.get_value_and_grad(model_param, y)
        dist_y = self.get_dist_at(y, grad_y)
        ll_y2x = self.get_ll_onestep(dist_y, aux=aux, src_to_dst="y2x")
        log_acc = ll_y + ll_y2x - ll_x - ll_x2y
        new_x, new_state = self.select_gwg(rng_acceptance, log_acc, x, y, state)
        return new_x, new_state, jnp.mean(jnp.clip(jnp.exp(log_acc), max=1))


class AdaptiveGWG(GWG):
    target_acceptance_rate = 0.574

    def make_init_state(self, rng):
        state = super().make_init_state(rng)
        state["radius"] = jnp.ones((), jnp.float32)
        return state

    def select_gwg(self, rng, log_acc, x, y, state):
        y, new_state = super().select_gwg(rng, log_acc, x, y, state)
        acc = jnp.mean(jnp.exp(jnp.clip(log_acc, max=0.0)))
        r = state["radius"] + acc - self.target_acceptance_rate
        new_state["radius"] = jnp.clip(r, min=1, max=prod(y.shape[1:]))
        return y, new_state

    def get_dist_at(self, x, grad_x):  # BinaryGWGSampler.get_dist_at
        score_change_x = self.apply_weight_function_logscale((1 - 2 * x) * grad_x)
        score_change_x = jnp.reshape(score_change_x, (score_change_x.shape[0], -1))
        return jax.nn.log_softmax(score_change_x, axis=-1)

    def get_ll_onestep(self, dist, aux, src_to_dst):
        return jnp.sum(dist * aux[src_to_dst].astype(jnp.float32), axis=-1)

    def sample_from_proposal(self, rng, x, dist_x, state):
        ns = jnp.clip(jnp.round(state["radius"]).astype(jnp.int32), min=1, max=dist_x.shape[1])
        selected = multinomial(rng, dist_x, num_samples=ns, replacement=True, is_nsample_const=False)
        indicator = (selected > 0).astype(jnp.int32)
        x_shape = x.shape
        x = jnp.reshape(x, (x_shape[0], -1))
        y = jnp.reshape(x * (1 - indicator) + indicator * (1 - x), x_shape)
        return y, {"x2y": selected, "y2x": selected}


class CategoricalGWG(GWG):
    """`CategoricalGWGSampler`. Its `get_ll_onestep` indexes the (chains, d·K) log-probabilities
    with rows of shape (chains, 1) and a move index of shape (chains,): that broadcasts to
    (chains, chains) and sums, for every chain, the log-probabilities of *all* chains' moves.
    Re-stated as DISCS runs it (`per_chain=False`, the default here), so its MH ratio is not
    the chain's own; `per_chain=True` indexes each chain's own move."""
    per_chain = False

    def get_dist_at(self, x, grad_x):
        ll_delta = grad_x - jnp.sum(grad_x * x, axis=-1, keepdims=True)
        score_change_x = self.apply_weight_function_logscale(ll_delta) - x * 1e9
        score_change_x = jnp.reshape(score_change_x, (score_change_x.shape[0], -1))
        return jax.nn.log_softmax(score_change_x, axis=-1)

    def sample_from_proposal(self, rng, x, dist_x, state):
        idx = multinomial(rng, dist_x, num_samples=1, replacement=True).reshape(-1)
        x_int = jnp.argmax(x, axis=-1)
        x_shape = x_int.shape
        x_int = jnp.reshape(x_int, (x_int.shape[0], -1))
        idx_c = idx % self.num_categories
        idx_i = jnp.floor_divide(idx, self.num_categories)
        y_int = x_int.at[jnp.arange(x.shape[0]), idx_i].set(idx_c)
        idx_y2x_c = jnp.sum(jnp.where(x_int != y_int, 1, 0) * x_int, -1)
        idx_y2x = idx_i * self.num_categories + idx_y2x_c
        y = jax.nn.one_hot(jnp.reshape(y_int, x_shape), self.num_categories, dtype=jnp.float32)
        return y, {"x2y": idx, "y2x": idx_y2x}

    def get_ll_onestep(self, dist, aux, src_to_dst):
        idx = aux[src_to_dst]
        if self.per_chain:
            idx = idx[:, None]
        return jnp.sum(dist[jnp.expand_dims(jnp.arange(dist.shape[0]), axis=1), idx], axis=-1)


class PathAuxiliary(LocallyBalancedSampler):
    """discs/samplers/path_auxiliary.py `PAFSNoReplacement`; config path_auxiliary_config.py:
    use_fast_path, num_flips 1, adaptive (radius toward 0.574), SQRT, approx_with_grad."""
    target_acceptance_rate, num_flips = 0.574, 1

    def make_init_state(self, rng):
        state = super().make_init_state(rng)
        state["radius"] = jnp.ones((), jnp.float32) * self.num_flips
        return state

    def step(self, model, rng, x, model_param, state):  # PathAuxiliarySampler.step
        if self.num_categories != 2:
            x = jax.nn.one_hot(x, self.num_categories, dtype=jnp.float32)
        rng_new_sample, rng_acceptance = jax.random.split(rng)
        ll_x, y, trajectory, num_calls_forward = self.proposal(model, rng_new_sample, x, model_param, state)
        ll_y, ll_y2x, num_calls_backward = self.ll_y2x(model, x, model_param, trajectory, y)
        log_acc = ll_y + ll_y2x - ll_x - trajectory["ll_x2y"]
        new_x, new_state = self.select_pas(rng_acceptance, num_calls_forward + num_calls_backward,
                                           log_acc, x, y, state)
        return new_x, new_state, jnp.mean(jnp.clip(jnp.exp(log_acc), max=1))

    def select_pas(self, rng, num_calls, log_acc, x, y, sampler_state):
        y, new_state = self.select_sample(rng, log_acc, x, y, sampler_state)
        new_state["num_ll_calls"] += num_calls
        acc = jnp.mean(jnp.exp(jnp.clip(log_acc, max=0.0)))
        r = sampler_state["radius"] + acc - self.target_acceptance_rate
        new_state["radius"] = jnp.clip(r, min=1, max=prod(self.sample_shape))
        return y, new_state

    def get_local_dist(self, model, x, model_param):
        ll_x, grad_x = model.get_value_and_grad(model_param, x)
        if self.num_categories != 2:
            logratio = grad_x - jnp.sum(grad_x * x, axis=-1, keepdims=True)
        else:
            logratio = (1 - 2 * x) * grad_x
        logits = self.apply_weight_function_logscale(logratio)
        if self.num_categories != 2:
            logits = logits * (1 - x) + x * -1e9
        log_prob = jax.nn.log_softmax(jnp.reshape(logits, (x.shape[0], -1)), -1)
        return ll_x, log_prob, 2

    def proposal(self, model, rng, x, model_param, state):
        ll_x, log_prob, num_calls = self.get_local_dist(model, x, model_param)
        num_samples = jnp.clip(jnp.round(state["radius"]).astype(jnp.int32), min=1, max=prod(self.sample_shape))
        x_shape = x.shape
        x = jnp.reshape(x, (x.shape[0], -1))
        if self.num_categories > 2:
            log_prob_all = jnp.reshape(log_prob, [log_prob.shape[0], -1, self.num_categories])
            log_prob = special.logsumexp(log_prob_all, axis=-1)
            log_prob_all = jax.nn.log_softmax(log_prob_all, axis=-1)
            x = jnp.reshape(x, log_prob_all.shape)
        selected_idx, ll_selected = multinomial(rng, log_prob, num_samples, replacement=False, return_ll=True,
                                                is_nsample_const=False, need_ordering_info=True)
        mask = selected_idx["selected_mask"]
        if self.num_categories > 2:
            rng, _ = jax.random.split(rng)
            new_val = jax.nn.one_hot(jax.random.categorical(rng, log_prob_all), self.num_categories)
            ll_val = jnp.sum(new_val * log_prob_all, axis=-1) * mask
            mask = jnp.expand_dims(mask, axis=-1)
            ll_selected = ll_selected + ll_val
        else:
            new_val = 1 - x
        y = jnp.reshape(x * (1 - mask) + mask * new_val, x_shape)
        return ll_x, y, {"ll_x2y": jnp.sum(ll_selected, axis=-1), "selected_idx": selected_idx}, num_calls

    def ll_y2x(self, model, x, model_param, forward_trajectory, y):
        ll_y, log_prob, num_calls = self.get_local_dist(model, y, model_param)
        if self.num_categories > 2:
            log_prob_all = jnp.reshape(log_prob, [log_prob.shape[0], -1, self.num_categories])
            log_prob = special.logsumexp(log_prob_all, axis=-1)
            log_prob_all = jax.nn.log_softmax(log_prob_all, axis=-1)
        selected_mask = forward_trajectory["selected_idx"]["selected_mask"]
        order_info = forward_trajectory["selected_idx"]["perturbed_ll"]
        if self.num_categories > 2:
            x = jnp.reshape(x, [x.shape[0], -1, self.num_categories])
            ll_val = jnp.sum(x * log_prob_all, axis=-1) * selected_mask
        backwd_idx = jnp.argsort(order_info)
        log_prob = jnp.where(selected_mask, log_prob, -1e18)
        backwd_ll = jnp.take_along_axis(log_prob, backwd_idx, -1)
        backwd_mask = jnp.take_along_axis(selected_mask, backwd_idx, -1)
        ll_backwd = noreplacement_sampling_renormalize(backwd_ll)
        ll_y2x = jnp.sum(jnp.where(backwd_mask, ll_backwd, 0.0), axis=-1)
        if self.num_categories > 2:
            ll_y2x = ll_y2x + jnp.sum(ll_val, axis=-1)
        return ll_y, ll_y2x, num_calls


def build_sampler(name, shape, num_categories):
    """Each sampler's `build_sampler` under its default config."""
    if name == "dmala":
        cls = BinaryDMALA if num_categories == 2 else CategoricalDMALA
    elif name == "gwg":
        cls = AdaptiveGWG if num_categories == 2 else CategoricalGWG
    else:
        cls = PathAuxiliary
    return cls(shape, num_categories)


# ---- discs/experiment/sampling.py `Sampling_Experiment._compute_chain` --------------------

def run_cell(model, params, shape, sampler_name, x0, x0_ess, steps, ess_ratio, seed, log=print):
    """One chain batch: burn-in, then the kept steps with their statistic. Returns the record
    and the (chains, kept) int32 statistic trace."""
    import numpy as np
    sampler = build_sampler(sampler_name, shape, model.num_categories)
    x = jnp.asarray(x0, dtype=jnp.int32).reshape((x0.shape[0],) + tuple(shape))
    x0_ess = jnp.asarray(x0_ess, dtype=jnp.int32).reshape((1,) + tuple(shape))
    state = sampler.make_init_state(jax.random.PRNGKey(seed))

    def step_fn(rng, x, model_param, state):
        return sampler.step(model, rng, x, model_param, state)

    def mapped(samples, ref):  # `_get_mapped_samples`
        samples = samples.reshape(samples.shape[0], -1)
        return jnp.sum(jnp.abs(samples - ref.reshape(ref.shape[0], -1)), -1)

    rng = jax.random.PRNGKey(seed)
    t = time.perf_counter()
    compiled = jax.jit(step_fn).lower(rng, x, params, state).compile()
    get_mapped = jax.jit(mapped).lower(x, x0_ess).compile()
    compile_seconds = time.perf_counter() - t
    burn_in_length = int(steps * ess_ratio) + 1
    for step in range(1, burn_in_length):
        rng = jax.random.fold_in(rng, step)
        step_rng = jax.random.split(rng, 1).reshape(rng.shape)
        x, state, _ = compiled(step_rng, x, params, state)
    jax.block_until_ready(x)
    chain, accs, running_time = [], [], 0.0
    for step in range(burn_in_length, 1 + steps):
        rng = jax.random.fold_in(rng, step)
        step_rng = jax.random.split(rng, 1).reshape(rng.shape)
        start = time.perf_counter()
        new_x, state, acc = compiled(step_rng, x, params, state)
        jax.block_until_ready((new_x, state))
        running_time += time.perf_counter() - start
        chain.append(get_mapped(new_x, x0_ess))
        accs.append(acc)
        x = new_x
    trace = np.asarray(jnp.stack(chain), dtype=np.int32).T.copy()
    extra = {k: float(v) for k, v in state.items() if k in ("radius", "log_tau")}
    rec = {
        "impl": "jax-discs", "sampler": sampler_name, "discs_sampler": SAMPLERS[sampler_name],
        "discs_class": type(sampler).__name__, "chains": int(x0.shape[0]), "steps": steps,
        "burn": burn_in_length - 1, "kept": steps - burn_in_length + 1, "seconds": running_time,
        "compile_seconds": compile_seconds, "num_ll_calls": int(state["num_ll_calls"]),
        "accept": float(np.mean([float(a) for a in accs])), "final_state": extra,
    }
    return rec, trace


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    set_threads(a.threads)
    import_jax()
    import numpy as np
    task = json.load(open(a.task_file))
    if task.get("schema") != "dlp.discs-task.v1":
        raise SystemExit(f"error: {a.task_file}: not a dlp.discs-task.v1 file (write it with `dlp discs --export`)")
    model, params, shape = load_task(task)
    x0 = np.asarray(task["x0"], dtype=np.int32)
    ref = np.asarray(task["reference"], dtype=np.int32)
    os.makedirs(a.out, exist_ok=True)
    name = task["task"]
    lines = []
    for s in a.samplers.split(","):
        if not a.quiet:
            print(f"discs_jax: {SAMPLERS[s]} on {name} ({x0.shape[0]} chains × {a.steps} steps)", file=sys.stderr)
        rec, trace = run_cell(model, params, shape, s, x0, ref, a.steps, a.ess_ratio, a.seed)
        trace_name = f"{name}--{s}.i32"
        tmp = os.path.join(a.out, trace_name + ".tmp")
        trace.astype("<i4").tofile(tmp)
        os.replace(tmp, os.path.join(a.out, trace_name))
        rec.update(task=name, seed=a.seed, threads=a.threads, trace=trace_name, jax=jax.__version__,
                   devices=str(jax.devices()[0].platform), compile_excluded=True)
        lines.append(json.dumps(rec))
    out = os.path.join(a.out, f"jax-{name}.jsonl")
    with open(out + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
