//! `rw-<R>`: random-walk Metropolis that changes exactly R sites per proposal, the random-walk
//! baseline of Sun, Dai & Schuurmans, "Optimal Scaling for Locally Balanced Proposals in
//! Discrete Spaces" (NeurIPS 2022), whose scaling analysis puts its optimal acceptance at
//! 0.234 (as for Gaussian random walks). Its adaptive version, the one DISCS runs (a radius
//! moved toward acceptance 0.234 in warm-up), is `rwm` ([`crate::rwm`]), which changes each
//! site with probability r/d instead of exactly R sites.
//!
//! One step from x ∈ {0..K−1}^d (R' = min(R, d) on a model with d < R, as `pas-<R>` does):
//!
//! 1. R distinct sites, uniformly among the C(d, R) sets;
//! 2. each of them takes a value drawn uniformly among its K − 1 other values (binary and
//!    spin: the flip);
//! 3. q(y|x) = 1 / (C(d, R)·(K − 1)^R) when x and y differ in exactly R sites, else 0: symmetric,
//!    so the Metropolis–Hastings test accepts y with min(1, e^{f(y) − f(x)}).
//!
//! Exact for π (MH with a symmetric proposal). Irreducibility: on K ≥ 3 values two steps can
//! take any site anywhere (back to where it was included), so every R ≤ d connects the space.
//! On two values per site every accepted move flips exactly R' sites, so — as for `pas-<R>` —
//! an even R' keeps the parity of the number of ones and R' = d ≥ 2 only proposes the complement:
//! the row flags those spaces ([`not_ergodic_on`]) and the exact suite checks that they are
//! reducible and the others irreducible and aperiodic (aperiodic through rejections: on a
//! target that is uniform the binary `rw-1` chain would have period 2).
//!
//! Cost: one log-density evaluation per step and chain (the proposals of all chains in one
//! batch); no gradients.

use crate::mh::{Caching, MhChains, Proposal, TargetEval, exact_row, start_error};
use crate::rwm::{RWM_TARGET_ACCEPT, other_value};
use crate::spec::{Build, NO_DEFAULTS, NO_TESTS, SamplerName, SamplerParams, SamplerSpec, TestSpec};
use dlp_core::TargetExt;
use dlp_core::{ChainRng, Chains, EvalError, ExactKernel, Sampler, SamplerError, Space, Target, Transition};
use rand::RngExt;

/// Random-walk Metropolis changing exactly `r` sites per proposal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomWalk {
    /// Sites changed per proposal (min(r, d) on a d-site model).
    pub r: usize,
}

impl RandomWalk {
    /// Registry constructor for `rw-<R>` (R ≥ 1).
    pub fn build(name: &SamplerName, _: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        match name.numbers.first() {
            Some(&r) if r >= 1 => Ok(Box::new(RandomWalk { r })),
            _ => Err(SamplerError::BadParameter {
                sampler: "rw".into(),
                message: "needs the number of changed sites R ≥ 1 in its name: rw-<R>".into(),
            }),
        }
    }
}

/// The registry's [`crate::spec::NotErgodicOn`] for `rw-<R>`: on two values per site (binary,
/// spin, or categorical/ordinal with K = 2) an even R' = min(R, d) keeps the parity of the
/// number of changed-from-start sites, and R' = d ≥ 2 only reaches the complement.
pub fn not_ergodic_on(name: &SamplerName, space: &Space) -> Option<String> {
    let (&r, d) = (name.numbers.first()?, space.d);
    let len = r.min(d);
    if space.k() != 2 || d < 2 {
        return None;
    }
    if len == d {
        Some(format!("rw-{r} changes all {d} sites at every step, so it only moves between a state and its complement"))
    } else if len % 2 == 0 {
        Some(format!(
            "rw-{r} changes an even number of two-valued sites, so the parity of the number of ones never changes"
        ))
    } else {
        None
    }
}

/// The `rw-<R>` proposal on K values (a [`Proposal`]: caches nothing, reads no gradient).
pub struct RandomWalkProposal {
    /// Sites changed per proposal.
    r: usize,
    /// Values per coordinate.
    k: usize,
    /// log q(y|x) for y at Hamming distance r: −ln C(d, r) − r·ln(K − 1).
    log_q: f64,
    /// Partial Fisher–Yates scratch, 0..d before every draw (each draw undoes its swaps, in
    /// O(R)), so a draw depends only on its chain's stream, not on which chain drew before it.
    sites: Vec<usize>,
    /// The draw's swap partners, for undoing them.
    swapped: Vec<usize>,
}

