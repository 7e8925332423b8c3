//! DULA and DMALA on sparse Potts models (DISCS's Potts task: an open lattice, K classes, a
//! field per site and class): per step O(d) random bytes and byte comparisons, plus
//! O(|M|·(degree + 1)·K) for the moved sites M, instead of two O(d·K) gradient passes.
//!
//! On a Potts model ℓ(c) = Σ_i h_i\[c_i\] + Σ_{i<j} J_ij [c_i = c_j] the one-hot gradient is
//! G_i\[v\] = h_i\[v\] + Σ_j J_ij [c_j = v] (kept per chain, as in [`super::gwg_potts`]); DLP's
//! categorical proposal (spec `reproduction.md` §1.4) moves each site independently with row
//! logits ℓ_i\[v\] = β (G_i\[v\] − G_i\[c_i\]) − 1/α for v ≠ c_i and 0 for v = c_i.
//!
//! * **Draw.** Site i moves with probability p_i = S_i / (1 + S_i), S_i = Σ_{v≠c_i} e^{ℓ_i\[v\]}
//!   (so the stay probability is the generic softmax's 1/(1 + S_i)); that decision compares one
//!   random byte with the top byte of T_i = ⌊p_i·2⁶⁴⌋, kept per chain and site, and on a tie
//!   (probability 2⁻⁸) `next_u64() >> 8` with its low 56 bits, so it is exactly T_i/2⁶⁴ (see
//!   [`super::Threshold`]). A moving site then takes v ≠ c_i with probability e^{ℓ_i\[v\]}/S_i by
//!   one f64 uniform (inverse CDF in class order): v has probability e^{ℓ_i\[v\]}/(1 + S_i), the
//!   generic law. Per chain and step: d bytes (`fill_bytes`), then in site order a `next_u64`
//!   per tie and an f64 uniform per moving site, then (DMALA, if anything moved) the MH uniform.
//! * **Ratio.** A = f(y) − f(x) + log q(x|y) − log q(y|x) changes only through the moved sites
//!   and their neighbours (the touched sites T; every other site keeps its class and its G):
//!   f(y) − f(x) is Σ G_i\[b\] − G_i\[a\] over the moves taken one after another (exact: the
//!   extension is multilinear across sites), and log q(x|y) − log q(y|x) = Σ_{i∈M}
//!   (ℓ_i^y\[a_i\] − ℓ_i^x\[b_i\]) − Σ_{i∈T} (log Z_i(y) − log Z_i(x)) with log Z_i = log(1 + S_i),
//!   kept per chain and site. An acceptance stores the touched sites' log Z and thresholds
//!   (computed for the ratio); a rejection restores c and G.
//!
//! `StepInfo` is the generic path's (a proposal that moves counts one density and one gradient
//! evaluation; one that stays is not evaluated and draws no MH uniform). G, f, log Z and the
//! thresholds of a chain are recomputed from its state every [`super::REFRESH`]
//! steps, so the ± J updates of G leave no drift.

use super::RefreshClock;
use super::Threshold;
use super::gwg_potts::PottsGraph;
use crate::proposal::mh_accept;
use dlp_core::capability::PottsView;
use dlp_core::{ChainRng, DomainKind, SamplerError, StepInfo, Target};
use rand::{Rng, RngExt};

/// Sites per block of the move scan ([`super::block_hits`]).
const BLOCK: usize = super::HIT_BLOCK;

const LOW56: u64 = (1 << 56) - 1;

/// The model's Potts view when this fast path applies (categorical space of the view's K,
/// everything finite).
pub fn qualifying_model(target: &dyn Target) -> Option<PottsView<'_>> {
    let m = target.capabilities().potts?;
    let space = target.space();
    let finite = m.fields.iter().chain(m.weights).all(|v| v.is_finite());
    (space.kind == DomainKind::Categorical && space.k() == m.k && m.d() > 0 && m.k >= 2 && finite).then_some(m)
}

