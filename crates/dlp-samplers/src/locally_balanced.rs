//! `lb`: the exact locally balanced one-flip sampler (Zanella 2020, balancing function √t).
//!
//! Spec `reproduction.md` §2, row `lb` (LB-1 of the paper's plots). Binary and spin targets:
//! logits λ_i(x) = (f(x^{(i)}) − f(x))/2 from the d exact flip differences
//! ([`TargetExt::flip_deltas`]); draw i ~ softmax(λ(x)), propose x' = x^{(i)}, compute the same
//! d logits at x' and accept with probability min(1, Z(x)/Z(x')), Z(x) = Σ_i exp λ_i(x), in
//! log space (the f-difference cancels exactly against the proposal ratio:
//! e^{Δ}·(e^{−Δ/2}/Z(x'))/(e^{Δ/2}/Z(x)) = Z(x)/Z(x')).
//!
//! Cost (§1.12): the code evaluates 2(d+1) log-densities per step. Here the flip differences
//! (and f) of the current state are cached and f(x') = f(x) + Δ_i, so a step performs one
//! `flip_deltas` call at x', counted as d log-density evaluations (one per neighbour).
//!
//! Not implemented: categorical/ordinal domains (GWG covers categorical moves).

use crate::dual_averaging::MALA_TARGET_ACCEPT;
use crate::mh::{Caching, Evaluator, MhChains, MoveProposal, start_error};
use crate::proposal::sample_logits;
use crate::spec::Build;
use crate::spec::{
    NO_DEFAULTS, NO_TESTS, PLAIN, SamplerName, SamplerParams, SamplerSpec, TestSpec, ergodic_everywhere,
};
use dlp_core::Deltas;
use dlp_core::TargetExt;
use dlp_core::math::logsumexp;
use dlp_core::{Batch, ChainRng, Chains, EvalError, ExactKernel, Sampler, SamplerError, Space, Target, Transition};
use std::collections::BTreeMap;

/// Exact locally balanced one-flip Metropolis–Hastings sampler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LocallyBalanced;

impl LocallyBalanced {
    /// Registry constructor for `lb`.
    pub fn build(_: &SamplerName, _: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        Ok(Box::new(LocallyBalanced))
    }
}

/// The flip logits λ_i(x) = (f(x^{(i)}) − f(x))/2 into `out` (length d); returns log Z(x) =
/// logsumexp(λ). `out[i]·2` is the exact flip difference.
pub fn lb_logits(deltas: &Deltas<'_>, x: &[u32], out: &mut [f64]) -> Result<f64, EvalError> {
    deltas.flip_deltas(x, out)?;
    Ok(lb_logits_of_deltas(out))
}

/// [`lb_logits`] from the flip differences already in `out` (halved in place).
fn lb_logits_of_deltas(out: &mut [f64]) -> f64 {
    out.iter_mut().for_each(|v| *v *= 0.5);
    logsumexp(out)
}

/// LB's log acceptance ratio log Z(x) − log Z(x').
pub fn lb_log_accept_ratio(log_z_x: f64, log_z_y: f64) -> f64 {
    log_z_x - log_z_y
}

