//! Path auxiliary sampler `pas-<R>`: R distinct single-site flips per step, proposed along
//! an auxiliary path and corrected by Metropolis–Hastings on (state, path).
//!
//! Sun, Dai, Li, Schuurmans & Zhou, "Path Auxiliary Proposal for MCMC in Discrete Space",
//! ICLR 2022 (§4: the path auxiliary proposal with the first-order, locally balanced
//! weights of the start state; the acceptance scores the auxiliary path, not the state
//! pair). The concrete recipe follows the authors' public implementation in
//! google-research/discs (`discs/samplers/path_auxiliary.py`, `PAFSNoReplacement` with a
//! fixed number of flips and `approx_with_grad`, plus `noreplacement_sampling_renormalize`
//! in `discs/common/math_util.py`); the details taken from the code rather than the paper
//! text are marked (code). Binary and spin spaces only.
//!
//! One step from x (bits x_i ∈ {0,1}, g = ∇f(x) with respect to the bit):
//!
//! 1. site logits λ_i(x) = ½ (1 − 2x_i) g_i(x) — the first-order estimate of
//!    f(x^{(i)}) − f(x), √-balanced; site law q_x(i) = softmax(λ(x))_i;
//! 2. path i_1, …, i_R: R distinct sites drawn one after another **without replacement**
//!    from q_x (code: `multinomial(…, replacement=False)`), every draw with the weights of
//!    the start state x; with R' = min(R, d) draws on a d < R model (code: the adaptive
//!    radius is clipped to d). Its probability is
//!    Q_x(i_1..i_R) = Π_r q_x(i_r) / (1 − Σ_{s<r} q_x(i_s));
//! 3. y = x with the R sites flipped; the reverse path from y is the same sites in reverse
//!    order, drawn with the weights of y: Q_y(i_R..i_1) (code: `jnp.flip` of the trajectory);
//! 4. accept y with min(1, exp A), A = f(y) − f(x) + log Q_y(i_R..i_1) − log Q_x(i_1..i_R).
//!
//! Exactness: (x, path) ↦ (y, reversed path) is an involution (flipping the same R sites of
//! y gives x back), and A is the MH ratio of that deterministic move on the extended space
//! (state, path) with path law Q_x, so every path keeps detailed balance with respect to π
//! and so does the state kernel, which sums over all R! · C(d, R) ordered paths
//! ([`ExactKernel::transition_row`] does exactly that, with the functions `step` uses).
//!
//! Irreducibility (a property of the fixed-length recipe, the code's included): an accepted
//! move flips exactly R' sites, so an even R' never changes the parity of the number of ones
//! (the chain stays in the parity class it starts in) and R' = d only ever proposes the
//! complement. π-invariance holds for every R; ergodicity on {0,1}^d needs R' odd and
//! R' < d (then R'-sets generate every flip set), or R' = 1. The exact suite checks πP = π;
//! the empirical tests run `pas-3` on 4 sites for this reason.
//!
//! The ordered no-replacement probabilities are evaluated as ratios of the unnormalised
//! weights w_i = exp(λ_i − max λ): Q_x = Π_r w_{i_r} / S_r with S_r the sum of the weights of
//! the sites not yet drawn (summed afresh, so no 1 − Σ cancellation).
//!
//! On the brief's with-replacement reading: drawing the R sites with replacement from q_x and
//! flipping their union, scored by Π_r q_y(i_r) / Π_r q_x(i_r), is exactly `gwg-<R>`
//! (`gwg.rs`); PAS as the authors run it draws without replacement, so every accepted move
//! changes exactly R' coordinates.
//!
//! Cost: one gradient and one log-density evaluation per step (f and ∇f of the current state
//! are cached and reused after acceptance), O(R·d) for the path and its two probabilities.
//!
//! Not supported (`SamplerError::Unsupported` at `start`): categorical and ordinal spaces
//! (the code's categorical variant also draws a class per site; not implemented here).

use crate::proposal::{accept_prob, mh_accept, sample_weights};
use crate::registry::{SamplerName, SamplerParams};
use dlp_core::{
    Batch, ChainRng, Chains, DomainKind, EvalError, ExactKernel, Sampler, SamplerError, Space, StepInfo, Target,
    Transition,
};
use std::collections::BTreeMap;

/// The path auxiliary sampler with paths of `r` distinct flips.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pas {
    /// Path length R (≥ 1): sites flipped per proposal (min(R, d) on a d-site model).
    pub r: usize,
}