/// A site's proposal quantities at the current state: log Z_i and the move threshold T_i.
#[derive(Clone, Copy, Debug, Default)]
struct SiteLaw {
    log_z: f64,
    top: u8,
    low: u64,
}

/// Running DULA/DMALA chains on a Potts view (module doc).
pub struct PottsDlpChains {
    n: usize,
    d: usize,
    k: usize,
    mh: bool,
    beta: f64,
    /// The categorical distance penalty 1/α (= 2·half_inv_step).
    pen: f64,
    graph: PottsGraph,
    /// Per chain: classes, G (n × d × K), f, steps since the last recomputation.
    c: Vec<u32>,
    g: Vec<f64>,
    f: Vec<f64>,
    refresh: RefreshClock,
    /// Per chain and site: log Z_i, and the threshold's top byte apart for the vectorised scan.
    law: Vec<SiteLaw>,
    t8: Vec<u8>,
    // Scratch, reused every step.
    rbuf: Vec<u8>,
    /// Moves (site, class at x, class at y, forward logit).
    moves: Vec<(usize, usize, usize, f64)>,
    /// G entries changed by the proposal, with their old values.
    undo: Vec<(usize, f64)>,
    /// Touched sites with their law at y (filled by the ratio).
    touched: Vec<(usize, SiteLaw)>,
    marks: Vec<u32>,
    stamp: u32,
}

impl PottsDlpChains {
    /// Starts `x0.len() / d` chains on the Potts view `m` (DMALA when `mh`, DULA otherwise)
    /// with step size α = 1/(2·`half_inv_step`) and gradient weight β = `beta`.
    pub fn new(m: &PottsView<'_>, mh: bool, half_inv_step: f64, beta: f64, x0: &[u32]) -> Result<Self, SamplerError> {
        let (d, k) = (m.d(), m.k);
        let n = x0.len() / d;
        if n == 0 || !x0.len().is_multiple_of(d) {
            return Err(SamplerError::BadInitialState(format!("{} values do not form rows of d = {d}", x0.len())));
        }
        if let Some(v) = x0.iter().find(|&&v| v as usize >= k) {
            return Err(SamplerError::BadInitialState(format!("class {v} is not below K = {k}")));
        }
        let mut c = PottsDlpChains {
            n,
            d,
            k,
            mh,
            beta,
            pen: 2.0 * half_inv_step,
            graph: PottsGraph::new(m),
            c: x0.to_vec(),
            g: vec![0.0; n * d * k],
            f: vec![0.0; n],
            refresh: RefreshClock::new(n),
            law: vec![SiteLaw::default(); n * d],
            t8: vec![0; n * d],
            rbuf: vec![0; d],
            moves: Vec::new(),
            undo: Vec::new(),
            touched: Vec::new(),
            marks: vec![0; d],
            stamp: 0,
        };
        for j in 0..n {
            c.rebuild(j);
        }
        Ok(c)
    }

    /// G, f, and every site's law of chain j from its state.
    fn rebuild(&mut self, j: usize) {
        let (d, k) = (self.d, self.k);
        let f = self.graph.gradient(k, &self.c[j * d..(j + 1) * d], &mut self.g[j * d * k..(j + 1) * d * k]);
        self.f[j] = f;
        for i in 0..d {
            let law = self.site_law(j, i);
            self.law[j * d + i] = law;
            self.t8[j * d + i] = law.top;
        }
    }

    /// ℓ_i[v] of chain j at its current state (the generic arithmetic, in its order).
    #[inline]
    fn logit(&self, j: usize, i: usize, v: usize) -> f64 {
        let gi = &self.g[(j * self.d + i) * self.k..(j * self.d + i + 1) * self.k];
        self.beta * (gi[v] - gi[self.c[j * self.d + i] as usize]) - self.pen
    }

