//! `alb`: the adaptive locally balanced proposal of Sun, Dai & Schuurmans, "Optimal Scaling
//! for Locally Balanced Proposals in Discrete Spaces" (NeurIPS 2022, arXiv:2209.08183):
//! locally balanced multi-flip proposals whose number of flips is tuned toward the optimal
//! acceptance rate 0.574. Binary and spin spaces.
//!
//! The authors' sampler (`LocallyBalancedProposalSampler` in their public `LBP_Scale` code,
//! `albp-<rate>` in its experiment scripts; LB-1 of their Table 1 is the same sampler with one
//! flip, our `lb`) differs from `pas` in one thing: the site weights come from the **exact**
//! flip differences Δ_i(x) = f(x^{(i)}) − f(x), balanced by g(t) = √t (log-weight Δ_i/2),
//! not from the gradient's first-order estimate. One step from x:
//!
//! 1. a length L (⌊r⌋ or ⌊r⌋ + 1, as [`crate::pas::Pas::lengths`] mixes them: both with
//!    probability ≥ 5%, so both parities);
//! 2. L distinct sites drawn one after another without replacement from the weights
//!    w_i(x) ∝ exp(Δ_i(x)/2) of the start state; y = x with them flipped;
//! 3. accept with min(1, e^A), A = f(y) − f(x) + log Q_y(reversed path) − log Q_x(path), the
//!    reverse path scored with y's exact weights.
//!
//! Exactness and irreducibility are `pas`'s (the path involution; the two-length mixture),
//! with exact weights in place of estimated ones: π-reversible for every fixed r, irreducible
//! and aperiodic on {0,1}^d for d ≥ 2. The adaptive part: the authors move the real length U
//! by U ← clamp(U + (acceptance − 0.574), 1, d) after every step and never stop; here `dlp
//! sample`'s warm-up adapts r toward 0.574 by dual averaging of log r (`crate::adapt`, as for
//! `pas`) and then freezes it, so the kept samples come from one fixed exact kernel, the one
//! the exact suite checks. (Their length draw takes ⌊U⌋ with probability U − ⌊U⌋, so its mean
//! is not U; ours has mean r inside [1, d − 1] away from the clamps.)
//!
//! Cost: one batched evaluation of f at the proposals plus d flip differences at each
//! (d + 1 density evaluations per step, no gradient); the current state's are cached.
//!
//! Not implemented: the authors' other balancing function t/(t + 1) (their `tdtp1`), and
//! categorical or ordinal spaces.

use crate::dual_averaging::MALA_TARGET_ACCEPT;
use crate::locally_balanced::FlipEval;
use crate::mh::{Caching, MhChains, start_error};
use crate::pas::{Pas, PasProposal};
use crate::spec::Build;
use crate::spec::ergodic_everywhere;
use crate::spec::{NO_DEFAULTS, NO_TESTS, PLAIN, STEP_SIZE, SamplerName, SamplerParams, SamplerSpec, TestSpec};
use dlp_core::{Chains, Deltas, EvalError, ExactKernel, Sampler, SamplerError, Target, TargetExt, Transition};

/// The adaptive locally balanced sampler at a fixed mean path length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Alb {
    /// The path lengths (always [`crate::pas::PathLength::Mean`]).
    paths: Pas,
}

impl Alb {
    /// Mean length `r` (finite, > 0; clamped to [1, d] on a d-site model).
    pub fn new(r: f64) -> Result<Self, SamplerError> {
        let paths = Pas::with_mean(r).map_err(|e| match e {
            SamplerError::BadParameter { message, .. } => SamplerError::BadParameter { sampler: "alb".into(), message },
            e => e,
        })?;
        Ok(Alb { paths })
    }

    /// Registry constructor for `alb` (`--step-size` is the mean length r).
    pub fn build(_: &SamplerName, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        let r = params.step_size.ok_or_else(|| SamplerError::BadParameter {
            sampler: "alb".into(),
            message: "needs --step-size r, the mean path length (dlp sample adapts it when none is given)".into(),
        })?;
        Ok(Box::new(Alb::new(r)?))
    }
}

/// Site log-weights and weights from the exact flip differences `deltas` of `x`:
/// logit_i = Δ_i/2 − max_j Δ_j/2, w_i = exp(logit_i) (√ balancing of the exact ratio).
pub fn exact_site_weights(_x: &[u32], deltas: &[f64], logit: &mut [f64], w: &mut [f64]) {
    for (l, &dl) in logit.iter_mut().zip(deltas) {
        *l = 0.5 * dl;
    }
    let m = logit.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m.is_finite() {
        logit.iter_mut().for_each(|l| *l -= m);
    }
    for (w, &l) in w.iter_mut().zip(logit.iter()) {
        *w = l.exp();
    }
}

