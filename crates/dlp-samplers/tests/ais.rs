//! AIS (`dlp_samplers::ais`) on factorised targets whose log Z has a closed form, the tempered
//! wrapper's arithmetic, determinism over thread counts, and its errors. The comparisons with
//! enumerated log Z (RBM, Ising, Potts) are in `dlp-exact/tests/ais.rs`.
//!
//! False failures: every run uses a fixed seed, so each test is deterministic; the bounds are
//! chosen so that a correct implementation would fail for a fresh seed with probability
//! ≤ 1e-3 per test. An estimate is checked at |log Ẑ − log Z| ≤ 3.5 se: with n ≥ 200 chains
//! and an ESS well above 100 (asserted), log Ẑ is close to normal around log Z (its bias, about
//! −se²/2, is < 0.01 se here), so one such check fails with probability ≈ 4.7e-4.

use dlp_core::TargetExt;
use dlp_core::testing::{PairwiseCategorical, Quadratic};
use dlp_core::{Chains, Sampler, SamplerError, Space, Target};
use dlp_samplers::ais::{AisEstimate, AisOptions, ProductBase, Tempered, run_ais};
use dlp_samplers::{SamplerParams, build_sampler};

/// Bound on |z| per check (see the module doc: ≈ 4.7e-4 two-sided).
const Z_MAX: f64 = 3.5;

fn sampler(name: &str, step_size: Option<f64>) -> Box<dyn Sampler> {
    build_sampler(name, &SamplerParams { step_size, ..SamplerParams::default() }).unwrap()
}

fn ais(
    target: &dyn Target,
    base: &ProductBase,
    s: &dyn Sampler,
    chains: usize,
    temps: usize,
    seed: u64,
    threads: usize,
) -> AisEstimate {
    let opts = AisOptions { chains, temperatures: temps, seed, threads };
    run_ais(target, base, s, &opts, &mut |_| {}).unwrap()
}

fn check(est: &AisEstimate, log_z: f64, what: &str) {
    let z = (est.log_z - log_z) / est.std_err;
    eprintln!(
        "{what}: log Ẑ = {:.5} ± {:.5}, exact {log_z:.5}, z = {z:.2}, ESS = {:.1}/{}, accept = {:.3}",
        est.log_z, est.std_err, est.ess, est.chains, est.mean_accept
    );
    assert!(est.std_err.is_finite() && est.std_err > 0.0, "{what}: se = {}", est.std_err);
    assert!(est.ess > 100.0, "{what}: ESS {} too small for the normal approximation", est.ess);
    assert!(z.abs() <= Z_MAX, "{what}: log Ẑ = {} ± {}, exact {log_z} (z = {z})", est.log_z, est.std_err);
}

/// Σ b_i x_i on {0,1}^d: log Z = Σ log(1 + e^{b_i}).
fn bernoulli_energy(d: usize) -> (Quadratic, f64) {
    let b: Vec<f64> = (0..d).map(|i| ((i * 7 % 11) as f64 - 5.0) * 0.35).collect();
    let log_z = b.iter().map(|v| dlp_core::math::softplus(*v)).sum();
    (Quadratic::new(Space::binary(d), vec![0.0; d * d], b), log_z)
}

#[test]
fn factorised_bernoulli_energy_matches_its_closed_form() {
    let (target, log_z) = bernoulli_energy(16);
    let mu: Vec<f64> = (0..16).map(|i| 0.2 + 0.04 * i as f64).collect();
    let base = ProductBase::bernoulli(&mu).unwrap();
    for (name, alpha) in [("gwg", None), ("dmala", Some(0.2)), ("gibbs", None)] {
        let est = ais(&target, &base, sampler(name, alpha).as_ref(), 400, 200, 11, 1);
        check(&est, log_z, name);
        // Meaningful: far tighter than the spread of log Z over plausible wrong answers.
        assert!(est.std_err < 0.1, "{name}: se {}", est.std_err);
    }
}

