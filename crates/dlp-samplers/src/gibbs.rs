//! Single-site Gibbs sampling: `gibbs` (random scan) and `gibbs-sweep` (systematic scan).
//!
//! Spec `reproduction.md` §2, rows `rand-gibbs` (each chain picks its own coordinate
//! uniformly at random at every step) and `dim-gibbs` (a counter cycles through the
//! coordinates 0..d−1). Both change **one coordinate per step call** (pitfall P6: the
//! paper's "Gibbs-1" in the Ising-learning, EBM and BNN experiments is one site per step, not
//! one sweep). The site is redrawn from its full conditional, π(x_i = v | x_{−i}) ∝
//! exp(f(x with x_i = v) − f(x)), computed by [`TargetExt::coordinate_deltas`], so every domain
//! works (for binary targets this is the code's "flip with probability σ(f(x^{(i)}) − f(x))").
//!
//! Cost (§1.12): one `coordinate_deltas` call over the K values of the site, counted as K
//! log-density evaluations (2 for binary, as in the spec). The log-density cache is updated
//! by the chosen delta, so no other evaluation is needed.
//!
//! The systematic scan keeps one counter per batch of chains: chains started together or
//! separately are at the same step, so they use the same site (phase = step mod d).

use crate::dual_averaging::MALA_TARGET_ACCEPT;
use crate::fast::rbm::RbmCache;
use crate::spec::Build;
use crate::spec::{
    Defaults, DeviceKernel, NO_DEFAULTS, NO_TESTS, PLAIN, SamplerName, SamplerParams, SamplerSpec, TestSpec,
    ergodic_everywhere,
};
use dlp_core::Deltas;
use dlp_core::TargetExt;
use dlp_core::capability::SiteState;
use dlp_core::draw::{gibbs_site_update, sample_logits};
use dlp_core::math::softmax_in_place;
use dlp_core::{Batch, ChainRng, Chains, EvalError, ExactKernel, Sampler, SamplerError, StepInfo, Target, Transition};
use rand::RngExt;
use std::collections::BTreeMap;

/// Which coordinate a step updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scan {
    /// Each chain draws its own coordinate uniformly at random every step (`gibbs`).
    Random,
    /// Coordinate t mod d at step t, the same for every chain (`gibbs-sweep`).
    Systematic,
}

/// Single-site Gibbs sampler (one coordinate per step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gibbs {
    /// Random or systematic scan.
    pub scan: Scan,
}

impl Gibbs {
    /// Registry constructor for `gibbs`.
    pub fn build_random(_: &SamplerName, _: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        Ok(Box::new(Gibbs { scan: Scan::Random }))
    }

    /// Registry constructor for `gibbs-sweep`.
    pub fn build_sweep(_: &SamplerName, _: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        Ok(Box::new(Gibbs { scan: Scan::Systematic }))
    }
}

/// Log-weights of the full conditional of site `i` at `x`: `out[v] = f(x with x_i = v) − f(x)`
/// (length K). The step draws v ∝ `exp(out[v])` ([`gibbs_site_update`], which computes them
/// the same way); [`ExactKernel::transition_row`] normalises the same numbers.
pub fn site_log_weights(target: &dyn Target, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), EvalError> {
    target.coordinate_deltas(x, i, out)
}

/// Adds `p` times the full-conditional law of site `i` at `x` to `row` (keyed by next state).
pub fn add_site_law(
    target: &dyn Target,
    x: &[u32],
    i: usize,
    p: f64,
    row: &mut BTreeMap<Vec<u32>, f64>,
) -> Result<(), EvalError> {
    let mut w = vec![0.0; target.space().k()];
    site_log_weights(target, x, i, &mut w)?;
    softmax_in_place(&mut w);
    for (v, &q) in w.iter().enumerate() {
        let mut y = x.to_vec();
        y[i] = v as u32;
        *row.entry(y).or_insert(0.0) += p * q;
    }
    Ok(())
}

/// Turns an accumulated row into the [`ExactKernel`] form (positive entries only).
pub fn finish_row(row: BTreeMap<Vec<u32>, f64>) -> Vec<Transition> {
    row.into_iter().filter(|(_, p)| *p > 0.0).collect()
}