impl Sampler for LocallyBalanced {
    fn name(&self) -> String {
        "lb".into()
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let space = target.space();
        if !space.is_binary_like() {
            return Err(SamplerError::Unsupported {
                sampler: self.name(),
                message: format!("domain {:?}: lb flips bits (binary or spin only)", space.kind),
            });
        }
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        // Sparse Ising models: GWG-1's sum-tree kernel, which is this kernel there.
        if let Some(m) = crate::fast::gwg_ising::qualifying_model(target) {
            return Ok(Box::new(crate::fast::gwg_ising::GwgIsingChains::locally_balanced(&m, x0)?));
        }
        let eval = FlipEval::new(target, x0.len() / space.d);
        let chains = MhChains::new(space, LbProposal { scratch: Vec::new() }, eval, true, Caching::Keep, x0);
        Ok(Box::new(chains.map_err(start_error)?))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for LocallyBalanced {
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Result<Vec<Transition>, EvalError> {
        let d = target.space().d;
        let mut lam = vec![0.0; d];
        let deltas = Deltas::of(target);
        let log_z = lb_logits(&deltas, x, &mut lam)?;
        let mut lam_y = vec![0.0; d];
        let mut row = BTreeMap::new();
        let mut stay = 1.0;
        for i in 0..d {
            let mut y = x.to_vec();
            y[i] = 1 - y[i];
            let log_z_y = lb_logits(&deltas, &y, &mut lam_y)?;
            let p = (lam[i] - log_z).exp() * lb_log_accept_ratio(log_z, log_z_y).min(0.0).exp();
            stay -= p;
            row.insert(y, p);
        }
        row.insert(x.to_vec(), stay.max(0.0));
        Ok(crate::gibbs::finish_row(row))
    }
}

/// LB's proposal for the one MH kernel ([`MhChains`]): one flip i ~ softmax(λ(x)), tested
/// with log Z(x) − log Z(x') ([`lb_log_accept_ratio`], the f-difference cancelled exactly,
/// as [`ExactKernel::transition_row`] forms it). Its local information is the d exact flip
/// differences of [`FlipEval`], not a gradient.
struct LbProposal {
    /// [`sample_logits`]'s buffer.
    scratch: Vec<f64>,
}

/// What an LB chain keeps of its state: λ(x) and log Z(x).
struct LbCache {
    lam: Vec<f64>,
    log_z: f64,
}

impl MoveProposal for LbProposal {
    type Cache = LbCache;
    /// The flipped site is the one where y differs; nothing else to record.
    type Move = ();

    fn new_cache(&self, space: &Space) -> LbCache {
        LbCache { lam: vec![0.0; space.d], log_z: 0.0 }
    }

    fn new_move(&self, _: &Space) {}

    /// `deltas` are the flip differences ([`FlipEval`]'s rows), halved into λ.
    fn prepare(&self, _: &Space, _x: &[u32], deltas: &[f64], c: &mut LbCache) {
        c.lam.copy_from_slice(deltas);
        c.log_z = lb_logits_of_deltas(&mut c.lam);
    }

    fn draw(&mut self, _: &Space, x: &[u32], c: &LbCache, rng: &mut ChainRng, y: &mut [u32], _: &mut ()) -> u32 {
        let i = sample_logits(&c.lam, &mut self.scratch, rng);
        y.copy_from_slice(x);
        y[i] = 1 - y[i];
        1
    }

    fn log_accept_ratio(
        &mut self,
        _: &Space,
        _: &[u32],
        _: &[u32],
        _: &(),
        _: f64,
        _: f64,
        cx: &LbCache,
        cy: &LbCache,
    ) -> f64 {
        lb_log_accept_ratio(cx.log_z, cy.log_z)
    }
}

/// LB's evaluator: a proposal's "gradient" row is its d exact flip differences
/// ([`Deltas::flip_deltas`]) and its f is f(x) + Δ_i(x) from the current state's (no
/// evaluation of f itself); a row counts d density evaluations, one per neighbour. With
/// `values` (multi-flip proposals, [`crate::alb`]) f of the rows is evaluated too, in one
/// batch (d + 1 per row).
pub(crate) struct FlipEval<'t> {
    target: &'t dyn Target,
    values: bool,
    /// The target's conditionals, looked up once.
    deltas: Deltas<'t>,
    d: usize,
    ys: Vec<u32>,
    f: Vec<f64>,
    g: Vec<f64>,
    /// Rows staged with other than one flip (a chain moved by `Chains::set_states`, as replica
    /// exchange does), whose f is evaluated rather than derived from the current state's.
    evaluate_f: Vec<bool>,
}

impl<'t> FlipEval<'t> {
    /// Room for `n` one-flip proposal rows.
    fn new(target: &'t dyn Target, n: usize) -> Self {
        let d = target.space().d;
        let (ys, f, g) = (vec![0; n * d], vec![0.0; n], vec![0.0; n * d]);
        FlipEval { target, values: false, deltas: Deltas::of(target), d, ys, f, g, evaluate_f: vec![false; n] }
    }

    /// Room for `n` proposal rows of any number of flips (f evaluated).
    pub(crate) fn with_values(target: &'t dyn Target, n: usize) -> Self {
        FlipEval { values: true, ..Self::new(target, n) }
    }
}

impl Evaluator for FlipEval<'_> {
    fn grad_len(&self) -> usize {
        self.d
    }

    fn start(&mut self, x0: &[u32], f: &mut [f64], grad: &mut [f64]) -> Result<(), EvalError> {
        self.target.log_density_batch(x0, f)?;
        x0.chunks(self.d).zip(grad.chunks_mut(self.d)).try_for_each(|(x, g)| self.deltas.flip_deltas(x, g))
    }

