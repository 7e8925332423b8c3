//! Gibbs-with-gradients (`gwg`) on sparse Potts models in O((degree + 1)·K·log(dK)) per step
//! instead of O(dK) (issue 21, item 1).
//!
//! On a Potts model ℓ(c) = Σ_i h_i\[c_i\] + Σ_{i<j} J_ij [c_i = c_j] the one-hot gradient is
//! G_i\[v\] = h_i\[v\] + Σ_j J_ij [c_j = v], and GWG's move (i, v ≠ c_i) has logit
//! ½(G_i\[v\] − G_i\[c_i\]) (the GWG release's convention, [`crate::gwg`]). Moving site i from a to
//! b changes f by exactly G_i\[b\] − G_i\[a\] (the extension is multilinear across sites) and
//! changes G_j\[a\] and G_j\[b\] of the neighbours j only. The chains keep G and a sum tree
//! ([`super::sum_tree`]) over the d·K move weights exp(logit − c) in the generic kernel's move
//! order m = i·K + v (the stay slots have weight 0), with c = max_i ½(max h_i − min h_i +
//! Σ_j |J_ij|) ≥ every logit, so no weight overflows.
//!
//! The same kernel and the same uniforms as the generic GWG (one draw scaled by the
//! normaliser, then the MH uniform): `fast/tests.rs` checks per-move probabilities and
//! acceptance ratios on every state of small models to 1e−12 and step-by-step identity of
//! the chains. Only one draw per step (`gwg` = `gwg-1`: k > 1 is not defined on categorical
//! models). f is updated by the move's exact difference and recomputed every
//! [`super::REFRESH`] steps.

use super::RefreshClock;
use super::sum_tree::SumTrees;
use crate::proposal::mh_accept;
use dlp_core::capability::PottsView;
use dlp_core::{ChainRng, DomainKind, SamplerError, StepInfo, Target};
use rand::RngExt;

/// Largest logit bound c for which the tree is used (as for Ising).
const MAX_SHIFT: f64 = 300.0;

/// The model's Potts view when the sum-tree kernel applies to it.
pub fn qualifying_model(target: &dyn Target) -> Option<PottsView<'_>> {
    let m = target.capabilities().potts?;
    let ok = target.space().kind == DomainKind::Categorical && target.space().k() == m.k && m.d() > 0;
    let shift = shift_of(&m);
    (ok && shift.is_finite() && shift <= MAX_SHIFT).then_some(m)
}

fn shift_of(m: &PottsView<'_>) -> f64 {
    (0..m.d())
        .map(|i| {
            let h = &m.fields[i * m.k..(i + 1) * m.k];
            let range =
                h.iter().copied().fold(f64::NEG_INFINITY, f64::max) - h.iter().copied().fold(f64::INFINITY, f64::min);
            let row: f64 = m.weights[m.offsets[i]..m.offsets[i + 1]].iter().map(|w| w.abs()).sum();
            0.5 * (range + row)
        })
        .fold(0.0, f64::max)
}

/// A Potts model's couplings and fields as the per-chain one-hot-gradient kernels keep them
/// (this one and [`super::dlp_potts`]): G of a state, and G's change when a site moves.
pub(crate) struct PottsGraph {
    offsets: Vec<usize>,
    nbrs: Vec<u32>,
    weights: Vec<f64>,
    fields: Vec<f64>,
}

impl PottsGraph {
    pub(crate) fn new(m: &PottsView<'_>) -> Self {
        PottsGraph {
            offsets: m.offsets.to_vec(),
            nbrs: m.neighbours.to_vec(),
            weights: m.weights.to_vec(),
            fields: m.fields.to_vec(),
        }
    }

    /// The neighbours of site i.
    pub(crate) fn neighbours(&self, i: usize) -> &[u32] {
        &self.nbrs[self.offsets[i]..self.offsets[i + 1]]
    }