impl Sampler for Gibbs {
    fn name(&self) -> String {
        match self.scan {
            Scan::Random => "gibbs".into(),
            Scan::Systematic => "gibbs-sweep".into(),
        }
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        target.space().check_states(x0).map_err(SamplerError::BadInitialState)?;
        let d = target.space().d;
        let mut f = vec![0.0; x0.len() / d];
        target.log_density_batch(x0, &mut f)?;
        // On an RBM, keep the hidden pre-activations per chain (O(M) per site, not O(d·M)).
        let rbm = target.capabilities().rbm.map(|r| RbmCache::for_site_updates(r, x0));
        // Otherwise, on a target with per-chain site state (the BNN: O(N) per site, not a
        // network evaluation), that state.
        let sites = match rbm {
            None => target.capabilities().site_updates.map(|s| s.site_state(x0)),
            Some(_) => None,
        };
        Ok(Box::new(GibbsChains {
            target,
            deltas: Deltas::of(target),
            scan: self.scan,
            x: x0.to_vec(),
            f,
            t: 0,
            w: vec![0.0; target.space().k()],
            scratch: Vec::new(),
            rbm,
            sites,
        }))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for Gibbs {
    fn n_phases(&self, target: &dyn Target) -> usize {
        match self.scan {
            Scan::Random => 1,
            Scan::Systematic => target.space().d,
        }
    }

    fn transition_row(&self, target: &dyn Target, x: &[u32], phase: usize) -> Result<Vec<Transition>, EvalError> {
        let d = target.space().d;
        let mut row = BTreeMap::new();
        match self.scan {
            Scan::Random => {
                for i in 0..d {
                    add_site_law(target, x, i, 1.0 / d as f64, &mut row)?;
                }
            }
            Scan::Systematic => add_site_law(target, x, phase % d, 1.0, &mut row)?,
        }
        Ok(finish_row(row))
    }
}

struct GibbsChains<'t> {
    target: &'t dyn Target,
    /// The target's conditionals, looked up once.
    deltas: Deltas<'t>,
    scan: Scan,
    x: Vec<u32>,
    f: Vec<f64>,
    t: usize,
    w: Vec<f64>,
    scratch: Vec<f64>,
    rbm: Option<RbmCache<'t>>,
    sites: Option<Box<dyn SiteState + 't>>,
}

impl Chains for GibbsChains<'_> {
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
        let k = self.w.len() as u32;
        for (j, (row, rng)) in self.x.chunks_mut(d).zip(rngs.iter_mut()).enumerate() {
            let i = match self.scan {
                Scan::Random => rng.random_range(0..d),
                Scan::Systematic => self.t % d,
            };
            let changed = if let Some(cache) = &mut self.rbm {
                let (f, flipped) = cache.site_update(j, row, self.f[j], i, &mut self.w, &mut self.scratch, rng);
                self.f[j] = f;
                flipped
            } else if let Some(state) = &mut self.sites {
                // The generic path's draw (one uniform) on the state's differences.
                state.deltas(j, row, i, &mut self.w);
                let v = sample_logits(&self.w, &mut self.scratch, rng);
                self.f[j] += self.w[v];
                let changed = v as u32 != row[i];
                if changed {
                    state.set(j, row, i, v as u32);
                    row[i] = v as u32;
                }
                changed
            } else {
                let old = row[i];
                self.f[j] += gibbs_site_update(&self.deltas, row, i, &mut self.w, &mut self.scratch, rng)?;
                row[i] != old
            };
            info[j] = StepInfo {
                accepted: true,
                accept_prob: 1.0,
                n_proposed: changed as u32,
                n_changed: changed as u32,
                density_evals: k,
                grad_evals: 0,
                data_evals: 0,
            };
        }
        self.t += 1;
        Ok(())
    }

    /// The generic path only (the rows and f evaluated afresh; the scan position kept): the
    /// RBM and site-state fast paths keep per-chain model state that a move would have to
    /// rebuild, and report `None`.
    fn set_states(&mut self, rows: &[usize], xs: &[u32]) -> Option<Result<(), EvalError>> {
        if self.rbm.is_some() || self.sites.is_some() {
            return None;
        }
        let d = self.target.space().d;
        let mut f = vec![0.0; rows.len()];
        if let Err(e) = self.target.evaluate(xs, Batch::Full, &mut f, None) {
            return Some(Err(e));
        }
        for ((&j, y), fy) in rows.iter().zip(xs.chunks(d)).zip(f) {
            self.x[j * d..(j + 1) * d].copy_from_slice(y);
            self.f[j] = fy;
        }
        Some(Ok(()))
    }
}