impl RandomWalkProposal {
    fn new(r: usize, space: &Space) -> Self {
        let (d, k) = (space.d, space.k());
        let r = r.min(d);
        let ln_binomial: f64 = (0..r).map(|i| ((d - i) as f64 / (i + 1) as f64).ln()).sum();
        RandomWalkProposal {
            r,
            k,
            log_q: -ln_binomial - r as f64 * ((k - 1) as f64).ln(),
            sites: (0..d).collect(),
            swapped: vec![0; r],
        }
    }
}

impl Proposal for RandomWalkProposal {
    type Cache = ();

    fn new_cache(&self, _space: &Space) {}

    fn prepare(&self, _space: &Space, _x: &[u32], _grad: &[f64], _cache: &mut ()) {}

    /// R swaps of a partial Fisher–Yates shuffle pick the sites (uniform over ordered R-subsets,
    /// so over sets), then one offset in 1..K per site for K > 2. Hand-written rather than
    /// `rand::seq::index::sample` to keep allocation out of the step.
    fn draw(&mut self, _space: &Space, x: &[u32], _cache: &(), rng: &mut ChainRng, y: &mut [u32]) -> u32 {
        let (d, k) = (x.len(), self.k);
        y.copy_from_slice(x);
        for i in 0..self.r {
            let j = rng.random_range(i..d);
            self.sites.swap(i, j);
            self.swapped[i] = j;
            let site = self.sites[i];
            let offset = if k == 2 { 1 } else { rng.random_range(1..k as u32) };
            y[site] = other_value(x[site], offset, k);
        }
        for i in (0..self.r).rev() {
            self.sites.swap(i, self.swapped[i]);
        }
        self.r as u32
    }

    /// log q(to|from): the constant `log_q` at Hamming distance R, −∞ elsewhere (the same both
    /// ways, so the MH ratio is f(y) − f(x)).
    fn log_prob(&self, _space: &Space, from: &[u32], to: &[u32], _cache: &()) -> f64 {
        let m = from.iter().zip(to).filter(|(a, b)| a != b).count();
        if m == self.r { self.log_q } else { f64::NEG_INFINITY }
    }
}