    /// Site i's log Z and move threshold for chain j's current state.
    fn site_law(&self, j: usize, i: usize) -> SiteLaw {
        let ci = self.c[j * self.d + i] as usize;
        let top = (0..self.k).filter(|&v| v != ci).map(|v| self.logit(j, i, v)).fold(f64::NEG_INFINITY, f64::max);
        let (log_z, p_move) = if top <= 0.0 {
            // S ≤ K − 1 without overflow; log1p and S/(1 + S) keep small probabilities exact.
            let s: f64 = (0..self.k).filter(|&v| v != ci).map(|v| self.logit(j, i, v).exp()).sum();
            (s.ln_1p(), s / (1.0 + s))
        } else {
            // Scaled by e^{−top} so nothing overflows: 1 + S = e^{top} (e^{−top} + S').
            let s: f64 = (0..self.k).filter(|&v| v != ci).map(|v| (self.logit(j, i, v) - top).exp()).sum();
            let stay = (-top).exp();
            (top + (stay + s).ln(), s / (stay + s))
        };
        let t = Threshold::of_probability(p_move).bits();
        SiteLaw { log_z, top: (t >> 56) as u8, low: t & LOW56 }
    }

    /// The per-site class probabilities the kernel realises at chain j's state (row-major
    /// d × K), for tests against the generic softmax.
    pub fn class_probabilities(&self, j: usize) -> Vec<f64> {
        let (d, k) = (self.d, self.k);
        let mut out = vec![0.0; d * k];
        for i in 0..d {
            let law = self.law[j * d + i];
            let p_move = ((law.top as u64) << 56 | law.low) as f64 / 18_446_744_073_709_551_616.0;
            let ci = self.c[j * d + i] as usize;
            let top = (0..k).filter(|&v| v != ci).map(|v| self.logit(j, i, v)).fold(0.0, f64::max);
            let w = |v: usize| (self.logit(j, i, v) - top).exp();
            let s: f64 = (0..k).filter(|&v| v != ci).map(w).sum();
            for v in 0..k {
                out[i * k + v] = if v == ci { 1.0 - p_move } else { p_move * w(v) / s };
            }
        }
        out
    }

    /// The DMALA log acceptance ratio this kernel computes for the move from chain j's state
    /// to `y`, without moving the chain (tests compare it with the generic ratio).
    pub fn log_accept_ratio(&mut self, j: usize, y: &[u32]) -> f64 {
        self.moves.clear();
        for (i, &b) in y.iter().enumerate() {
            let (a, b) = (self.c[j * self.d + i] as usize, b as usize);
            if a != b {
                let l = self.logit(j, i, b);
                self.moves.push((i, a, b, l));
            }
        }
        let (_, ratio) = self.propose(j, true);
        self.restore(j);
        ratio
    }

    /// Draws chain j's moves from x into `moves` (module doc).
    fn draw_moves(&mut self, j: usize, rng: &mut ChainRng) {
        let d = self.d;
        let mut r8 = std::mem::take(&mut self.rbuf);
        rng.fill_bytes(&mut r8);
        self.moves.clear();
        let t8 = &self.t8[j * d..(j + 1) * d];
        for (b, (rb, tb)) in r8.chunks(BLOCK).zip(t8.chunks(BLOCK)).enumerate() {
            // One vectorised pass marks the block's moves and ties; only those are visited.
            let mut hits = super::block_hits(rb, tb);
            while hits != 0 {
                let q = hits.trailing_zeros() as usize;
                hits &= hits - 1;
                let i = b * BLOCK + q;
                if rb[q] < tb[q] || (rng.next_u64() >> 8) < self.law[j * d + i].low {
                    let m = self.pick_class(j, i, rng.random::<f64>());
                    self.moves.push(m);
                }
            }
        }
        self.rbuf = r8;
    }

