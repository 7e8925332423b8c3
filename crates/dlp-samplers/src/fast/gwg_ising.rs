//! Gibbs-with-gradients (`gwg`, `gwg-<k>`) on sparse Ising models in O(k·(degree + 1)·log d)
//! per step instead of O(d) (issue 21, item 1).
//!
//! On an Ising model ℓ(x) = Σ_i b_i u_i + Σ_{i<j} J_ij u_i u_j (u = 2x − 1 on spins, u = x on
//! bits) the GWG logit of flipping site i is λ_i = ½ g_i (1 − 2x_i) = ½ Δu_i h_i, with the local
//! field h_i = b_i + Σ_j J_ij u_j and the flip's change Δu_i = s(1 − 2x_i) (s = 2 on spins, 1 on
//! bits). A flip of i negates λ_i and moves h_j by J_ij Δu_i for the neighbours j only, so the
//! chains keep, per chain, the local fields and a **sum tree** of the weights
//! w_i = exp(λ_i − c) (c = max_i ½ s(|b_i| + Σ_j |J_ij|) bounds every |λ_i|, so no weight
//! overflows): a draw is one uniform and a descent of the tree (log d), a flip updates
//! degree + 1 leaves and their ancestors, and the normaliser Z = Σ_i w_i is the root.
//!
//! The kernel is the generic [`crate::gwg`] kernel: the same k i.i.d. draws from
//! softmax(λ(x)), the union of flips, and the acceptance ratio
//! f(x') − f(x) + Σ_j log q_{x'}(m_j) − Σ_j log q_x(m_j), where f(x') − f(x) is summed flip by
//! flip from the local fields (exact for this multilinear f) and log q = λ − c − log Z. It
//! consumes the same uniforms in the same order (k draws scaled by the normaliser, then one
//! MH uniform), so a chain follows the generic chain's trajectory except where rounding
//! puts a draw on the other side of a cumulative-sum boundary (the tree sums in another
//! order): `fast/tests.rs` checks both the per-move probabilities and acceptance ratios to
//! 1e−12 and trajectory identity over many steps. Every internal node is recomputed as the sum
//! of its children after a change, so the tree is a function of the leaves: no drift.
//! The cached f is updated by the flip differences and recomputed from the fields every
//! [`super::REFRESH`] steps.
//!
//! The same structure runs the path auxiliary samplers (`pas`, `pas-<R>`, and `alb`, whose
//! exact √-balanced weights exp(½(f(x^(i)) − f(x))) are these λ_i on an Ising model) in
//! O(R·(degree + 1)·log d) per step instead of O(d): the R distinct sites are drawn one after
//! another from the tree with each drawn leaf zeroed (so S_r, the weight not yet drawn, is the
//! root), flipped in place, and the reverse path is scored the same way on the updated tree.
//! [`crate::pas`]'s kernel: the same length uniform, R path uniforms and MH uniform in the
//! same order, the same log Q (the shift c cancels from every w_i / S_r).

use super::RefreshClock;
use super::sum_tree::SumTrees;
use crate::proposal::mh_accept;
use dlp_core::capability::IsingView;
use dlp_core::{ChainRng, SamplerError, StepInfo, Target};
use rand::RngExt;

/// Largest bound c on |λ_i| for which the tree is used (weights stay ≥ e^{−2c}, far from
/// underflow); models with larger fields run the generic kernel.
const MAX_SHIFT: f64 = 300.0;

/// The model's Ising view when the sum-tree kernel applies to it.
pub fn qualifying_model(target: &dyn Target) -> Option<IsingView<'_>> {
    let m = target.capabilities().ising?;
    let shift = shift_of(&m);
    (shift.is_finite() && shift <= MAX_SHIFT && m.d() > 0).then_some(m)
}

fn scale(spin: bool) -> f64 {
    if spin { 2.0 } else { 1.0 }
}

/// c = max_i ½ s (|b_i| + Σ_j |J_ij|) ≥ max |λ_i| over all states.
fn shift_of(m: &IsingView<'_>) -> f64 {
    let s = scale(m.spin);
    (0..m.d())
        .map(|i| {
            let row: f64 = m.weights[m.offsets[i]..m.offsets[i + 1]].iter().map(|w| w.abs()).sum();
            0.5 * s * (m.fields[i].abs() + row)
        })
        .fold(0.0, f64::max)
}