impl Sampler for RandomWalk {
    fn name(&self) -> String {
        format!("rw-{}", self.r)
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let space = target.space();
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        let eval = TargetEval::values_only(target, x0.len() / space.d);
        let proposal = RandomWalkProposal::new(self.r, space);
        Ok(Box::new(MhChains::new(space, proposal, eval, true, Caching::Keep, x0).map_err(start_error)?))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for RandomWalk {
    /// Every y at Hamming distance R with q·min(1, e^{f(y) − f(x)}), x with the rest: the one
    /// kernel's row ([`exact_row`]).
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Result<Vec<Transition>, EvalError> {
        let space = target.space();
        exact_row(&RandomWalkProposal::new(self.r, space), true, space, x, |y, _| target.log_density(y))
    }
}

/// The registry row of `rw-<R>`.
pub const RW_R: SamplerSpec = SamplerSpec {
    stem: "rw",
    counts: &[1],
    numbers: &["R"],
    params: &[],
    build: Build::Plain(RandomWalk::build),
    doc: "random-walk Metropolis changing exactly R distinct uniform sites to uniform other values, MH \
          with min(1, π(y)/π(x)); reducible on two-valued sites for even R and R ≥ d (use `rwm`, its \
          adaptive version); binary/spin/categorical/ordinal",
    paper: "Sun, Dai & Schuurmans 2022 (NeurIPS, optimal scaling), the RW baseline",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on,
    target_accept: RWM_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["rw-1", "rw-2", "rw-3"], ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gibbs::testkit::*;
    use dlp_core::StepInfo;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};

    fn rw(r: usize) -> RandomWalk {
        RandomWalk { r }
    }

    #[test]
    fn rw_is_reversible_on_binary_spin_categorical_and_ordinal() {
        let q = Quadratic::spec_tiny();
        for r in 1..=3 {
            check_exact(&rw(r), &q, true);
        }
        let spin = Quadratic::new(Space::spin(3), q.w.clone(), q.b.clone());
        check_exact(&rw(1), &spin, true);
        for r in 1..=2 {
            check_exact(&rw(r), &PairwiseCategorical::spec_small(), true);
        }
        let ord = Quadratic::new(Space::ordinal(2, vec![-1, 0, 2]), vec![0.1, -0.2, 0.3, 0.05], vec![0.4, -0.3]);
        check_exact(&rw(2), &ord, true);
    }

    #[test]
    fn row_matches_hand_computation() {
        // spec_tiny from (0,0,0), R = 1: each single flip is proposed with 1/3; f(1,0,0) = 0.3
        // (accepted), f(0,1,0) = −0.7 (accepted with e^{−0.7}); no two-site move.
        let q = Quadratic::spec_tiny();
        let row = rw(1).transition_row(&q, &[0, 0, 0], 0).unwrap();
        let at = |y: &[u32]| row.iter().find(|(s, _)| s == y).map_or(0.0, |t| t.1);
        assert!((at(&[1, 0, 0]) - 1.0 / 3.0).abs() < 1e-15);
        assert!((at(&[0, 1, 0]) - (-0.7f64).exp() / 3.0).abs() < 1e-15);
        assert_eq!(at(&[1, 1, 0]), 0.0);
        assert!((row.iter().map(|t| t.1).sum::<f64>() - 1.0).abs() < 1e-14);
        // Categorical d = 4, K = 3, R = 2: q = 1/(C(4,2)·2²) = 1/24.
        let cat = Space::categorical(4, 3);
        let p = RandomWalkProposal::new(2, &cat);
        assert!((p.log_prob(&cat, &[0, 1, 2, 0], &[1, 1, 0, 0], &()) + 24f64.ln()).abs() < 1e-14);
        assert_eq!(p.log_prob(&cat, &[0, 1, 2, 0], &[1, 1, 2, 0], &()), f64::NEG_INFINITY);
    }

    #[test]
    fn step_follows_transition_row() {
        let q = Quadratic::spec_tiny();
        let info = empirical_check(&rw(1), &q, &[1, 0, 1], 20_000, 61);
        assert!(info.iter().all(|i| i.grad_evals == 0 && i.n_proposed == 1));
        empirical_check(&rw(2), &PairwiseCategorical::spec_small(), &[1, 2], 20_000, 62);
    }

    #[test]
    fn draws_do_not_depend_on_other_chains() {
        // The scratch is shared by the chains of one `Chains`: the same stream must give the
        // same proposals whatever drew before it.
        let t = PairwiseCategorical::spec_small();
        let run = |n: usize| {
            let x0 = vec![0u32; 2 * n];
            let mut ch = rw(2).start(&t, &x0).unwrap();
            let mut rngs = dlp_core::chain_rngs(9, 0, n);
            let mut info = vec![StepInfo::default(); n];
            for _ in 0..50 {
                ch.step(&mut rngs, &mut info);
            }
            ch.positions()[2 * (n - 1)..].to_vec()
        };
        let one = {
            let x0 = vec![0u32; 2];
            let mut ch = rw(2).start(&t, &x0).unwrap();
            let mut rngs = dlp_core::chain_rngs(9, 2, 1);
            let mut info = vec![StepInfo::default(); 1];
            for _ in 0..50 {
                ch.step(&mut rngs, &mut info);
            }
            ch.positions().to_vec()
        };
        assert_eq!(run(3), one);
    }

    #[test]
    fn bad_names_long_paths_and_traps() {
        let e = RandomWalk::build(&SamplerName::parse("rw-0"), &SamplerParams::default()).err().unwrap();
        assert!(e.to_string().contains("R ≥ 1"), "{e}");
        // R > d changes all d sites, as rw-d does.
        let t = Quadratic::spec_tiny();
        assert_eq!(rw(4).transition_row(&t, &[0, 1, 0], 0).unwrap(), rw(3).transition_row(&t, &[0, 1, 0], 0).unwrap());
        let bin = Space::binary(5);
        assert!(not_ergodic_on(&SamplerName::parse("rw-2"), &bin).is_some());
        assert!(not_ergodic_on(&SamplerName::parse("rw-5"), &bin).is_some());
        assert!(not_ergodic_on(&SamplerName::parse("rw-3"), &bin).is_none());
        assert!(not_ergodic_on(&SamplerName::parse("rw-7"), &bin).is_some());
        assert!(not_ergodic_on(&SamplerName::parse("rw-2"), &Space::categorical(5, 2)).is_some());
        assert!(not_ergodic_on(&SamplerName::parse("rw-2"), &Space::categorical(5, 3)).is_none());
    }

    #[test]
    fn adaptation_target_is_the_random_walk_optimum() {
        assert_eq!(crate::adapt::default_target_accept("rw-3"), 0.234);
    }
}