impl Pas {
    /// Checks `r ≥ 1`.
    pub fn new(r: usize) -> Result<Self, SamplerError> {
        if r == 0 {
            return Err(SamplerError::BadParameter {
                sampler: "pas-0".into(),
                message: "path length R = 0; R must be at least 1".into(),
            });
        }
        Ok(Pas { r })
    }

    /// Registry constructor for `pas-<R>`.
    pub fn build(name: &SamplerName, _: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        Ok(Box::new(Pas::new(name.numbers.first().copied().unwrap_or(1))?))
    }

    fn check(&self, space: &Space) -> Result<(), SamplerError> {
        match space.kind {
            DomainKind::Binary | DomainKind::Spin => Ok(()),
            DomainKind::Categorical | DomainKind::Ordinal => Err(SamplerError::Unsupported {
                sampler: self.name(),
                message: "only binary and spin spaces are supported (categorical, ordinal are not)".into(),
            }),
        }
    }

    /// The number of flips on a d-site model: min(R, d).
    fn len(&self, d: usize) -> usize {
        self.r.min(d)
    }
}

/// Site weights of the path proposal at `x` from the gradient `grad` (one entry per bit),
/// into `logit` and `w` (length d): logit_i = ½ (1 − 2x_i) g_i − max_j(…), w_i = exp(logit_i).
pub fn site_weights(x: &[u32], grad: &[f64], logit: &mut [f64], w: &mut [f64]) {
    for ((l, &c), &g) in logit.iter_mut().zip(x).zip(grad) {
        *l = 0.5 * (1.0 - 2.0 * c as f64) * g;
    }
    let m = logit.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m.is_finite() {
        logit.iter_mut().for_each(|l| *l -= m);
    }
    for (w, &l) in w.iter_mut().zip(logit.iter()) {
        *w = l.exp();
    }
}

/// log of the probability that sequential draws without replacement from the weights `w`
/// (log-weights `logit`) give the sites of `path` in the order given:
/// Σ_r logit_{i_r} − ln S_r, S_r = Σ of w over the sites not among i_1..i_{r−1}.
/// `taken` is scratch of length d (left all false).
pub fn path_log_prob(logit: &[f64], w: &[f64], path: impl Iterator<Item = usize>, taken: &mut [bool]) -> f64 {
    let mut lp = 0.0;
    let mut drawn = Vec::new();
    for i in path {
        let s: f64 = w.iter().zip(taken.iter()).filter(|(_, t)| !**t).map(|(w, _)| w).sum();
        lp += logit[i] - s.ln();
        taken[i] = true;
        drawn.push(i);
    }
    for i in drawn {
        taken[i] = false;
    }
    lp
}

/// PAS's log acceptance ratio for the path `path` from x to y (y = x with the path's sites
/// flipped): f(y) − f(x) + log Q_y(reversed path) − log Q_x(path).
#[allow(clippy::too_many_arguments)]
pub fn log_accept_ratio(
    f_x: f64,
    f_y: f64,
    logit_x: &[f64],
    w_x: &[f64],
    logit_y: &[f64],
    w_y: &[f64],
    path: &[usize],
    taken: &mut [bool],
) -> f64 {
    let fwd = path_log_prob(logit_x, w_x, path.iter().copied(), taken);
    let rev = path_log_prob(logit_y, w_y, path.iter().rev().copied(), taken);
    f_y - f_x + rev - fwd
}

/// Draws `path.len()` distinct sites one after another from the weights `w` (the drawn
/// ones removed); `scratch` has length d.
fn draw_path(w: &[f64], path: &mut [usize], scratch: &mut [f64], rng: &mut ChainRng) {
    scratch.copy_from_slice(w);
    for slot in path.iter_mut() {
        let total: f64 = scratch.iter().sum();
        let i = sample_weights(scratch, total, rng);
        *slot = i;
        scratch[i] = 0.0;
    }
}

/// y = x with the sites of `path` flipped.
fn flip(x: &[u32], path: &[usize], y: &mut [u32]) {
    y.copy_from_slice(x);
    for &i in path {
        y[i] = 1 - y[i];
    }
}