/// GWG chains on an Ising view with per-chain local fields and weight sum trees.
pub struct GwgIsingChains {
    n: usize,
    d: usize,
    spin: bool,
    offsets: Vec<usize>,
    nbrs: Vec<u32>,
    weights: Vec<f64>,
    fields: Vec<f64>,
    shift: f64,
    x: Vec<u32>,
    h: Vec<f64>,
    tree: SumTrees,
    f: Vec<f64>,
    refresh: RefreshClock,
    /// Report steps as the locally balanced sampler does (d flip differences, no gradient).
    lb_records: bool,
    /// The path samplers' lengths and step records, when the chains run one ([`GwgIsingChains::path`]).
    path: Option<PathMoves>,
    // Scratch, reused every step.
    draws: Vec<usize>,
    flipped: Vec<usize>,
    old_h: Vec<(usize, f64)>,
}

impl GwgIsingChains {
    /// Starts `x0.len() / d` chains of GWG with `k` draws per step on the Ising view `m`.
    pub fn new(m: &IsingView<'_>, k: usize, x0: &[u32]) -> Result<Self, SamplerError> {
        let d = m.d();
        let n = x0.len() / d;
        if n == 0 || !x0.len().is_multiple_of(d) {
            return Err(SamplerError::BadInitialState(format!("{} values do not form rows of d = {d}", x0.len())));
        }
        let mut c = GwgIsingChains {
            n,
            d,
            spin: m.spin,
            offsets: m.offsets.to_vec(),
            nbrs: m.neighbours.to_vec(),
            weights: m.weights.to_vec(),
            fields: m.fields.to_vec(),
            shift: shift_of(m),
            x: x0.to_vec(),
            h: vec![0.0; n * d],
            tree: SumTrees::new(n, d),
            f: vec![0.0; n],
            refresh: RefreshClock::new(n),
            lb_records: false,
            path: None,
            draws: vec![0; k],
            flipped: Vec::with_capacity(k),
            old_h: Vec::new(),
        };
        for j in 0..n {
            c.rebuild(j);
        }
        Ok(c)
    }

    /// The exact locally balanced one-flip sampler (`lb`) on the same structure: on an Ising
    /// model (multilinear, no self-couplings) its weights exp(½(f(x^(i)) − f(x))) are GWG-1's
    /// (spec §4.10), so the kernel is GWG-1's; steps are recorded as `lb` records them.
    pub fn locally_balanced(m: &IsingView<'_>, x0: &[u32]) -> Result<Self, SamplerError> {
        let mut c = Self::new(m, 1, x0)?;
        c.lb_records = true;
        Ok(c)
    }

    /// The path auxiliary samplers on the same structure (module doc): paths of `lo` flips, or
    /// `hi` with probability `theta` ([`crate::pas::Pas::lengths`]); a step records `evals`
    /// (density, gradient) evaluations, as the generic sampler counts them.
    pub fn path(
        m: &IsingView<'_>,
        (lo, hi, theta): (usize, usize, f64),
        evals: (u32, u32),
        x0: &[u32],
    ) -> Result<Self, SamplerError> {
        let mut c = Self::new(m, hi, x0)?;
        c.path = Some(PathMoves { lo, hi, theta, evals });
        Ok(c)
    }

    fn u(&self, bit: u32) -> f64 {
        if self.spin { 2.0 * bit as f64 - 1.0 } else { bit as f64 }
    }

    /// Local fields, f and the whole tree of chain j from its state.
    fn rebuild(&mut self, j: usize) {
        let d = self.d;
        let mut f = 0.0;
        for i in 0..d {
            let mut h = self.fields[i];
            for e in self.offsets[i]..self.offsets[i + 1] {
                h += self.weights[e] * self.u(self.x[j * d + self.nbrs[e] as usize]);
            }
            self.h[j * d + i] = h;
            // ℓ = Σ b_i u_i + ½ Σ_i u_i Σ_j J_ij u_j (each pair is in both rows).
            let ui = self.u(self.x[j * d + i]);
            f += ui * (self.fields[i] + 0.5 * (h - self.fields[i]));
        }
        self.f[j] = f;
        for i in 0..d {
            let w = self.weight(j, i);
            self.tree.put(j, i, w);
        }
        self.tree.rebuild(j);
    }

    /// λ_i of chain j.
    fn lambda(&self, j: usize, i: usize) -> f64 {
        let x = self.x[j * self.d + i];
        0.5 * scale(self.spin) * (1.0 - 2.0 * x as f64) * self.h[j * self.d + i]
    }

    fn weight(&self, j: usize, i: usize) -> f64 {
        (self.lambda(j, i) - self.shift).exp()
    }

