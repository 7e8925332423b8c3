//! `rwm`: random-walk Metropolis on a discrete space, the gradient-free baseline of DISCS.
//!
//! Goshvadi, Sun, Liu, Nova, Zhang, Dai, Dai & Schuurmans, "DISCS: A Benchmark for Discrete
//! Sampling", NeurIPS 2023 Datasets & Benchmarks; the recipe is the authors' `randomwalk`
//! sampler (google-research/discs, `discs/samplers/randomwalk.py`).
//!
//! One step from x ∈ {0..K−1}^d with r = `--step-size`, the expected number of changed sites:
//!
//! 1. every coordinate i changes independently with probability p = r/d;
//! 2. a changed coordinate takes a value drawn uniformly among its K − 1 other values
//!    (binary and spin: the flip; categorical and ordinal: a uniform other index, as DISCS's
//!    `(x + randint(1, K)) mod K`);
//! 3. the proposal q(y|x) = Π_i [y_i ≠ x_i] p/(K−1) + [y_i = x_i](1 − p) is symmetric, so the
//!    Metropolis–Hastings test accepts y with min(1, π(y)/π(x)) = min(1, e^{f(y) − f(x)}).
//!
//! Exact for π (MH with a symmetric proposal). For 0 < p < 1 every state is proposed from every
//! state with positive probability (y = x included), so on a target positive everywhere the
//! chain is irreducible and aperiodic: its row flags no model. r must satisfy 0 < r < d
//! (`start` refuses other values with one line naming r and d): r = d would change every
//! coordinate at every step, which on binary spaces only swaps a state with its complement.
//!
//! Adaptation: DISCS's adaptive variant moves r by (acceptance − 0.234) per step and clips it to
//! [1, d]; here `dlp sample`'s warm-up tunes r by the crate's dual averaging toward acceptance
//! 0.234 (the row's `target_accept`, DISCS's RWM target) and freezes it, with r kept inside
//! (0, d) ([`Rwm::adapt`]: plain dual averaging is unbounded above, and r ≥ d is refused), so the
//! kept samples come from the fixed-r kernel the exact suite checks.
//!
//! Cost: one log-density evaluation per step of a chain that proposes a move (the moving chains'
//! proposals are evaluated in one batch); a chain whose proposal is x itself is kept without an
//! evaluation or an MH draw (A = 0). No gradients.

use crate::dual_averaging::{AdaptOptions, Adapted, dual_average};
use crate::mh::{Caching, MhChains, Proposal, TargetEval, exact_row, start_error};
use crate::spec::Build;
use crate::spec::{
    NO_DEFAULTS, NO_TESTS, PLAIN, STEP_SIZE, SamplerName, SamplerParams, SamplerSpec, TestSpec, ergodic_everywhere,
};
use dlp_core::TargetExt;
use dlp_core::{
    ChainRng, Chains, EvalError, ExactKernel, RunOptions, Sampler, SamplerError, Space, Target, Transition,
};
use rand::RngExt;

/// DISCS's target acceptance for adaptive random-walk Metropolis.
pub const RWM_TARGET_ACCEPT: f64 = 0.234;

/// Random-walk Metropolis with r expected changed sites per proposal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rwm {
    /// Expected number of changed coordinates per proposal (0 < r < d).
    pub r: f64,
}

impl Rwm {
    /// r finite and > 0 (the bound r < d is checked at `start`, where d is known).
    pub fn new(r: f64) -> Result<Self, SamplerError> {
        if !(r.is_finite() && r > 0.0) {
            return Err(SamplerError::BadParameter {
                sampler: "rwm".into(),
                message: format!(
                    "--step-size r = {r}: r is the expected number of changed sites and must be a finite number > 0"
                ),
            });
        }
        Ok(Rwm { r })
    }

    /// Registry constructor for `rwm` (`--step-size` is r).
    pub fn build(_: &SamplerName, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        let r = params.step_size.ok_or_else(|| SamplerError::BadParameter {
            sampler: "rwm".into(),
            message:
                "needs --step-size r, the expected number of changed sites (dlp sample adapts it when none is given)"
                    .into(),
        })?;
        Ok(Box::new(Rwm::new(r)?))
    }

    /// The row's warm-up tuner: the crate's dual averaging of r (as for every adapted step
    /// size), with each window's r and the frozen one kept in (0, d) by [`clamp_radius`],
    /// since `start` refuses r ≥ d and dual averaging has no upper bound.
    pub fn adapt(
        _name: &SamplerName,
        params: &SamplerParams,
        target: &dyn Target,
        x0: &[u32],
        opts: &AdaptOptions,
        run: &RunOptions,
    ) -> Result<Adapted, SamplerError> {
        let d = target.space().d;
        let windows = (opts.warmup / opts.window).max(1);
        let _ = params;
        let build = |r: f64| -> Result<Box<dyn Sampler>, SamplerError> { Ok(Box::new(Rwm::new(clamp_radius(r, d))?)) };
        let (r, positions, last_accept) = dual_average(&build, target, x0, 0..windows, opts, run)?;
        Ok(Adapted {
            step_size: Some(clamp_radius(r, d)),
            step_size_min: None,
            ladder: None,
            positions,
            last_accept,
            windows,
        })
    }
}