#[test]
fn categorical_and_ordinal_factorised_energies_match_their_closed_forms() {
    // Categorical: f = Σ h_i(x_i), log Z = Σ_i logsumexp h_i; the base gradient is the one-hot one.
    let (d, k) = (6, 4);
    let h: Vec<f64> = (0..d * k).map(|t| ((t * 5 % 9) as f64 - 4.0) * 0.3).collect();
    let log_z: f64 = h.chunks(k).map(dlp_core::math::logsumexp).sum();
    let target = PairwiseCategorical::new(d, k, h, &[]);
    let base = ProductBase::uniform(target.space());
    let est = ais(&target, &base, sampler("gwg", None).as_ref(), 400, 100, 3, 2);
    check(&est, log_z, "categorical");
    // Ordinal: f = Σ b_i v_i with values {−2, 0, 1, 3}, from a non-uniform base (whose
    // interpolated slope enters the proposals).
    let values = vec![-2, 0, 1, 3];
    let b = [0.4, -0.3, 0.25, 0.1, -0.5];
    let log_z: f64 =
        b.iter().map(|bi| dlp_core::math::logsumexp(&values.iter().map(|&v| bi * v as f64).collect::<Vec<_>>())).sum();
    let space = Space::ordinal(b.len(), values);
    let target = Quadratic::new(space.clone(), vec![0.0; 25], b.to_vec());
    let q = [0.1f64, 0.2, 0.3, 0.4];
    let base = ProductBase::from_log_probs(&space, (0..b.len()).flat_map(|_| q.map(f64::ln)).collect()).unwrap();
    let est = ais(&target, &base, sampler("gibbs", None).as_ref(), 400, 100, 4, 1);
    check(&est, log_z, "ordinal");
}

#[test]
fn more_temperatures_shrink_the_error() {
    // A coupled target (so that the base is far from it) whose log Z is enumerated here.
    let d = 10;
    let mut w = vec![0.0; d * d];
    for i in 0..d - 1 {
        w[i * d + i + 1] = 0.9;
    }
    let b: Vec<f64> = (0..d).map(|i| if i % 2 == 0 { -0.6 } else { 0.3 }).collect();
    let target = Quadratic::new(Space::binary(d), w, b);
    let mut x = vec![0u32; d];
    let f: Vec<f64> = (0..1u64 << d)
        .map(|s| {
            target.space().state_of_index(s, &mut x);
            target.log_density(&x).unwrap()
        })
        .collect();
    let log_z = dlp_core::math::logsumexp(&f);
    let base = ProductBase::uniform(target.space());
    let s = sampler("gwg", None);
    let few = ais(&target, &base, s.as_ref(), 300, 3, 5, 2);
    let many = ais(&target, &base, s.as_ref(), 300, 300, 5, 2);
    eprintln!("K = 3: se {:.4}, ESS {:.0}; K = 300: se {:.4}, ESS {:.0}", few.std_err, few.ess, many.std_err, many.ess);
    check(&many, log_z, "K = 300");
    // Deterministic given the seed; the ratio is a large effect (measured ≈ 5×), not a tail event.
    assert!(many.std_err < 0.5 * few.std_err, "se {} (K = 300) vs {} (K = 3)", many.std_err, few.std_err);
    assert!(many.ess > few.ess);
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let (target, _) = bernoulli_energy(12);
    let base = ProductBase::bernoulli(&[0.3; 12]).unwrap();
    for (name, alpha) in [("dmala", Some(0.3)), ("gwg", None)] {
        let s = sampler(name, alpha);
        let one = ais(&target, &base, s.as_ref(), 37, 20, 9, 1);
        for threads in [2, 3, 0] {
            let other = ais(&target, &base, s.as_ref(), 37, 20, 9, threads);
            assert_eq!(one.log_weights, other.log_weights, "{name}, {threads} threads");
            assert_eq!(one.final_states, other.final_states, "{name}, {threads} threads");
            assert_eq!(one.mean_accept.to_bits(), other.mean_accept.to_bits());
        }
        let reseeded = ais(&target, &base, s.as_ref(), 37, 20, 10, 1);
        assert_ne!(one.log_weights, reseeded.log_weights, "the seed must matter");
    }
}

/// A sampler whose chains hide their cached log-densities: AIS then evaluates f itself.
struct Hiding(Box<dyn Sampler>);
struct HidingChains<'t>(Box<dyn Chains + 't>);

impl Sampler for Hiding {
    fn name(&self) -> String {
        self.0.name()
    }
    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        Ok(Box::new(HidingChains(self.0.start(target, x0)?)))
    }
}

impl Chains for HidingChains<'_> {
    fn n_chains(&self) -> usize {
        self.0.n_chains()
    }
    fn positions(&self) -> &[u32] {
        self.0.positions()
    }
    fn try_step(
        &mut self,
        rngs: &mut [dlp_core::ChainRng],
        info: &mut [dlp_core::StepInfo],
        batch: dlp_core::Batch<'_>,
    ) -> Result<(), dlp_core::EvalError> {
        self.0.try_step(rngs, info, batch)
    }
}