/// Shared test helpers for the baseline samplers' exact and empirical checks.
#[cfg(test)]
pub(crate) mod testkit {
    use dlp_core::TargetExt;
    use dlp_core::{ExactKernel, Sampler, StepInfo, Target, chain_rngs};
    use std::collections::HashMap;

    /// The tiny model of spec §4.3 on spins (±1) instead of bits: the spin test target of the
    /// multi-flip samplers.
    pub fn spin_tiny() -> dlp_core::testing::Quadratic {
        let q = dlp_core::testing::Quadratic::spec_tiny();
        dlp_core::testing::Quadratic::new(dlp_core::Space::spin(3), q.w.clone(), q.b.clone())
    }

    /// All states of the target's space in enumeration order.
    pub fn states(t: &dyn Target) -> Vec<Vec<u32>> {
        let s = t.space();
        let n = s.n_states().unwrap();
        (0..n)
            .map(|i| {
                let mut x = vec![0; s.d];
                s.state_of_index(i, &mut x);
                x
            })
            .collect()
    }

    /// π by enumeration (normalised exp f).
    pub fn exact_pi(t: &dyn Target) -> Vec<f64> {
        let f: Vec<f64> = states(t).iter().map(|x| t.log_density(x).unwrap()).collect();
        let m = f.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = f.iter().map(|v| (v - m).exp()).collect();
        let z: f64 = w.iter().sum();
        w.iter().map(|v| v / z).collect()
    }

    /// The transition matrix of one phase, from `transition_row`; checks rows are
    /// well-formed (distinct states, positive entries summing to 1).
    pub fn matrix(k: &dyn ExactKernel, t: &dyn Target, phase: usize) -> Vec<Vec<f64>> {
        let ss = states(t);
        let n = ss.len();
        let mut p = vec![vec![0.0; n]; n];
        for (a, x) in ss.iter().enumerate() {
            let row = k.transition_row(t, x, phase).unwrap();
            let mut sum = 0.0;
            for (y, q) in row {
                let b = t.space().index_of_state(&y) as usize;
                assert!(q > 0.0, "non-positive entry {q}");
                assert_eq!(p[a][b], 0.0, "state {y:?} listed twice in row {a}");
                p[a][b] = q;
                sum += q;
            }
            assert!((sum - 1.0).abs() < 1e-12, "row {a} sums to {sum}");
        }
        p
    }

    /// max_j |(πP)_j − π_j|.
    pub fn stationarity_error(pi: &[f64], p: &[Vec<f64>]) -> f64 {
        (0..pi.len()).map(|j| ((0..pi.len()).map(|i| pi[i] * p[i][j]).sum::<f64>() - pi[j]).abs()).fold(0.0, f64::max)
    }

    /// max_{i,j} |π_i P_ij − π_j P_ji|.
    pub fn detailed_balance_error(pi: &[f64], p: &[Vec<f64>]) -> f64 {
        let n = pi.len();
        let mut e: f64 = 0.0;
        for i in 0..n {
            for j in 0..n {
                e = e.max((pi[i] * p[i][j] - pi[j] * p[j][i]).abs());
            }
        }
        e
    }

    /// Checks πP = π for every phase (and detailed balance when `reversible`) to 1e-12.
    pub fn check_exact(sampler: &dyn Sampler, t: &dyn Target, reversible: bool) -> Vec<Vec<Vec<f64>>> {
        let k = sampler.exact().unwrap();
        let pi = exact_pi(t);
        (0..k.n_phases(t))
            .map(|ph| {
                let p = matrix(k, t, ph);
                let e = stationarity_error(&pi, &p);
                assert!(e < 1e-12, "{}: phase {ph}: |πP − π| = {e:e}", sampler.name());
                if reversible {
                    let e = detailed_balance_error(&pi, &p);
                    assert!(e < 1e-12, "{}: phase {ph}: detailed balance off by {e:e}", sampler.name());
                }
                p
            })
            .collect()
    }