/// r clamped to [d·10⁻⁶, d − ½] (p = r/d in [10⁻⁶, 1 − 1/(2d)]): inside (0, d) on every model.
pub fn clamp_radius(r: f64, d: usize) -> f64 {
    let d = d as f64;
    r.clamp(d * 1e-6, d - 0.5)
}

/// The per-coordinate change probability p = r/d.
pub fn change_probability(r: f64, d: usize) -> f64 {
    r / d as f64
}

/// The value a changed coordinate takes: `from` shifted by `offset` ∈ 1..K, mod K (uniform
/// over the K − 1 others for a uniform offset).
pub fn other_value(from: u32, offset: u32, k: usize) -> u32 {
    (from + offset) % k as u32
}

/// The RWM proposal on K values with change probability p (the [`Proposal`] of `rwm`: it
/// caches nothing and reads no gradient).
pub struct RwmProposal {
    /// Per-coordinate change probability r/d.
    pub p: f64,
    /// Values per coordinate.
    pub k: usize,
}

impl Proposal for RwmProposal {
    type Cache = ();

    fn new_cache(&self, _space: &Space) {}

    fn prepare(&self, _space: &Space, _x: &[u32], _grad: &[f64], _cache: &mut ()) {}

    /// Per coordinate one uniform (change iff u < p), and for a change on K > 2 values one
    /// offset in 1..K.
    fn draw(&mut self, _space: &Space, x: &[u32], _cache: &(), rng: &mut ChainRng, y: &mut [u32]) -> u32 {
        let (p, k) = (self.p, self.k);
        let mut changed = 0;
        for (yi, &xi) in y.iter_mut().zip(x) {
            let u: f64 = rng.random();
            *yi = if u < p {
                changed += 1;
                let offset = if k == 2 { 1 } else { rng.random_range(1..k as u32) };
                other_value(xi, offset, k)
            } else {
                xi
            };
        }
        changed
    }

    /// m·ln(p/(K − 1)) + (d − m)·ln(1 − p) for m changed coordinates: the same number both ways
    /// (the proposal is symmetric), so the MH ratio is f(y) − f(x) exactly.
    fn log_prob(&self, _space: &Space, from: &[u32], to: &[u32], _cache: &()) -> f64 {
        let m = from.iter().zip(to).filter(|(a, b)| a != b).count();
        let kept = from.len() - m;
        m as f64 * (self.p / (self.k - 1) as f64).ln() + kept as f64 * (1.0 - self.p).ln()
    }
}