#[test]
fn weights_from_cached_densities_equal_weights_from_evaluations() {
    let target = Quadratic::spec_tiny();
    let base = ProductBase::bernoulli(&[0.3, 0.6, 0.5]).unwrap();
    let cached = ais(&target, &base, sampler("dmala", Some(0.5)).as_ref(), 20, 30, 2, 1);
    let evaluated = ais(&target, &base, &Hiding(sampler("dmala", Some(0.5))), 20, 30, 2, 1);
    assert_eq!(cached.final_states, evaluated.final_states);
    for (a, b) in cached.log_weights.iter().zip(&evaluated.log_weights) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}

#[test]
fn the_tempered_target_is_beta_f_plus_the_base_term() {
    let target = Quadratic::spec_tiny();
    let base = ProductBase::bernoulli(&[0.3, 0.6, 0.5]).unwrap();
    let beta = 0.37;
    let t = Tempered { inner: &target, base: Some(&base), beta };
    let mut lq = [0.0];
    let mut g = [0.0; 3];
    let mut g_t = [0.0; 3];
    let mut flips = [0.0; 3];
    for s in 0..8u64 {
        let mut x = [0u32; 3];
        target.space().state_of_index(s, &mut x);
        base.log_prob_batch(&x, &mut lq);
        let f = target.log_density_grad(&x, &mut g).unwrap();
        let ft = t.log_density_grad(&x, &mut g_t).unwrap();
        assert!((ft - (beta * f + (1.0 - beta) * lq[0])).abs() < 1e-12);
        for i in 0..3 {
            // ∂ log q / ∂x_i = log μ_i − log(1 − μ_i) for a Bernoulli base.
            let mu = base.log_probs()[2 * i + 1].exp();
            let want = beta * g[i] + (1.0 - beta) * (mu / (1.0 - mu)).ln();
            assert!((g_t[i] - want).abs() < 1e-12, "grad {i}");
        }
        t.flip_deltas(&x, &mut flips).unwrap();
        let mut deltas = [0.0; 2];
        for i in 0..3 {
            let mut y = x;
            y[i] = 1 - y[i];
            assert!((flips[i] - (t.log_density(&y).unwrap() - ft)).abs() < 1e-12, "flip {i}");
            t.coordinate_deltas(&x, i, &mut deltas).unwrap();
            assert!((deltas[y[i] as usize] - flips[i]).abs() < 1e-12 && deltas[x[i] as usize] == 0.0);
        }
    }
    assert!(t.capabilities().rbm.is_none() && t.capabilities().ising.is_none());
}

#[test]
fn the_base_draws_follow_its_probabilities() {
    // 20,000 draws of Bernoulli(0.2): the count has sd √(20000·0.16) ≈ 57; 5 sd (≈ 6e-7) bound.
    let base = ProductBase::bernoulli(&[0.2]).unwrap();
    let mut rng = dlp_core::chain_rng(1, 0);
    let mut x = [0u32];
    let ones: u32 = (0..20_000)
        .map(|_| {
            base.sample(&mut rng, &mut x);
            x[0]
        })
        .sum();
    assert!((ones as f64 - 4000.0).abs() < 5.0 * 57.0, "{ones}");
}

#[test]
fn bad_inputs_are_errors_naming_the_problem() {
    let msg = |e: SamplerError| e.to_string();
    assert!(msg(ProductBase::bernoulli(&[0.5, 1.0]).unwrap_err()).contains("mu[1] = 1"));
    assert!(msg(ProductBase::bernoulli(&[f64::NAN]).unwrap_err()).contains("mu[0]"));
    let space = Space::categorical(2, 3);
    assert!(msg(ProductBase::from_log_probs(&space, vec![0.0; 5]).unwrap_err()).contains("2 × 3"));
    let bad =
        vec![(1.0f64 / 3.0).ln(); 6].into_iter().enumerate().map(|(i, l)| if i == 4 { l + 0.1 } else { l }).collect();
    assert!(msg(ProductBase::from_log_probs(&space, bad).unwrap_err()).contains("q_1 sums to"));
    let (target, _) = bernoulli_energy(4);
    let base = ProductBase::uniform(target.space());
    let gwg = sampler("gwg", None);
    let run = |base: &ProductBase, s: &dyn Sampler, chains, temperatures| {
        run_ais(&target, base, s, &AisOptions { chains, temperatures, seed: 0, threads: 1 }, &mut |_| {}).unwrap_err()
    };
    assert!(msg(run(&base, gwg.as_ref(), 1, 10)).contains("chains must be at least 2"));
    assert!(msg(run(&base, gwg.as_ref(), 10, 0)).contains("temperatures"));
    let wrong = ProductBase::uniform(&Space::binary(5));
    assert!(msg(run(&wrong, gwg.as_ref(), 10, 10)).contains("d = 5"));
    assert!(msg(run(&base, sampler("gf-svgd", None).as_ref(), 10, 10)).contains("couples"));
}