    fn current(&mut self, _x: &[u32], _b: Batch<'_>, _f: &mut [f64], _g: &mut [f64]) -> Result<(), EvalError> {
        // LB runs with exact differences (`Caching::Keep`) only.
        Err(EvalError::NoData)
    }

    fn stage(&mut self, _chain: usize, row: usize, x: &[u32], f_x: f64, deltas_x: &[f64], y: &[u32]) {
        let d = self.d;
        self.ys[row * d..(row + 1) * d].copy_from_slice(y);
        if !self.values {
            let mut differ = x.iter().zip(y).enumerate().filter(|(_, (a, b))| a != b).map(|(i, _)| i);
            let (first, second) = (differ.next(), differ.next());
            self.evaluate_f[row] = first.is_none() || second.is_some();
            if let (Some(i), None) = (first, second) {
                // 2·(Δ/2): the expression the chains have always used (λ_i doubled), bit for bit.
                self.f[row] = f_x + 2.0 * (0.5 * deltas_x[i]);
            }
        }
    }

    fn evaluate(&mut self, rows: usize, _batch: Batch<'_>) -> Result<(), EvalError> {
        let d = self.d;
        if self.values {
            self.target.log_density_batch(&self.ys[..rows * d], &mut self.f[..rows])?;
        } else {
            for r in (0..rows).filter(|&r| self.evaluate_f[r]) {
                self.f[r] = self.target.log_density(&self.ys[r * d..(r + 1) * d])?;
            }
        }
        for (y, g) in self.ys[..rows * d].chunks(d).zip(self.g.chunks_mut(d)) {
            self.deltas.flip_deltas(y, g)?;
        }
        Ok(())
    }

    fn row(&self, r: usize) -> (&[u32], f64, &[f64]) {
        let d = self.d;
        (&self.ys[r * d..(r + 1) * d], self.f[r], &self.g[r * d..(r + 1) * d])
    }

    fn evals_per_row(&self) -> (u32, u32) {
        (self.d as u32 + self.values as u32, 0)
    }
}

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `lb`.
pub const LB: SamplerSpec = SamplerSpec {
    stem: "lb",
    counts: PLAIN,
    numbers: &[],
    params: &[],
    build: Build::Plain(LocallyBalanced::build),
    doc: "exact locally balanced one-flip proposal",
    paper: "Zanella 2020",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["lb"], ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gibbs::testkit::*;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};

    #[test]
    fn lb_is_reversible_on_the_tiny_model() {
        let q = Quadratic::spec_tiny();
        check_spec_pi(&q, &SPEC_TINY_PI);
        check_exact(&LocallyBalanced, &q, true);
        // Non-multilinear extension too: LB uses exact differences, so it stays exact.
        let mut q2 = Quadratic::spec_tiny();
        q2.w[4] = -0.9;
        check_exact(&LocallyBalanced, &q2, true);
    }

    #[test]
    fn row_matches_hand_computation() {
        // From (0,0,0) of §4.3: Δ = (0.3, −0.7, 0.25); from x' = (1,0,0) (f = 0.3) the flip
        // differences are (−0.3, 1.2 − 0.3, −0.65 − 0.3).
        let q = Quadratic::spec_tiny();
        let z = |v: &[f64]| v.iter().map(|d| (d / 2.0).exp()).sum::<f64>();
        let zx = z(&[0.3, -0.7, 0.25]);
        let zy = z(&[-0.3, 0.9, -0.95]);
        let expect = (0.15f64).exp() / zx * (zx / zy).min(1.0);
        let row = LocallyBalanced.transition_row(&q, &[0, 0, 0], 0).unwrap();
        let p = row.iter().find(|(y, _)| y == &[1, 0, 0]).unwrap().1;
        assert!((p - expect).abs() < 1e-15, "{p} vs {expect}");
    }

    #[test]
    fn step_follows_transition_row() {
        let q = Quadratic::spec_tiny();
        let info = empirical_check(&LocallyBalanced, &q, &[1, 0, 1], 20_000, 31);
        assert!(info.iter().all(|i| i.density_evals == 3 && i.n_proposed == 1));
    }

    #[test]
    fn categorical_targets_are_refused() {
        let e = LocallyBalanced.start(&PairwiseCategorical::spec_small(), &[0, 0]).err().unwrap();
        assert!(e.to_string().contains("Categorical"), "{e}");
    }
}