impl Sampler for Rwm {
    fn name(&self) -> String {
        "rwm".into()
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let space = target.space();
        let d = space.d;
        if self.r >= d as f64 {
            return Err(SamplerError::BadParameter {
                sampler: self.name(),
                message: format!(
                    "--step-size r = {} must be below d = {d}, the model's number of coordinates (r is the expected \
                     number of changed sites; r ≥ d changes every site)",
                    self.r
                ),
            });
        }
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        let eval = TargetEval::values_only(target, x0.len() / d);
        let proposal = RwmProposal { p: change_probability(self.r, d), k: space.k() };
        Ok(Box::new(MhChains::new(space, proposal, eval, true, Caching::Keep, x0).map_err(start_error)?))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for Rwm {
    /// Every state y ≠ x with q(y|x)·min(1, e^{f(y) − f(x)}), and x with the rest: the one
    /// kernel's row ([`exact_row`]).
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Result<Vec<Transition>, EvalError> {
        let space = target.space();
        let proposal = RwmProposal { p: change_probability(self.r, space.d), k: space.k() };
        exact_row(&proposal, true, space, x, |y, _| target.log_density(y))
    }
}

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `rwm`.
pub const RWM: SamplerSpec = SamplerSpec {
    stem: "rwm",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE],
    build: Build::Plain(Rwm::build),
    doc: "random-walk Metropolis (gradient-free baseline): each site changes with probability r/d \
          (r = `--step-size` ∈ (0, d), adapted toward acceptance 0.234 in `dlp sample`'s warm-up) to a \
          uniform other value, MH with min(1, π(y)/π(x)); binary/spin/categorical/ordinal",
    paper: "Goshvadi et al. 2023 (DISCS, NeurIPS D&B; `randomwalk.py`)",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: RWM_TARGET_ACCEPT,
    adapt: Some(Rwm::adapt),
    tests: TestSpec { names: &["rwm"], step_size: Some(0.75), ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gibbs::testkit::*;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};
    use dlp_core::{Space, StepInfo};

    #[test]
    fn rwm_is_reversible_on_binary_spin_categorical_and_ordinal() {
        let q = Quadratic::spec_tiny();
        for r in [0.3, 1.0, 2.5] {
            check_exact(&Rwm::new(r).unwrap(), &q, true);
        }
        let spin = Quadratic::new(Space::spin(3), q.w.clone(), q.b.clone());
        check_exact(&Rwm::new(1.5).unwrap(), &spin, true);
        check_exact(&Rwm::new(1.2).unwrap(), &PairwiseCategorical::spec_small(), true);
        let ord = Quadratic::new(Space::ordinal(2, vec![-1, 0, 2]), vec![0.1, -0.2, 0.3, 0.05], vec![0.4, -0.3]);
        check_exact(&Rwm::new(0.8).unwrap(), &ord, true);
    }

    #[test]
    fn row_matches_hand_computation() {
        // spec_tiny from (0,0,0): f = 0 there and f(1,0,0) = 0.3; with r = 1.5, p = 0.5, so
        // q((1,0,0)|x) = 0.5·0.5·0.5 and the move is accepted with min(1, e^{0.3}) = 1;
        // (0,1,0) has f = −0.7: 0.125·e^{−0.7}.
        let q = Quadratic::spec_tiny();
        let row = Rwm::new(1.5).unwrap().transition_row(&q, &[0, 0, 0], 0).unwrap();
        let at = |y: &[u32]| row.iter().find(|(s, _)| s == y).unwrap().1;
        assert!((at(&[1, 0, 0]) - 0.125).abs() < 1e-15);
        assert!((at(&[0, 1, 0]) - 0.125 * (-0.7f64).exp()).abs() < 1e-15);
        assert!((row.iter().map(|t| t.1).sum::<f64>() - 1.0).abs() < 1e-14);
        // Categorical K = 3: a changed site takes each other value with p/2.
        let cat = Space::categorical(2, 3);
        let lq = RwmProposal { p: 0.4, k: 3 }.log_prob(&cat, &[0, 1], &[2, 1], &());
        assert!((lq - (0.2f64 * 0.6).ln()).abs() < 1e-15, "{lq}");
    }

    #[test]
    fn step_follows_transition_row() {
        let q = Quadratic::spec_tiny();
        let info = empirical_check(&Rwm::new(1.5).unwrap(), &q, &[1, 0, 1], 20_000, 51);
        assert!(info.iter().all(|i| i.grad_evals == 0 && i.density_evals == (i.n_proposed > 0) as u32));
        empirical_check(&Rwm::new(1.2).unwrap(), &PairwiseCategorical::spec_small(), &[1, 2], 20_000, 52);
    }

    #[test]
    fn cached_state_survives_many_steps() {
        let t = PairwiseCategorical::spec_small();
        let mut ch = Rwm::new(1.0).unwrap().start(&t, &[0, 0, 2, 1]).unwrap();
        let mut rngs = dlp_core::chain_rngs(5, 0, 2);
        let mut info = [StepInfo::default(); 2];
        for _ in 0..200 {
            ch.step(&mut rngs, &mut info);
        }
        for (y, f) in ch.positions().chunks(2).zip(ch.log_densities().unwrap()) {
            assert_eq!(t.log_density(y).unwrap(), *f);
        }
    }

    #[test]
    fn bad_step_sizes_are_named() {
        for r in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(Rwm::new(r).unwrap_err().to_string().contains("--step-size"), "{r}");
        }
        let e = Rwm::new(3.0).unwrap().start(&Quadratic::spec_tiny(), &[0, 0, 0]).err().unwrap();
        assert!(matches!(e, SamplerError::BadParameter { .. }));
        assert!(e.to_string().contains("r = 3") && e.to_string().contains("d = 3"), "{e}");
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn adaptation_keeps_r_below_d() {
        // A flat target accepts everything, so dual averaging alone would push r past d.
        let flat = Quadratic::new(Space::binary(3), vec![0.0; 9], vec![0.0; 3]);
        let opts = AdaptOptions { warmup: 1000, target_accept: RWM_TARGET_ACCEPT, ..AdaptOptions::default() };
        let a = crate::adapt::adapt_step_size(
            "rwm",
            &SamplerParams::default(),
            &flat,
            &[0; 12],
            &opts,
            &RunOptions { seed: 1, threads: 1, chains_per_task: 0 },
        )
        .unwrap();
        assert!(a.step_size.is_some_and(|r| r > 0.0 && r < 3.0), "{a:?}");
        assert_eq!(crate::adapt::default_target_accept("rwm"), 0.234);
    }
}