    /// Runs `n` fresh chains from `x` for one step and compares the empirical next-state
    /// frequencies with `transition_row(x, 0)`; returns the step records.
    ///
    /// Tolerance per state: 5 standard errors + 3/n. For a state with probability p the count
    /// is Binomial(n, p); when np ≥ 1 a deviation of 5 SE has probability ≈ 6e-7 (normal
    /// approximation; Chernoff keeps it below 1e-5 even for np ≈ 1), and the extra 3/n
    /// keeps rare states (np ≪ 1) from failing on a single hit: P(Poisson(λ) ≥ λ + 5√λ + 3)
    /// < 1e-5 for every λ ≤ 1. With at most ~30 states per row the false-failure rate of
    /// one call is < 1e-3. States outside the exact row must never appear.
    pub fn empirical_check(sampler: &dyn Sampler, t: &dyn Target, x: &[u32], n: usize, seed: u64) -> Vec<StepInfo> {
        let d = t.space().d;
        let x0: Vec<u32> = (0..n).flat_map(|_| x.iter().copied()).collect();
        let mut chains = sampler.start(t, &x0).unwrap();
        let mut rngs = chain_rngs(seed, 0, n);
        let mut info = vec![StepInfo::default(); n];
        chains.step(&mut rngs, &mut info);
        let mut counts: HashMap<Vec<u32>, usize> = HashMap::new();
        for y in chains.positions().chunks(d) {
            *counts.entry(y.to_vec()).or_insert(0) += 1;
        }
        let row = sampler.exact().unwrap().transition_row(t, x, 0).unwrap();
        for (y, p) in &row {
            let c = counts.remove(y).unwrap_or(0);
            let se = (p * (1.0 - p) / n as f64).sqrt();
            let emp = c as f64 / n as f64;
            assert!(
                (emp - p).abs() <= 5.0 * se + 3.0 / n as f64,
                "{}: from {x:?} to {y:?}: empirical {emp}, exact {p}",
                sampler.name()
            );
        }
        assert!(counts.is_empty(), "{}: states outside the exact row: {counts:?}", sampler.name());
        // The cached log-densities must equal recomputed ones.
        if let Some(f) = chains.log_densities() {
            for (y, fy) in chains.positions().chunks(d).zip(f) {
                assert!((t.log_density(y).unwrap() - fy).abs() < 1e-10, "stale cached f at {y:?}");
            }
        }
        info
    }

    pub use dlp_core::testing::{SPEC_SMALL_PI, SPEC_TINY_PI};

    /// Checks that enumeration reproduces the spec's π, so that πP = π tests against the
    /// computed π test against the spec.
    pub fn check_spec_pi(t: &dyn Target, expect: &[f64]) {
        let pi = exact_pi(t);
        assert_eq!(pi.len(), expect.len());
        for (a, b) in pi.iter().zip(expect) {
            assert!((a - b).abs() < 1e-9, "π {a} vs spec {b}");
        }
    }
}

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `gibbs`.
pub const GIBBS: SamplerSpec = SamplerSpec {
    stem: "gibbs",
    counts: PLAIN,
    numbers: &[],
    params: &[],
    build: Build::Plain(Gibbs::build_random),
    doc: "single-site Gibbs, random scan",
    paper: "baseline",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["gibbs"], ..NO_TESTS },
    defaults: Defaults { device: Some(DeviceKernel::Gibbs), ..NO_DEFAULTS },
};