#[test]
fn progress_counts_every_temperature() {
    let (target, _) = bernoulli_energy(4);
    let base = ProductBase::uniform(target.space());
    let mut seen = Vec::new();
    let opts = AisOptions { chains: 4, temperatures: 7, seed: 0, threads: 2 };
    run_ais(&target, &base, sampler("gwg", None).as_ref(), &opts, &mut |k| seen.push(k)).unwrap();
    assert_eq!(seen, (1..=7).collect::<Vec<_>>());
}

/// The z-scores of independent runs are calibrated: over 40 seeds their mean is within
/// 3.5/√40 of 0 (≈ 4.7e-4 two-sided if z ~ N(0, 1)) and their standard deviation within
/// [0.6, 1.45] (the sample sd of 40 normals has sd ≈ 0.11; both ends are > 3.5 of them away).
/// Measured: mean −0.16 / −0.03 / 0.14, sd 1.00 / 1.16 / 1.03 (gwg / dmala / gibbs).
#[test]
#[ignore = "statistical: 120 AIS runs (just test-stat)"]
fn z_scores_are_calibrated_over_seeds() {
    let (target, log_z) = bernoulli_energy(16);
    let mu: Vec<f64> = (0..16).map(|i| 0.2 + 0.04 * i as f64).collect();
    let base = ProductBase::bernoulli(&mu).unwrap();
    for (name, alpha) in [("gwg", None), ("dmala", Some(0.2)), ("gibbs", None)] {
        let s = sampler(name, alpha);
        let zs: Vec<f64> = (0..40)
            .map(|seed| {
                let e = ais(&target, &base, s.as_ref(), 400, 200, 1000 + seed, 0);
                (e.log_z - log_z) / e.std_err
            })
            .collect();
        let m = zs.iter().sum::<f64>() / 40.0;
        let sd = (zs.iter().map(|z| (z - m).powi(2)).sum::<f64>() / 39.0).sqrt();
        eprintln!("{name}: mean z {m:.3}, sd z {sd:.3}");
        assert!(m.abs() < 3.5 / 40f64.sqrt(), "{name}: mean z {m}");
        assert!((0.6..1.45).contains(&sd), "{name}: sd z {sd}");
    }
}

/// A device-like target that fails from its `after`-th evaluation on: `evaluate` returns the
/// error (as `dlp_tensor::tensor_target!` does).
struct Failing {
    inner: Quadratic,
    calls: std::sync::atomic::AtomicUsize,
    after: usize,
}

impl Failing {
    fn failed(&self) -> bool {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= self.after
    }
    fn error() -> dlp_core::EvalError {
        dlp_core::EvalError::Device { device: "test:0".into(), message: "out of memory".into() }
    }
}

impl Target for Failing {
    fn space(&self) -> &Space {
        self.inner.space()
    }
    fn evaluate(
        &self,
        xs: &[u32],
        batch: dlp_core::Batch<'_>,
        f: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), dlp_core::EvalError> {
        if self.failed() {
            return Err(Self::error());
        }
        self.inner.evaluate(xs, batch, f, grad)
    }
}

#[test]
fn a_device_failure_stops_the_run_with_its_error() {
    let (inner, _) = bernoulli_energy(6);
    let base = ProductBase::uniform(inner.space());
    for (name, alpha) in [("dmala", Some(0.3)), ("gwg", None), ("gibbs", None)] {
        for after in [0, 7] {
            let target = Failing { inner: inner.clone(), calls: 0.into(), after };
            let opts = AisOptions { chains: 8, temperatures: 50, seed: 0, threads: 1 };
            let err = run_ais(&target, &base, sampler(name, alpha).as_ref(), &opts, &mut |_| {}).unwrap_err();
            assert!(
                matches!(err, SamplerError::Eval(dlp_core::EvalError::Device { .. })),
                "{name}, failing after {after} calls: {err}"
            );
        }
    }
}