impl Sampler for Pas {
    fn name(&self) -> String {
        format!("pas-{}", self.r)
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let space = target.space();
        self.check(space)?;
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        let d = space.d;
        let n = x0.len() / d;
        let mut f = vec![0.0; n];
        let mut grad = vec![0.0; n * d];
        target.log_density_grad_batch(x0, &mut f, &mut grad);
        let mut logit = vec![0.0; n * d];
        let mut w = vec![0.0; n * d];
        for (((x, g), l), w) in x0.chunks(d).zip(grad.chunks(d)).zip(logit.chunks_mut(d)).zip(w.chunks_mut(d)) {
            site_weights(x, g, l, w);
        }
        let len = self.len(d);
        Ok(Box::new(PasChains {
            target,
            len,
            x: x0.to_vec(),
            f,
            logit,
            w,
            y: vec![0; n * d],
            f_y: vec![0.0; n],
            grad_y: vec![0.0; n * d],
            logit_y: vec![0.0; d],
            w_y: vec![0.0; d],
            paths: vec![0; n * len],
            scratch: vec![0.0; d],
            taken: vec![false; d],
        }))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for Pas {
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Vec<Transition> {
        let d = target.space().d;
        let len = self.len(d);
        let eval = |y: &[u32]| {
            let mut g = vec![0.0; d];
            let f = target.log_density_grad(y, &mut g);
            let (mut l, mut w) = (vec![0.0; d], vec![0.0; d]);
            site_weights(y, &g, &mut l, &mut w);
            (f, l, w)
        };
        let (f_x, logit_x, w_x) = eval(x);
        let mut cache: BTreeMap<Vec<u32>, (f64, Vec<f64>, Vec<f64>)> = BTreeMap::new();
        let mut row: BTreeMap<Vec<u32>, f64> = BTreeMap::new();
        let mut taken = vec![false; d];
        let mut stay = 1.0;
        let mut y = vec![0; d];
        // Every ordered path of `len` distinct sites, as a base-d counter skipping repeats.
        let mut path = vec![0usize; len];
        loop {
            let distinct = (1..len).all(|r| !path[..r].contains(&path[r]));
            if distinct && path.iter().all(|&i| w_x[i] > 0.0) {
                let q = path_log_prob(&logit_x, &w_x, path.iter().copied(), &mut taken).exp();
                flip(x, &path, &mut y);
                let (f_y, logit_y, w_y) = cache.entry(y.clone()).or_insert_with(|| eval(&y));
                let a = log_accept_ratio(f_x, *f_y, &logit_x, &w_x, logit_y, w_y, &path, &mut taken);
                let p = q * accept_prob(a);
                *row.entry(y.clone()).or_insert(0.0) += p;
                stay -= p;
            }
            let mut pos = 0;
            while pos < len {
                path[pos] += 1;
                if path[pos] < d {
                    break;
                }
                path[pos] = 0;
                pos += 1;
            }
            if pos == len {
                break;
            }
        }
        *row.entry(x.to_vec()).or_insert(0.0) += stay.max(0.0);
        crate::gibbs::finish_row(row)
    }
}

struct PasChains<'t> {
    target: &'t dyn Target,
    /// Flips per proposal, min(R, d).
    len: usize,
    x: Vec<u32>,
    f: Vec<f64>,
    /// Site log-weights and weights of the current states (d per chain).
    logit: Vec<f64>,
    w: Vec<f64>,
    y: Vec<u32>,
    f_y: Vec<f64>,
    grad_y: Vec<f64>,
    logit_y: Vec<f64>,
    w_y: Vec<f64>,
    paths: Vec<usize>,
    scratch: Vec<f64>,
    taken: Vec<bool>,
}

impl Chains for PasChains<'_> {
    fn n_chains(&self) -> usize {
        self.f.len()
    }

    fn positions(&self) -> &[u32] {
        &self.x
    }

