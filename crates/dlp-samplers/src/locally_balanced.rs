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
use crate::mh::exact_eval;
use crate::proposal::{mh_accept, sample_logits};
use crate::spec::{
    NO_DEFAULTS, NO_TESTS, PLAIN, SamplerName, SamplerParams, SamplerSpec, TestSpec, ergodic_everywhere,
};
use dlp_core::Deltas;
use dlp_core::TargetExt;
use dlp_core::math::logsumexp;
use dlp_core::{Batch, ChainRng, Chains, EvalError, ExactKernel, Sampler, SamplerError, StepInfo, Target, Transition};
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
    out.iter_mut().for_each(|v| *v *= 0.5);
    Ok(logsumexp(out))
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
        let d = space.d;
        let n = x0.len() / d;
        let mut f = vec![0.0; n];
        target.log_density_batch(x0, &mut f)?;
        let mut lam = vec![0.0; n * d];
        let deltas = Deltas::of(target);
        let log_z =
            x0.chunks(d).zip(lam.chunks_mut(d)).map(|(x, l)| lb_logits(&deltas, x, l)).collect::<Result<_, _>>()?;
        Ok(Box::new(LbChains {
            target,
            deltas,
            x: x0.to_vec(),
            f,
            lam,
            log_z,
            y: vec![0; d],
            lam_y: vec![0.0; d],
            scratch: Vec::new(),
        }))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for LocallyBalanced {
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Vec<Transition> {
        let d = target.space().d;
        let mut lam = vec![0.0; d];
        let deltas = Deltas::of(target);
        let log_z = exact_eval(lb_logits(&deltas, x, &mut lam));
        let mut lam_y = vec![0.0; d];
        let mut row = BTreeMap::new();
        let mut stay = 1.0;
        for i in 0..d {
            let mut y = x.to_vec();
            y[i] = 1 - y[i];
            let log_z_y = exact_eval(lb_logits(&deltas, &y, &mut lam_y));
            let p = (lam[i] - log_z).exp() * lb_log_accept_ratio(log_z, log_z_y).min(0.0).exp();
            stay -= p;
            row.insert(y, p);
        }
        row.insert(x.to_vec(), stay.max(0.0));
        crate::gibbs::finish_row(row)
    }
}

struct LbChains<'t> {
    target: &'t dyn Target,
    /// The target's conditionals, looked up once.
    deltas: Deltas<'t>,
    x: Vec<u32>,
    f: Vec<f64>,
    lam: Vec<f64>,
    log_z: Vec<f64>,
    y: Vec<u32>,
    lam_y: Vec<f64>,
    scratch: Vec<f64>,
}

impl Chains for LbChains<'_> {
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
        for j in 0..self.f.len() {
            let (x, lam) = (&mut self.x[j * d..(j + 1) * d], &mut self.lam[j * d..(j + 1) * d]);
            let i = sample_logits(lam, &mut self.scratch, &mut rngs[j]);
            self.y.copy_from_slice(x);
            self.y[i] = 1 - self.y[i];
            let log_z_y = lb_logits(&self.deltas, &self.y, &mut self.lam_y)?;
            let (accepted, accept_prob) = mh_accept(lb_log_accept_ratio(self.log_z[j], log_z_y), &mut rngs[j]);
            if accepted {
                self.f[j] += 2.0 * lam[i];
                x.copy_from_slice(&self.y);
                lam.copy_from_slice(&self.lam_y);
                self.log_z[j] = log_z_y;
            }
            info[j] = StepInfo {
                accepted,
                accept_prob,
                n_proposed: 1,
                n_changed: accepted as u32,
                density_evals: d as u32,
                grad_evals: 0,
                data_evals: 0,
            };
        }
        Ok(())
    }
}

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `lb`.
pub const LB: SamplerSpec = SamplerSpec {
    stem: "lb",
    counts: PLAIN,
    numbers: &[],
    params: &[],
    build: LocallyBalanced::build,
    doc: "exact locally balanced one-flip proposal",
    paper: "Zanella 2020",
    exact: true,
    needs_data: false,
    particles: false,
    wraps: false,
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
        let row = LocallyBalanced.transition_row(&q, &[0, 0, 0], 0);
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