/// The registry row of `gibbs-sweep`.
pub const GIBBS_SWEEP: SamplerSpec = SamplerSpec {
    stem: "gibbs-sweep",
    counts: PLAIN,
    numbers: &[],
    params: &[],
    build: Build::Plain(Gibbs::build_sweep),
    doc: "single-site Gibbs, systematic scan (one site per step)",
    paper: "baseline",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["gibbs-sweep"], ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

#[cfg(test)]
mod tests {
    use super::testkit::*;
    use super::*;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};

    #[test]
    fn random_scan_is_reversible_and_sweep_phases_preserve_pi() {
        let q = Quadratic::spec_tiny();
        check_spec_pi(&q, &SPEC_TINY_PI);
        let c = PairwiseCategorical::spec_small();
        check_spec_pi(&c, &SPEC_SMALL_PI);
        for t in [&q as &dyn Target, &c] {
            check_exact(&Gibbs { scan: Scan::Random }, t, true);
            let phases = check_exact(&Gibbs { scan: Scan::Systematic }, t, false);
            assert_eq!(phases.len(), t.space().d);
            // Each phase alone is a single-site Gibbs update, itself reversible.
            let pi = exact_pi(t);
            for p in &phases {
                assert!(detailed_balance_error(&pi, p) < 1e-12);
            }
        }
    }

    #[test]
    fn binary_site_update_flips_with_sigmoid_of_the_exact_delta() {
        // Hand computation on §4.3: at (0,0,0) f = 0, flipping bit 0 gives f = 0.3, so the
        // sweep's phase 0 moves to (1,0,0) with probability σ(0.3).
        let q = Quadratic::spec_tiny();
        let row = Gibbs { scan: Scan::Systematic }.transition_row(&q, &[0, 0, 0], 0).unwrap();
        let p = row.iter().find(|(y, _)| y == &[1, 0, 0]).unwrap().1;
        assert!((p - 1.0 / (1.0 + (-0.3f64).exp())).abs() < 1e-15);
        // Random scan from (1,1,1): stays w.p. (1/3)Σ_i σ(−Δ_i), Δ = f(x^{(i)}) − 1.25.
        let deltas = [0.55 - 1.25, 1.2 - 1.25f64, -0.65 - 1.25];
        let stay: f64 = deltas.iter().map(|dl| 1.0 / (1.0 + dl.exp())).sum::<f64>() / 3.0;
        let row = Gibbs { scan: Scan::Random }.transition_row(&q, &[1, 1, 1], 0).unwrap();
        assert!((row.iter().find(|(y, _)| y == &[1, 1, 1]).unwrap().1 - stay).abs() < 1e-15);
    }

    #[test]
    fn step_follows_transition_row() {
        let q = Quadratic::spec_tiny();
        let c = PairwiseCategorical::spec_small();
        for scan in [Scan::Random, Scan::Systematic] {
            let s = Gibbs { scan };
            let info = empirical_check(&s, &q, &[0, 1, 0], 20_000, 11);
            assert!(info.iter().all(|i| i.density_evals == 2 && i.grad_evals == 0 && i.n_changed <= 1));
            let info = empirical_check(&s, &c, &[1, 2], 20_000, 12);
            assert!(info.iter().all(|i| i.density_evals == 3));
        }
    }

    #[test]
    fn rbm_path_follows_the_generic_rows_and_keeps_f() {
        // Single-site Gibbs on an RBM takes `fast::rbm::RbmCache`. One-step rows against the
        // exact rows (from `Rbm::coordinate_deltas`): ≤ 4 states per row, > 5σ with
        // probability 5.7e−7 each, 8 rows → false-failure rate < 1e−4.
        use crate::fast::rbm::tests::{check_cached_f, random_rbm};
        use dlp_core::DomainKind;
        for (dom, seed) in [(DomainKind::Binary, 90), (DomainKind::Spin, 91)] {
            let r = random_rbm(dom, 3, 2, seed);
            for scan in [Scan::Random, Scan::Systematic] {
                for x in [[0, 1, 0], [1, 1, 1]] {
                    let info = empirical_check(&Gibbs { scan }, &r, &x, 40_000, seed);
                    assert!(info.iter().all(|i| i.density_evals == 2 && i.n_changed <= 1));
                }
            }
            let big = random_rbm(dom, 12, 7, seed);
            let x0: Vec<u32> = (0..6 * 12).map(|i| (i % 4 == 0) as u32).collect();
            for scan in [Scan::Random, Scan::Systematic] {
                assert!(check_cached_f(&Gibbs { scan }, &big, &x0, 500) > 300);
            }
        }
    }

    #[test]
    fn baseline_names_round_trip_through_the_registry() {
        let params = SamplerParams::default();
        for name in ["gibbs", "gibbs-sweep", "bg-1", "bg-3", "block-gibbs", "hb-10-1", "gwg", "gwg-4", "lb"] {
            assert_eq!(crate::registry::build_sampler(name, &params).unwrap().name(), name);
        }
        for (bad, needle) in [("bg-0", "k = 0"), ("gwg-0", "k = 0"), ("hb-3-0", "r = 0"), ("hb-1-2", "L = 1")] {
            let e = crate::registry::build_sampler(bad, &params).err().unwrap().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn sweep_visits_coordinates_in_order() {
        let q = Quadratic::spec_tiny();
        let s = Gibbs { scan: Scan::Systematic };
        let mut ch = s.start(&q, &[0, 0, 0]).unwrap();
        let mut rngs = dlp_core::chain_rngs(3, 0, 1);
        let mut info = [StepInfo::default()];
        for t in 0..30 {
            let before = ch.positions().to_vec();
            ch.step(&mut rngs, &mut info);
            let after = ch.positions();
            for i in 0..3 {
                if i != t % 3 {
                    assert_eq!(before[i], after[i], "step {t} changed coordinate {i}");
                }
            }
        }
    }
}

#[cfg(test)]
mod site_state_tests {
    use crate::fast::Generic;
    use dlp_core::{RunOptions, Sampler, Target, run_chains};
    use rand::RngExt;

    /// On a BNN (which declares per-chain site state) single-site Gibbs takes the O(N) path;
    /// with the capability hidden it takes the generic one. Same seeds, same draws: the chain
    /// paths must be identical state for state (a difference in the conditionals beyond
    /// rounding would change some of the 40 × 400 draws and so the final states), for both scans.
    #[test]
    fn bnn_site_state_path_equals_the_generic_path() {
        let mut rng = dlp_core::setup_rng(8);
        let (n, p, h) = (60, 5, 4);
        let x: Vec<f64> = (0..n * p).map(|_| rng.random_range(-2.0..2.0)).collect();
        let y: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1.0)).collect();
        let d = (p + 2) * h + 1;
        let m = dlp_models::bnn::BnnModel::new(d, p, h, 100.0, x, y).unwrap();
        assert!(m.capabilities().site_updates.is_some());
        let x0: Vec<u32> = (0..40 * d).map(|_| rng.random_range(0..2)).collect();
        for scan in [super::Scan::Random, super::Scan::Systematic] {
            let s = super::Gibbs { scan };
            let opts = RunOptions { seed: 3, threads: 0, chains_per_task: 0 };
            let trace =
                |t: &dyn Target| run_chains(&s as &dyn Sampler, t, &x0, 400, &opts, |_, _| ()).unwrap().final_states;
            let (fast, generic) = (trace(&m), trace(&Generic(&m)));
            assert_eq!(fast, generic, "{scan:?}");
            assert_ne!(fast, x0, "{scan:?}: the chains moved");
        }
    }
}