impl Sampler for Alb {
    fn name(&self) -> String {
        "alb".into()
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let space = target.space();
        if !space.is_binary_like() {
            return Err(SamplerError::Unsupported {
                sampler: self.name(),
                message: format!("domain {:?}: alb flips bits (binary or spin only)", space.kind),
            });
        }
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        if let Some(m) = crate::fast::gwg_ising::qualifying_model(target) {
            // On an Ising model the exact √-balanced weights are the first-order ones; the step
            // records d + 1 density evaluations (flip differences and the value), as `FlipEval`.
            let evals = (space.d as u32 + 1, 0);
            return Ok(Box::new(crate::fast::gwg_ising::GwgIsingChains::path(
                &m,
                self.paths.lengths(space.d),
                evals,
                x0,
            )?));
        }
        let proposal = PasProposal::new(self.paths.lengths(space.d), space.d, exact_site_weights);
        let eval = FlipEval::with_values(target, x0.len() / space.d);
        Ok(Box::new(MhChains::new(space, proposal, eval, true, Caching::Keep, x0).map_err(start_error)?))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for Alb {
    /// `pas`'s row (every ordered path of both lengths, with the functions the step uses),
    /// the weights from the exact flip differences.
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Result<Vec<Transition>, EvalError> {
        let deltas = Deltas::of(target);
        let local = |y: &[u32], out: &mut [f64]| {
            deltas.flip_deltas(y, out)?;
            target.log_density(y)
        };
        crate::pas::mixture_row(&self.paths, target, x, &local, exact_site_weights)
    }
}

// ---- registry row (this module's name, parameter, default and tests) ----

/// The registry row of `alb`.
pub const ALB: SamplerSpec = SamplerSpec {
    stem: "alb",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE],
    build: Build::Plain(Alb::build),
    doc: "adaptive locally balanced proposal: ⌊r⌋ or ⌊r⌋ + 1 distinct sites (both with probability \
          ≥ 5%) drawn without replacement from the exact √-balanced flip weights, MH on the path; \
          r = `--step-size`, adapted toward acceptance 0.574 in `dlp sample`'s warm-up, then fixed; \
          binary/spin",
    paper: "Sun, Dai & Schuurmans 2022 (NeurIPS), adaptive LBP",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["alb"], step_size: Some(1.6), ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gibbs::testkit::*;
    use crate::locally_balanced::LocallyBalanced;
    use dlp_core::Space;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};

    #[test]
    fn alb_preserves_pi_exactly() {
        for r in [1.0, 1.6, 2.5, 3.0] {
            check_exact(&Alb::new(r).unwrap(), &Quadratic::spec_tiny(), true);
            check_exact(&Alb::new(r).unwrap(), &spin_tiny(), true);
        }
        // A non-multilinear f: the exact weights keep it exact (the ratio never relies on a
        // first-order estimate).
        let mut q = Quadratic::spec_tiny();
        q.w[4] = -0.9;
        check_exact(&Alb::new(2.2).unwrap(), &q, true);
    }

    #[test]
    fn one_flip_paths_are_lb() {
        // On one site every path is that site's flip with weight 1, so the kernel is `lb`'s.
        let one = Quadratic::new(Space::binary(1), vec![0.0], vec![0.7]);
        let (a, b) = (matrix(&Alb::new(1.0).unwrap(), &one, 0), matrix(&LocallyBalanced, &one, 0));
        for (ra, rb) in a.iter().zip(&b) {
            for (pa, pb) in ra.iter().zip(rb) {
                assert!((pa - pb).abs() < 1e-15, "{pa} vs {pb}");
            }
        }
    }

    #[test]
    fn step_follows_transition_row() {
        let q = Quadratic::spec_tiny();
        let info = empirical_check(&Alb::new(1.6).unwrap(), &q, &[0, 1, 0], 20_000, 51);
        assert!(info.iter().all(|i| i.density_evals == 4 && i.grad_evals == 0 && matches!(i.n_proposed, 1 | 2)));
        empirical_check(&Alb::new(2.3).unwrap(), &spin_tiny(), &[1, 1, 0], 20_000, 52);
    }

    #[test]
    fn bad_parameters_and_spaces_are_named() {
        let e = Alb::new(f64::NAN).unwrap_err();
        assert!(e.to_string().contains("alb") && e.to_string().contains("r = NaN"), "{e}");
        let e = Alb::new(2.0).unwrap().start(&PairwiseCategorical::spec_small(), &[0, 0]).err().unwrap();
        assert!(matches!(e, SamplerError::Unsupported { .. }), "{e}");
    }
}