    /// G (d × `k`) of the classes `c` into `g`; returns ℓ(c).
    pub(crate) fn gradient(&self, k: usize, c: &[u32], g: &mut [f64]) -> f64 {
        let mut f = 0.0;
        for (i, &ci) in c.iter().enumerate() {
            let gi = &mut g[i * k..(i + 1) * k];
            gi.copy_from_slice(&self.fields[i * k..(i + 1) * k]);
            for e in self.offsets[i]..self.offsets[i + 1] {
                gi[c[self.nbrs[e] as usize] as usize] += self.weights[e];
            }
            // ℓ = Σ h_i[c_i] + ½ Σ_i Σ_{j~i} J_ij [c_i = c_j].
            let h = self.fields[i * k + ci as usize];
            f += h + 0.5 * (gi[ci as usize] - h);
        }
        f
    }

    /// Site i moving from class a to b moves G_j[a] by −J_ij and G_j[b] by +J_ij for its
    /// neighbours j; `g` is one chain's G (d × `k`), whose entries start at flat index `base`
    /// of the chains' array, and the changed entries' old values go to `undo` under those flat
    /// indices.
    pub(crate) fn shift_neighbours(
        &self,
        k: usize,
        g: &mut [f64],
        base: usize,
        (i, a, b): (usize, usize, usize),
        undo: &mut Vec<(usize, f64)>,
    ) {
        for e in self.offsets[i]..self.offsets[i + 1] {
            let nb = self.nbrs[e] as usize;
            let (ia, ib) = (nb * k + a, nb * k + b);
            undo.push((base + ia, g[ia]));
            undo.push((base + ib, g[ib]));
            g[ia] -= self.weights[e];
            g[ib] += self.weights[e];
        }
    }
}

/// GWG-1 chains on a Potts view with per-chain one-hot gradients and move-weight sum trees.
pub struct GwgPottsChains {
    n: usize,
    d: usize,
    k: usize,
    graph: PottsGraph,
    shift: f64,
    c: Vec<u32>,
    /// G, n × d × K.
    g: Vec<f64>,
    tree: SumTrees,
    f: Vec<f64>,
    refresh: RefreshClock,
    /// The G entries the last move changed, with their old values (restored exactly on a
    /// rejection, so a rejected move leaves no rounding behind).
    undo: Vec<(usize, f64)>,
}

impl GwgPottsChains {
    /// Starts `x0.len() / d` chains on the Potts view `m`.
    pub fn new(m: &PottsView<'_>, x0: &[u32]) -> Result<Self, SamplerError> {
        let (d, k) = (m.d(), m.k);
        let n = x0.len() / d;
        if n == 0 || !x0.len().is_multiple_of(d) {
            return Err(SamplerError::BadInitialState(format!("{} values do not form rows of d = {d}", x0.len())));
        }
        let mut c = GwgPottsChains {
            n,
            d,
            k,
            graph: PottsGraph::new(m),
            shift: shift_of(m),
            c: x0.to_vec(),
            g: vec![0.0; n * d * k],
            tree: SumTrees::new(n, d * k),
            f: vec![0.0; n],
            refresh: RefreshClock::new(n),
            undo: Vec::new(),
        };
        for j in 0..n {
            c.rebuild(j);
        }
        Ok(c)
    }

    /// G, f and the whole tree of chain j from its state.
    fn rebuild(&mut self, j: usize) {
        let (d, k) = (self.d, self.k);
        let f = self.graph.gradient(k, &self.c[j * d..(j + 1) * d], &mut self.g[j * d * k..(j + 1) * d * k]);
        self.f[j] = f;
        for i in 0..d {
            for v in 0..k {
                let w = self.weight(j, i, v);
                self.tree.put(j, i * k + v, w);
            }
        }
        self.tree.rebuild(j);
    }

    /// The logit ½(G_i[v] − G_i[c_i]) of chain j (−∞ for v = c_i).
    fn logit(&self, j: usize, i: usize, v: usize) -> f64 {
        let ci = self.c[j * self.d + i] as usize;
        if v == ci {
            return f64::NEG_INFINITY;
        }
        let gi = &self.g[(j * self.d + i) * self.k..(j * self.d + i + 1) * self.k];
        0.5 * (gi[v] - gi[ci])
    }

