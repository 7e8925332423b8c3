"""Re-statement (a port, not upstream code) of the official PyTorch samplers of
"A Langevin-like Sampler for Discrete Distributions" (Zhang, Liu, Liu, ICML 2022), the
peer of `just bench-peer`.

Upstream: github.com/ruqizhang/discrete-langevin, commit 99c30190f09ff593aaebffdcbabafcfb5a73d34b
(2022-09-20), itself built on wgrathwohl/GWG_release. That repository has no licence file, so
nothing here is copied from it: each piece below re-states the algorithm of the upstream
function named in its docstring, written for this project. What is kept on purpose is the
*cost model* of the official code, because that is what is timed: the dense L^2 x L^2
coupling matrix rebuilt as G * sigma on every energy evaluation, autograd for every
gradient, torch.distributions for the categorical draws, and the same random-number calls in
the same order (so that, from one seed, the trajectories equal upstream's; `peer_bench.py
--upstream-dir DIR --verify` checks that against a checkout of the upstream files kept
outside this repository).

Differences that do not touch the arithmetic: options the benchmark does not use are absent;
energies are flattened with .view(-1) (upstream's .squeeze() makes a 0-d tensor for one chain,
on which upstream's block Gibbs fails); the periodic lattice comes from numpy, not igraph.

Notation: x in {0,1}^d (rows are chains), f(x) the unnormalised log-probability, T = 2 the
temperature of the upstream scripts, d_i(x) = -(2 x_i - 1) df/dx_i the first-order estimate of
f(flip_i x) - f(x) (paper eq. 3 with the Taylor expansion of section 3.1).
"""
import itertools

import numpy as np
import torch
import torch.distributions as dists
import torch.nn as nn

# Added inside the logarithm of the proposal probabilities, as the official DLP sampler does.
LOG_EPS = 1e-10


def flip_gain(x, model):
    """d(x) = -(2x - 1) * grad f(x), by autograd (re-states utils.approx_difference_function)."""
    x = x.requires_grad_()
    (grad,) = torch.autograd.grad(model(x).sum(), x)
    return (grad * -(2.0 * x - 1)).detach()


def torus_adjacency(side, ndim=2):
    """0/1 adjacency of the periodic side^ndim grid, vertices numbered row-major (the matrix
    upstream's LatticeIsingModel takes from igraph.Graph.Lattice(circular=True))."""
    n = side**ndim
    grid = np.arange(n).reshape((side,) * ndim)
    adj = np.zeros((n, n), dtype=np.float32)
    for axis in range(ndim):
        for step in (-1, 1):
            adj[grid.ravel(), np.roll(grid, step, axis=axis).ravel()] = 1.0
    return adj


class LatticeIsingModel(nn.Module):
    """Periodic Ising model f(x) = s'(sigma G)s + b's, s = 2x - 1 (re-states
    rbm.LatticeIsingModel; each bond is counted twice, as there)."""

    def __init__(self, dim, init_sigma=0.15, init_bias=0.0, lattice_dim=2):
        super().__init__()
        n = dim**lattice_dim
        self.G = nn.Parameter(torch.from_numpy(torus_adjacency(dim, lattice_dim)), requires_grad=False)
        self.sigma = nn.Parameter(torch.tensor(float(init_sigma)), requires_grad=False)
        self.bias = nn.Parameter(torch.full((n,), float(init_bias)), requires_grad=False)
        # initial states: independent spins with P(x_i = 1) = sigmoid(2 b_i)
        self.init_dist = dists.Bernoulli(logits=2 * self.bias)
        self.data_dim = n

    @property
    def J(self):
        # a fresh dense d x d product on every call: the official model's main cost
        return self.G * self.sigma

    def forward(self, x):
        s = 2 * x.reshape(x.shape[0], -1) - 1
        coupling = ((s @ self.J) * s).sum(-1)
        return coupling + (self.bias[None, :] * s).sum(-1)


class BernoulliRBM(nn.Module):
    """Marginal of a binary RBM, f(v) = sum_j softplus((W v + c)_j) + b'v (re-states
    rbm.BernoulliRBM.logp_v_unnorm; W starts as torch's nn.Linear initialisation, as there)."""

    def __init__(self, n_visible, n_hidden):
        super().__init__()
        self.W = nn.Parameter(nn.Linear(n_visible, n_hidden).weight.data)
        self.b_h = nn.Parameter(torch.zeros(n_hidden))
        self.b_v = nn.Parameter(torch.zeros(n_visible))
        self.init_dist = dists.Bernoulli(probs=torch.full((n_visible,), 0.5))
        self.data_dim = n_visible

    def forward(self, v):
        hidden = nn.functional.softplus(v @ self.W.t() + self.b_h[None])
        return hidden.sum(-1) + (v * self.b_v[None]).sum(-1)


def _toggle(x, mask):
    """x with the coordinates where mask = 1 flipped (mask in {0,1}, float arithmetic)."""
    return (1.0 - x) * mask + x * (1.0 - mask)