    /// Sets leaf i of chain j's tree to its current weight and recomputes its ancestors.
    fn refresh_leaf(&mut self, j: usize, i: usize) {
        let w = self.weight(j, i);
        self.tree.set(j, i, w);
    }

    /// The site drawn with probability w_i / Z by one uniform (descent of the tree).
    fn draw(&self, j: usize, rng: &mut ChainRng) -> usize {
        self.tree.draw(j, rng.random::<f64>())
    }

    /// Flips site i of chain j: fields of the neighbours, leaves of i and the neighbours.
    /// Returns f(x') − f(x) = Δu_i h_i. Old fields go to `old_h` when `record`.
    fn flip(&mut self, j: usize, i: usize, record: bool) -> f64 {
        let d = self.d;
        let du = scale(self.spin) * (1.0 - 2.0 * self.x[j * d + i] as f64);
        let df = du * self.h[j * d + i];
        self.x[j * d + i] ^= 1;
        for e in self.offsets[i]..self.offsets[i + 1] {
            let nb = self.nbrs[e] as usize;
            if record {
                self.old_h.push((nb, self.h[j * d + nb]));
            }
            self.h[j * d + nb] += self.weights[e] * du;
        }
        self.refresh_leaf(j, i);
        for e in self.offsets[i]..self.offsets[i + 1] {
            self.refresh_leaf(j, self.nbrs[e] as usize);
        }
        df
    }

    /// log q_x(i) = λ_i − c − log Z for chain j's current state.
    fn log_q(&self, j: usize, i: usize) -> f64 {
        self.lambda(j, i) - self.shift - self.tree.total(j).ln()
    }

    /// The per-move log-probabilities log q_x(i) of chain j (tests compare them with the
    /// generic kernel's).
    pub fn move_log_probs(&self, j: usize) -> Vec<f64> {
        (0..self.d).map(|i| self.log_q(j, i)).collect()
    }

    /// GWG's log acceptance ratio for the ordered draws `draws` from chain j's state, without
    /// moving the chain (tests compare it with the generic kernel's).
    pub fn log_accept_ratio(&mut self, j: usize, draws: &[usize]) -> f64 {
        let (_, a) = self.propose(j, draws);
        self.undo(j);
        a
    }

    /// Applies the union of `draws` to chain j and returns f(x') − f(x) and the log
    /// acceptance ratio; [`GwgIsingChains::undo`] reverts it.
    fn propose(&mut self, j: usize, draws: &[usize]) -> (f64, f64) {
        let fwd: f64 = draws.iter().map(|&i| self.log_q(j, i)).sum();
        self.flipped.clear();
        self.old_h.clear();
        let mut df = 0.0;
        for &i in draws {
            if !self.flipped.contains(&i) {
                self.flipped.push(i);
                df += self.flip(j, i, true);
            }
        }
        let rev: f64 = draws.iter().map(|&i| self.log_q(j, i)).sum();
        (df, df + rev - fwd)
    }

    /// log q of `site` from the weights left in chain j's tree (λ − c − log of the root), and
    /// the site's leaf zeroed: one position of a path without replacement.
    fn take(&mut self, j: usize, site: usize) -> f64 {
        let lq = self.lambda(j, site) - self.shift - self.tree.total(j).ln();
        self.tree.set(j, site, 0.0);
        lq
    }

    /// Applies the path `self.draws[..len]` to chain j, whose forward log-probability `fwd`
    /// has been taken from the tree (its leaves zeroed), and scores the reverse path on the
    /// updated tree, which leaves the path's leaves zeroed; returns f(y) − f(x) and the log
    /// acceptance ratio. [`GwgIsingChains::undo`] reverts it, or
    /// [`GwgIsingChains::restore_path_leaves`] completes it.
    fn propose_path(&mut self, j: usize, len: usize, fwd: f64) -> (f64, f64) {
        self.flipped.clear();
        self.old_h.clear();
        let mut df = 0.0;
        // Each flip refreshes its own leaf and its neighbours', so after the last one every
        // leaf holds y's weight again, the zeroed path leaves included.
        for r in 0..len {
            let i = self.draws[r];
            self.flipped.push(i);
            df += self.flip(j, i, true);
        }
        let mut rev = 0.0;
        for r in (0..len).rev() {
            rev += self.take(j, self.draws[r]);
        }
        (df, df + rev - fwd)
    }