    fn weight(&self, j: usize, i: usize, v: usize) -> f64 {
        (self.logit(j, i, v) - self.shift).exp()
    }

    /// Refreshes the leaves of site i and its neighbours.
    fn refresh_around(&mut self, j: usize, i: usize) {
        self.refresh_site(j, i);
        for q in 0..self.graph.neighbours(i).len() {
            let nb = self.graph.neighbours(i)[q] as usize;
            self.refresh_site(j, nb);
        }
    }

    fn refresh_site(&mut self, j: usize, i: usize) {
        for v in 0..self.k {
            let w = self.weight(j, i, v);
            self.tree.set(j, i * self.k + v, w);
        }
    }

    /// log q(m) of chain j's current state for move m = i·K + v.
    fn log_q(&self, j: usize, m: usize) -> f64 {
        self.logit(j, m / self.k, m % self.k) - self.shift - self.tree.total(j).ln()
    }

    /// Moves site i of chain j to class b: G of the neighbours, the leaves of i and of the
    /// neighbours. Returns f(x') − f(x) = G_i[b] − G_i[a].
    fn apply(&mut self, j: usize, i: usize, b: usize) -> f64 {
        let (d, k) = (self.d, self.k);
        let a = self.c[j * d + i] as usize;
        let df = self.g[(j * d + i) * k + b] - self.g[(j * d + i) * k + a];
        self.c[j * d + i] = b as u32;
        self.undo.clear();
        let base = j * d * k;
        self.graph.shift_neighbours(k, &mut self.g[base..base + d * k], base, (i, a, b), &mut self.undo);
        self.refresh_around(j, i);
        df
    }

    /// The per-move log-probabilities of chain j in the generic layout (tests).
    pub fn move_log_probs(&self, j: usize) -> Vec<f64> {
        (0..self.d * self.k).map(|m| self.log_q(j, m)).collect()
    }

    /// (f(x') − f(x), log acceptance ratio) of move m applied to chain j; the move is applied.
    fn propose(&mut self, j: usize, m: usize) -> (f64, f64) {
        let (i, b) = (m / self.k, m % self.k);
        let a = self.c[j * self.d + i] as usize;
        let fwd = self.log_q(j, m);
        let df = self.apply(j, i, b);
        let rev = self.log_q(j, i * self.k + a);
        (df, df + rev - fwd)
    }

    /// Reverts the last [`GwgPottsChains::propose`] of chain j: site i back to class a, the
    /// changed G entries to their old values, their leaves recomputed.
    fn undo(&mut self, j: usize, i: usize, a: usize) {
        self.c[j * self.d + i] = a as u32;
        for &(idx, v) in self.undo.iter().rev() {
            self.g[idx] = v;
        }
        self.refresh_around(j, i);
    }

    /// GWG's log acceptance ratio of move m from chain j's state, without moving it (tests).
    pub fn log_accept_ratio(&mut self, j: usize, m: usize) -> f64 {
        let a = self.c[j * self.d + m / self.k] as usize;
        let (_, ratio) = self.propose(j, m);
        self.undo(j, m / self.k, a);
        ratio
    }
    /// One step of chain j: one draw from the tree, the move applied in place, the reverse
    /// move's probability from the updated tree, one MH uniform; a rejection moves the site
    /// back. Then the chain's cache is recomputed if due ([`super::REFRESH`]).
    fn step_chain(&mut self, j: usize, rng: &mut ChainRng) -> StepInfo {
        let m = self.tree.draw(j, rng.random::<f64>());
        let a = self.c[j * self.d + m / self.k] as usize;
        let (df, ratio) = self.propose(j, m);
        let (accepted, accept_prob) = mh_accept(ratio, rng);
        if accepted {
            self.f[j] += df;
        } else {
            self.undo(j, m / self.k, a);
        }
        if self.refresh.due(j) {
            self.rebuild(j);
        }
        StepInfo::evaluated(accepted, accept_prob, 1)
    }
}

super::chains_stepped_one_by_one!(GwgPottsChains, c);