    fn log_densities(&self) -> Option<&[f64]> {
        Some(&self.f)
    }

    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], _batch: Batch<'_>) -> Result<(), EvalError> {
        let d = self.target.space().d;
        let (n, len) = (self.f.len(), self.len);
        // Draw every chain's path first so that the proposals are evaluated in one batch.
        for (j, rng) in rngs.iter_mut().enumerate().take(n) {
            let path = &mut self.paths[j * len..(j + 1) * len];
            draw_path(&self.w[j * d..(j + 1) * d], path, &mut self.scratch, rng);
            flip(&self.x[j * d..(j + 1) * d], path, &mut self.y[j * d..(j + 1) * d]);
        }
        self.target.log_density_grad_batch(&self.y, &mut self.f_y, &mut self.grad_y);
        for j in 0..n {
            let xs = j * d..(j + 1) * d;
            site_weights(&self.y[xs.clone()], &self.grad_y[xs.clone()], &mut self.logit_y, &mut self.w_y);
            let a = log_accept_ratio(
                self.f[j],
                self.f_y[j],
                &self.logit[xs.clone()],
                &self.w[xs.clone()],
                &self.logit_y,
                &self.w_y,
                &self.paths[j * len..(j + 1) * len],
                &mut self.taken,
            );
            let (accepted, accept_prob) = mh_accept(a, &mut rngs[j]);
            if accepted {
                self.x[xs.clone()].copy_from_slice(&self.y[xs.clone()]);
                self.f[j] = self.f_y[j];
                self.logit[xs.clone()].copy_from_slice(&self.logit_y);
                self.w[xs].copy_from_slice(&self.w_y);
            }
            info[j] = StepInfo::evaluated(accepted, accept_prob, len as u32);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gibbs::testkit::*;
    use crate::gwg::Gwg;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};

    fn spin_tiny() -> Quadratic {
        let q = Quadratic::spec_tiny();
        Quadratic::new(Space::spin(3), q.w.clone(), q.b.clone())
    }

    #[test]
    fn pas_preserves_pi_exactly() {
        for r in 1..=4 {
            check_exact(&Pas::new(r).unwrap(), &Quadratic::spec_tiny(), true);
            check_exact(&Pas::new(r).unwrap(), &spin_tiny(), true);
        }
    }

    #[test]
    fn pas1_equals_gwg1() {
        // One flip: the no-replacement path law is the site law, so PAS-1 is GWG-1.
        for t in [Quadratic::spec_tiny(), spin_tiny()] {
            let a = matrix(&Pas::new(1).unwrap(), &t, 0);
            let b = matrix(&Gwg::new(1).unwrap(), &t, 0);
            for (ra, rb) in a.iter().zip(&b) {
                for (pa, pb) in ra.iter().zip(rb) {
                    assert!((pa - pb).abs() < 1e-12, "{pa} vs {pb}");
                }
            }
        }
    }

    #[test]
    fn path_probability_matches_hand_computation() {
        // Weights (1, 2, 5): path (2, 0) has probability 5/8 · 1/3.
        let w = [1.0f64, 2.0, 5.0];
        let logit: Vec<f64> = w.iter().map(|v| v.ln()).collect();
        let mut taken = [false; 3];
        let lp = path_log_prob(&logit, &w, [2, 0].into_iter(), &mut taken);
        assert!((lp.exp() - 5.0 / 8.0 / 3.0).abs() < 1e-15);
        assert_eq!(taken, [false; 3]);
    }

    #[test]
    fn step_follows_transition_row() {
        let q = Quadratic::spec_tiny();
        for r in [2, 3] {
            let info = empirical_check(&Pas::new(r).unwrap(), &q, &[0, 1, 0], 20_000, 31 + r as u64);
            assert!(info.iter().all(|i| i.grad_evals == 1 && i.density_evals == 1 && i.n_proposed as usize == r));
        }
        empirical_check(&Pas::new(2).unwrap(), &spin_tiny(), &[1, 1, 0], 20_000, 36);
    }

    #[test]
    fn cached_state_survives_many_steps() {
        let q = Quadratic::spec_tiny();
        let mut ch = Pas::new(2).unwrap().start(&q, &[0, 0, 0, 1, 1, 1]).unwrap();
        let mut rngs = dlp_core::chain_rngs(5, 0, 2);
        let mut info = [StepInfo::default(); 2];
        for _ in 0..200 {
            ch.step(&mut rngs, &mut info);
        }
        for (y, f) in ch.positions().chunks(3).zip(ch.log_densities().unwrap()) {
            assert_eq!(q.log_density(y), *f);
        }
    }

    #[test]
    fn bad_parameters_and_spaces_are_named() {
        let e = Pas::new(0).unwrap_err();
        assert!(e.to_string().contains("R = 0"), "{e}");
        let e = Pas::new(2).unwrap().start(&PairwiseCategorical::spec_small(), &[0, 0]).err().unwrap();
        assert!(matches!(e, SamplerError::Unsupported { .. }), "{e}");
        let ord = Quadratic::new(Space::ordinal(1, vec![0, 1, 2]), vec![0.0], vec![0.0]);
        let e = Pas::new(1).unwrap().start(&ord, &[0]).err().unwrap();
        assert!(matches!(e, SamplerError::Unsupported { .. }));
    }
}