    /// After an accepted path: the path's leaves, zeroed by the reverse scoring, get y's
    /// weights back. (A rejected path needs nothing here: [`GwgIsingChains::undo`] refreshes
    /// every flipped site's leaf from x.)
    fn restore_path_leaves(&mut self, j: usize, len: usize) {
        for r in 0..len {
            self.refresh_leaf(j, self.draws[r]);
        }
    }

    /// One step of chain j, then its cached f, fields and tree recomputed if due
    /// ([`super::REFRESH`]). GWG / `lb`: k draws (one uniform each), the union of flips
    /// applied in place with the flip differences summed, the reverse draws' probabilities
    /// from the updated tree, one MH uniform; a rejection restores the fields and leaves. Path
    /// samplers: [`GwgIsingChains::path_step`].
    fn step_chain(&mut self, j: usize, rng: &mut ChainRng) -> StepInfo {
        let info = match self.path {
            Some(moves) => self.path_step(j, &moves, rng),
            None => self.flip_step(j, rng),
        };
        if self.refresh.due(j) {
            self.rebuild(j);
        }
        info
    }

    /// One GWG / `lb` step of chain j (see [`GwgIsingChains::step_chain`]).
    fn flip_step(&mut self, j: usize, rng: &mut ChainRng) -> StepInfo {
        let mut draws = std::mem::take(&mut self.draws);
        for m in draws.iter_mut() {
            *m = self.draw(j, rng);
        }
        let (df, a) = self.propose(j, &draws);
        let n_prop = self.flipped.len() as u32;
        let (accepted, accept_prob) = mh_accept(a, rng);
        if accepted {
            self.f[j] += df;
        } else {
            self.undo(j);
        }
        self.draws = draws;
        if self.lb_records {
            StepInfo {
                accepted,
                accept_prob,
                n_proposed: 1,
                n_changed: accepted as u32,
                density_evals: self.d as u32,
                ..StepInfo::default()
            }
        } else {
            StepInfo::evaluated(accepted, accept_prob, n_prop)
        }
    }

    /// The path auxiliary log acceptance ratio of the path `sites` from chain j's state,
    /// without moving the chain (tests compare it with [`crate::pas::log_accept_ratio`]).
    pub fn path_log_accept_ratio(&mut self, j: usize, sites: &[usize]) -> f64 {
        self.draws.resize(self.draws.len().max(sites.len()), 0);
        self.draws[..sites.len()].copy_from_slice(sites);
        let fwd: f64 = sites.iter().map(|&i| self.take(j, i)).sum();
        let (_, a) = self.propose_path(j, sites.len(), fwd);
        self.undo(j);
        a
    }

    /// One path step of chain j: a length, the path drawn from the tree, MH on the path.
    fn path_step(&mut self, j: usize, moves: &PathMoves, rng: &mut ChainRng) -> StepInfo {
        let len = if moves.hi != moves.lo && rng.random::<f64>() < moves.theta { moves.hi } else { moves.lo };
        let mut fwd = 0.0;
        for r in 0..len {
            let i = self.draw(j, rng);
            self.draws[r] = i;
            fwd += self.take(j, i);
        }
        let (df, a) = self.propose_path(j, len, fwd);
        let (accepted, accept_prob) = mh_accept(a, rng);
        if accepted {
            self.f[j] += df;
            self.restore_path_leaves(j, len);
        } else {
            self.undo(j);
        }
        let (density_evals, grad_evals) = moves.evals;
        StepInfo { density_evals, grad_evals, ..StepInfo::evaluated(accepted, accept_prob, len as u32) }
    }

    /// Reverts the last [`GwgIsingChains::propose`] of chain j.
    fn undo(&mut self, j: usize) {
        let d = self.d;
        for &i in &self.flipped {
            self.x[j * d + i] ^= 1;
        }
        for &(nb, h) in self.old_h.iter().rev() {
            self.h[j * d + nb] = h;
        }
        // Indexed loops: refresh_leaf borrows self mutably, and a rejection is a hot path, so no
        // temporary list of the touched sites is built.
        for k in 0..self.flipped.len() {
            self.refresh_leaf(j, self.flipped[k]);
        }
        for k in 0..self.old_h.len() {
            self.refresh_leaf(j, self.old_h[k].0);
        }
    }
}

super::chains_stepped_one_by_one!(GwgIsingChains, x);

/// A path sampler's lengths (`lo`, or `hi` with probability `theta`) and step records.
#[derive(Clone, Copy, Debug)]
struct PathMoves {
    lo: usize,
    hi: usize,
    theta: f64,
    evals: (u32, u32),
}