#[cfg(test)]
mod interrupt_tests {
    use dlp_core::capability::Interrupt;
    use dlp_core::{
        Batch, Capabilities, EvalError, Observer, RunOptions, Sampler, SamplerError, Space, States, StepContext,
        StepInfo, Target, run_chains, run_chains_until_interrupted,
    };
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Ising conditionals without any `evaluate` inside a step, plus an interrupt that fires at
    /// the runner's `after`-th poll (as Python's Ctrl-C guard does).
    struct Interrupting<'a> {
        inner: &'a dyn Target,
        polls: AtomicUsize,
        after: usize,
        evaluations: AtomicUsize,
    }

    impl Interrupt for Interrupting<'_> {
        fn interrupted(&self) -> Option<EvalError> {
            (self.polls.fetch_add(1, Ordering::SeqCst) + 1 >= self.after)
                .then(|| EvalError::Device { device: "test".into(), message: "interrupted".into() })
        }
    }

    impl Target for Interrupting<'_> {
        fn space(&self) -> &Space {
            self.inner.space()
        }
        fn evaluate(&self, xs: &[u32], b: Batch<'_>, f: &mut [f64], g: Option<&mut [f64]>) -> Result<(), EvalError> {
            self.evaluations.fetch_add(1, Ordering::SeqCst);
            self.inner.evaluate(xs, b, f, g)
        }
        fn capabilities(&self) -> Capabilities<'_> {
            Capabilities { interrupt: Some(self), ..self.inner.capabilities() }
        }
    }

    /// Single-site Gibbs on an Ising model reads only the conditionals inside a step, so only
    /// the runner's poll of the interrupt capability can stop it: the run must end at the
    /// third step with the interrupt's error.
    #[test]
    fn an_interrupt_stops_a_run_whose_steps_never_evaluate() {
        let c = dlp_models::Couplings::lattice(&[4, 4], true, 0.3).unwrap();
        let m = dlp_models::IsingModel::new(dlp_core::DomainKind::Spin, c, vec![0.0; 16]).unwrap();
        let t = Interrupting { inner: &m, polls: AtomicUsize::new(0), after: 3, evaluations: AtomicUsize::new(0) };
        let s = super::Gibbs { scan: super::Scan::Random };
        let opts = RunOptions { seed: 1, threads: 1, chains_per_task: 0 };
        let err = run_chains(&s as &dyn Sampler, &t, &[0; 4 * 16], 1000, &opts, |_, _| ()).err().expect("interrupted");
        assert!(matches!(err, SamplerError::Eval(EvalError::Device { ref message, .. }) if message == "interrupted"));
        assert_eq!(t.polls.load(Ordering::SeqCst), 3, "one poll per step");
        assert_eq!(t.evaluations.load(Ordering::SeqCst), 1, "only `start` evaluates");
    }

    /// Records every step's number and states (a task's whole trace).
    struct Record(Vec<usize>, Vec<u32>);

    impl Observer for Record {
        fn observe(&mut self, ctx: &StepContext, states: States<'_>, _: &[StepInfo]) {
            self.0.push(ctx.step);
            self.1.extend_from_slice(states.positions());
        }
    }

    fn lattice() -> dlp_models::IsingModel {
        let c = dlp_models::Couplings::lattice(&[4, 4], true, 0.3).unwrap();
        dlp_models::IsingModel::new(dlp_core::DomainKind::Spin, c, vec![0.1; 16]).unwrap()
    }

    /// Runs `chains` chains of random-scan Gibbs from varied states, interrupted at the
    /// `after`-th poll when `after` > 0 (`run_chains_until_interrupted`), else for `steps`
    /// steps uninterrupted; returns the output's records, final states and stop.
    fn run(after: usize, steps: usize, chains: usize, opts: &RunOptions) -> (Vec<Record>, Vec<u32>, Option<usize>) {
        let m = lattice();
        let t = Interrupting {
            inner: &m,
            polls: AtomicUsize::new(0),
            after: if after == 0 { usize::MAX } else { after },
            evaluations: AtomicUsize::new(0),
        };
        let s = super::Gibbs { scan: super::Scan::Random };
        let x0: Vec<u32> = (0..chains * 16).map(|i| ((i * 7 + i / 5) % 2) as u32).collect();
        let out = run_chains_until_interrupted(&s as &dyn Sampler, &t, &x0, steps, opts, |_, _| {
            Record(Vec::new(), Vec::new())
        })
        .expect("no evaluation error");
        if after > 0 {
            let stopped = out.stopped.as_ref().expect("interrupted");
            assert!(matches!(stopped.reason, EvalError::Device { ref message, .. } if message == "interrupted"));
        } else {
            assert!(out.stopped.is_none(), "an uninterrupted run has no stop");
        }
        (out.observers, out.final_states, out.stopped.map(|s| s.steps))
    }

    /// Four tasks on one thread run one after the other: the first sees the interrupt at its
    /// third step and stops, the other three stop before their first step and are then brought
    /// to step 3, so every chain ends after exactly 3 steps: states and observers equal the
    /// uninterrupted 3-step run's, bit for bit.
    #[test]
    fn a_stopped_run_brings_every_task_to_the_same_step_and_equals_the_uninterrupted_prefix() {
        let opts = RunOptions { seed: 5, threads: 1, chains_per_task: 2 };
        let (rec, fin, stop) = run(3, 1000, 8, &opts);
        assert_eq!(stop, Some(3));
        let (rec0, fin0, _) = run(0, 3, 8, &opts);
        assert_eq!(fin, fin0, "final states = the uninterrupted run's after 3 steps");
        assert_eq!(rec.len(), 4, "four tasks");
        for (a, b) in rec.iter().zip(&rec0) {
            assert_eq!(a.0, vec![1, 2, 3]);
            assert_eq!((&a.0, &a.1), (&b.0, &b.1));
        }
    }

    /// Sixteen one-chain tasks on four threads, interrupted at the 200th poll: the tasks stop
    /// at different steps, and the output must still be the uninterrupted run's first S steps
    /// for every chain (S ≥ 200 / 16, since 200 polls were made before the stop).
    #[test]
    fn a_parallel_stopped_run_equals_the_uninterrupted_prefix() {
        let opts = RunOptions { seed: 9, threads: 4, chains_per_task: 1 };
        let (rec, fin, stop) = run(200, 100_000, 16, &opts);
        let s = stop.expect("stopped");
        assert!((200 / 16..100_000).contains(&s), "stopped at step {s}");
        let (rec0, fin0, _) = run(0, s, 16, &opts);
        assert_eq!(fin, fin0);
        for (a, b) in rec.iter().zip(&rec0) {
            assert_eq!(a.0, (1..=s).collect::<Vec<_>>());
            assert_eq!(a.1, b.1);
        }
    }
}