def _mh_select(x_old, x_new, log_ratio):
    """Metropolis-Hastings choice per chain: accept when exp(log_ratio) > U(0,1)."""
    keep_new = (log_ratio.exp() > torch.rand_like(log_ratio)).float()
    return x_new * keep_new[:, None] + x_old * (1.0 - keep_new[:, None]), keep_new


class LangevinSampler(nn.Module):
    """Discrete Langevin proposal (paper section 3, eq. 5 on {0,1}^d): every coordinate
    flips independently with probability sigmoid(d_i/T - 1/(2 alpha)); mh=False is DULA,
    mh=True is DMALA with the Metropolis-Hastings test of eq. 6 (re-states
    samplers.LangevinSampler.step with approx=True, multi_hop=False)."""

    def __init__(self, dim, n_steps=1, temp=2.0, step_size=0.2, mh=True):
        super().__init__()
        self.dim, self.n_steps, self.temp = dim, n_steps, temp
        self.step_size, self.mh = step_size, mh
        self.a_s = []  # acceptance rate of every step (DMALA), as upstream records it

    def _p_flip(self, x, model, shift):
        # written exp(z) / (exp(z) + 1), not sigmoid(z), so that the kernels timed are
        # the official code's (two exps, an add and a divide)
        z = flip_gain(x, model) / self.temp - shift
        return torch.exp(z) / (torch.exp(z) + 1)

    @staticmethod
    def _log_q(p_flip, flipped):
        """log-probability of the realised flip pattern under independent flips."""
        chosen = p_flip * flipped + (1 - p_flip) * (1.0 - flipped)
        return torch.sum(torch.log(chosen + LOG_EPS), dim=-1)

    def step(self, x, model):
        # ||x' - x||^2 / (2 alpha) is 1/(2 alpha) for a single flip on {0,1}
        shift = 1.0 / (2 * self.step_size)
        for _ in range(self.n_steps):
            p_fwd = self._p_flip(x, model, shift)
            flipped = (torch.rand_like(x) < p_fwd) * 1
            proposal = _toggle(x, flipped)
            if not self.mh:
                x = proposal
                continue
            log_fwd = self._log_q(p_fwd, flipped)
            log_rev = self._log_q(self._p_flip(proposal, model, shift), flipped)
            log_target = model(proposal).view(-1) - model(x).view(-1)
            x, acc = _mh_select(x, proposal, log_target + log_rev - log_fwd)
            self.a_s.append(acc.mean().item())
        return x


class DiffSampler(nn.Module):
    """Gibbs-with-Gradients (Grathwohl et al. 2021, algorithm 1): flip one coordinate drawn
    from softmax(d(x)/T), then a Metropolis-Hastings test with the reverse proposal's
    probability of the same coordinate (re-states samplers.DiffSampler.step, branch
    multi_hop=False, fixed_proposal=False, approx=True)."""

    def __init__(self, dim, n_steps=1, temp=2.0):
        super().__init__()
        self.dim, self.n_steps, self.temp = dim, n_steps, temp

    def step(self, x, model):
        for _ in range(self.n_steps):
            q_fwd = dists.OneHotCategorical(logits=flip_gain(x, model) / self.temp)
            site = q_fwd.sample()
            proposal = _toggle(x, site)
            q_rev = dists.OneHotCategorical(logits=flip_gain(proposal, model) / self.temp)
            log_target = model(proposal).view(-1) - model(x).view(-1)
            x, _ = _mh_select(x, proposal, log_target + q_rev.log_prob(site) - q_fwd.log_prob(site))
        return x


class BlockGibbsSampler(nn.Module):
    """Random-scan block Gibbs over a shuffled order of the coordinates, refreshed when used
    up: each step takes the next block_size coordinates, evaluates f at all 2^block_size
    settings of them (every chain at once) and draws one exactly (re-states
    block_samplers.BlockGibbsSampler.step; bg-1 is block_size = 1)."""

    def __init__(self, dim, block_size):
        super().__init__()
        self.dim, self.block_size = dim, block_size
        self._order = self._shuffled()

    def _shuffled(self):
        # numpy's global generator, as upstream, so a seeded numpy gives the same order
        order = list(range(self.dim))
        np.random.shuffle(order)
        return order

    def step(self, x, model):
        if not self._order:
            self._order = self._shuffled()
        block, self._order = self._order[: self.block_size], self._order[self.block_size :]
        energies, candidates = [], []
        for values in itertools.product((0.0, 1.0), repeat=len(block)):
            cand = x.clone()
            cand[:, block] = torch.tensor(values).float().to(cand.device)
            energies.append(model(cand).view(-1)[:, None])
            candidates.append(cand[:, :, None])
        pick = dists.OneHotCategorical(logits=torch.cat(energies, 1)).sample()
        return (torch.cat(candidates, 2) * pick[:, None, :]).sum(-1)