    /// The class a moving site i of chain j takes for the uniform `u`: v ≠ c_i with probability
    /// e^{ℓ_i[v]}/S_i, in class order (rounding leaving u unspent takes the last class with
    /// positive weight); returns the move with its forward logit.
    fn pick_class(&self, j: usize, i: usize, u: f64) -> (usize, usize, usize, f64) {
        let ci = self.c[j * self.d + i] as usize;
        let mut w = [0.0f64; 16];
        let mut ws = vec![];
        let weights: &mut [f64] = if self.k <= 16 {
            &mut w[..self.k]
        } else {
            ws.resize(self.k, 0.0);
            &mut ws
        };
        // Weights relative to the largest positive logit, so that none overflows.
        let top = (0..self.k).filter(|&v| v != ci).map(|v| self.logit(j, i, v)).fold(0.0, f64::max);
        let mut s = 0.0;
        for (v, wv) in weights.iter_mut().enumerate() {
            *wv = if v == ci { 0.0 } else { (self.logit(j, i, v) - top).exp() };
            s += *wv;
        }
        let mut rest = u * s;
        let mut pick = None;
        for (v, &wv) in weights.iter().enumerate() {
            if wv > 0.0 {
                pick = Some(v);
                if rest < wv {
                    break;
                }
                rest -= wv;
            }
        }
        // A site whose every other class has weight 0 has p_i = 0 and is never drawn.
        let b = pick.unwrap_or((ci + 1) % self.k);
        (i, ci, b, self.logit(j, i, b))
    }

    #[inline]
    fn touch(&mut self, i: usize) {
        if self.marks[i] != self.stamp {
            self.marks[i] = self.stamp;
            self.touched.push((i, SiteLaw::default()));
        }
    }

    /// Applies `moves` to chain j's classes and G; returns f(y) − f(x) and (when `ratio`)
    /// DMALA's log acceptance ratio, filling the touched sites' laws at y.
    /// [`PottsDlpChains::restore`] undoes it.
    fn propose(&mut self, j: usize, ratio: bool) -> (f64, f64) {
        let (d, k) = (self.d, self.k);
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.marks.fill(0);
            self.stamp = 1;
        }
        self.touched.clear();
        self.undo.clear();
        let mut df = 0.0;
        for q in 0..self.moves.len() {
            let (i, a, b, _) = self.moves[q];
            self.touch(i);
            let gi = (j * d + i) * k;
            df += self.g[gi + b] - self.g[gi + a];
            self.c[j * d + i] = b as u32;
            for q in 0..self.graph.neighbours(i).len() {
                let nb = self.graph.neighbours(i)[q] as usize;
                self.touch(nb);
            }
            let base = j * d * k;
            self.graph.shift_neighbours(k, &mut self.g[base..base + d * k], base, (i, a, b), &mut self.undo);
        }
        let mut lq = 0.0;
        for q in 0..self.touched.len() {
            let i = self.touched[q].0;
            let law = self.site_law(j, i);
            lq -= law.log_z - self.law[j * d + i].log_z;
            self.touched[q].1 = law;
        }
        if !ratio {
            return (df, 0.0);
        }
        for &(i, a, _, fwd) in &self.moves {
            lq += self.logit(j, i, a) - fwd;
        }
        (df, df + lq)
    }

    /// Puts chain j's classes and G back to x's.
    fn restore(&mut self, j: usize) {
        for &(i, a, _, _) in &self.moves {
            self.c[j * self.d + i] = a as u32;
        }
        for &(idx, v) in self.undo.iter().rev() {
            self.g[idx] = v;
        }
    }

    /// One step of chain j.
    fn step_chain(&mut self, j: usize, rng: &mut ChainRng) -> StepInfo {
        self.draw_moves(j, rng);
        let k = self.moves.len() as u32;
        let info = if k == 0 {
            StepInfo::stayed()
        } else {
            let (df, a) = self.propose(j, self.mh);
            let (accepted, accept_prob) = if self.mh { mh_accept(a, rng) } else { (true, 1.0) };
            if accepted {
                self.f[j] += df;
                for &(i, law) in &self.touched {
                    self.law[j * self.d + i] = law;
                    self.t8[j * self.d + i] = law.top;
                }
            } else {
                self.restore(j);
            }
            StepInfo::evaluated(accepted, accept_prob, k)
        };
        if self.refresh.due(j) {
            self.rebuild(j);
        }
        info
    }
}

super::chains_stepped_one_by_one!(PottsDlpChains, c);
