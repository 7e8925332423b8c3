//! `rmala` (relaxed MALA; `dlp_samplers::rmala`), whose chain moves z ∈ ℝ^d and reports
//! x = 1[z > 0]. The exact suite classifies it as *exact on an augmented continuous space;
//! checked statistically*: there is no transition matrix on x (x alone is not a Markov chain),
//! so instead of the matrix tier this file checks
//!
//! 1. one step's MH log ratio and drift against the independent transcription of the GWG
//!    release's `RelaxedMALA.step` in `dlp_exact::reference` (finite-difference surrogate
//!    gradients, normal densities with their constants), on Ising and RBM views (spin and
//!    binary) and on a model without a view (the straight-through stand-in);
//! 2. the reported x-law against enumeration: the final states of N independent seeded chains
//!    (registry construction, the runner) form N i.i.d. draws from the chain's law at step T,
//!    compared with π by a G-test (chi-square reference; cells with expected count < 5 pooled)
//!    at level 1e−4 per comparison. Each test function makes 10 comparisons (5 models, at T and
//!    at T/4 — the second shows the law from the all-zeros start has settled well before T), so
//!    for an exact chain that has mixed it fails with probability ≤ 1e−3 (Bonferroni,
//!    asymptotic chi-square); the seeds are fixed, so the outcome is deterministic.
//!    Each model also checks the test's power: the same draws against π reweighted by
//!    exp(0.4·u₀) (u₀ the first site's value) must be rejected.
//! 3. runs identical for 1 and 2 threads and any task split.

mod common;

use common::{chi2_critical, g_test};
use dlp_core::testing::Quadratic;
use dlp_core::{DomainKind, RunOptions, Space, StepInfo, Target, TargetExt, run_chains};
use dlp_exact::enumerate::{all_states, probabilities};
use dlp_exact::reference::{rmala_drift, rmala_log_accept_ratio};
use dlp_models::{IsingModel, Rbm};
use dlp_samplers::rmala::{Drift, log_accept_ratio, threshold};
use dlp_samplers::{SamplerParams, build_sampler};
use rand::RngExt;
use std::path::Path;

fn example(name: &str) -> dlp_models::Model {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/examples").join(name);
    dlp_models::load_model(&path).unwrap()
}

/// A binary quadratic with no Ising or RBM view: the straight-through drift.
fn quadratic() -> Quadratic {
    let w = vec![0.0, 0.8, -0.6, 0.0, 0.0, 0.0, 0.5, 0.3, 0.0, 0.0, 0.0, -0.4, 0.0, 0.0, 0.0, 0.0];
    Quadratic::new(Space::binary(4), w, vec![0.3, -0.7, 0.25, 0.1])
}

fn models() -> Vec<(&'static str, Box<dyn Target>)> {
    let j = [0.0, 0.5, -0.3, 0.2, 0.5, 0.0, 0.4, 0.0, -0.3, 0.4, 0.0, -0.6, 0.2, 0.0, -0.6, 0.0];
    let w = vec![0.5, -1.0, 0.3, 0.8, -0.6, 0.2, 0.7, -0.1];
    vec![
        ("ising-3.json (spin Ising view)", Box::new(example("ising-3.json"))),
        (
            "binary Ising view",
            Box::new(IsingModel::from_dense(4, &j, vec![0.1, -0.2, 0.3, 0.05], DomainKind::Binary).unwrap()),
        ),
        ("rbm-small.json (binary RBM view)", Box::new(example("rbm-small.json"))),
        (
            "spin RBM view",
            Box::new(Rbm::new(DomainKind::Spin, 4, 2, w, vec![0.1, -0.3, 0.2, 0.0], vec![0.0, -0.5]).unwrap()),
        ),
        ("binary quadratic, no view", Box::new(quadratic())),
    ]
}

/// The sampler's drift and ratio (the functions its step calls) at a state pair.
fn sampler_ratio(t: &dyn Target, eps: f64, z: &[f64], zn: &[f64]) -> (f64, Vec<f64>) {
    let d = z.len();
    let drift = Drift::of(t);
    let side = |z: &[f64]| {
        let x: Vec<u32> = z.iter().map(|&v| threshold(v)).collect();
        let mut g = vec![0.0; d];
        let f = t.log_density_grad(&x, &mut g).unwrap();
        let (mut soft, mut s) = (vec![0.0; d], vec![0.0; d]);
        drift.drift(z, &g, &mut soft, &mut s);
        (f, s)
    };
    let ((f, s), (fn_, sn)) = (side(z), side(zn));
    (log_accept_ratio(eps, (z, f, &s), (zn, fn_, &sn)), s)
}

#[test]
fn step_ratio_and_drift_match_the_release_transcription() {
    let mut rng = dlp_core::chain_rng(44, 0);
    let mut normal = || 1.3 * rng.sample::<f64, _>(rand_distr::StandardNormal);
    for (name, t) in models() {
        let d = t.space().d;
        for eps in [0.05, 0.3, 1.0] {
            for _ in 0..20 {
                let z: Vec<f64> = (0..d).map(|_| normal()).collect();
                let zn: Vec<f64> = (0..d).map(|_| normal()).collect();
                let (ours, drift) = sampler_ratio(t.as_ref(), eps, &z, &zn);
                let reference = rmala_log_accept_ratio(t.as_ref(), eps, &z, &zn).unwrap();
                assert!(
                    (ours - reference).abs() < 1e-6 * (1.0 + reference.abs()),
                    "{name} ε {eps}: {ours} vs {reference}"
                );
                let want = rmala_drift(t.as_ref(), &z).unwrap();
                for (a, b) in drift.iter().zip(&want) {
                    assert!((a - b).abs() < 1e-7, "{name}: drift {drift:?} vs {want:?}");
                }
            }
        }
    }
}

/// Final states of `chains` chains after `steps` steps of `name` from x = 0, as counts per state.
fn final_counts(name: &str, eps: f64, t: &dyn Target, chains: usize, steps: usize, seed: u64) -> Vec<u64> {
    let space = t.space();
    let d = space.d;
    let sampler = build_sampler(name, &SamplerParams { step_size: Some(eps), ..SamplerParams::default() }).unwrap();
    let opts = RunOptions { seed, threads: 2, chains_per_task: 0 };
    let out = run_chains(sampler.as_ref(), t, &vec![0u32; chains * d], steps, &opts, |_, _| ()).unwrap();
    let mut counts = vec![0u64; 1 << d];
    for row in out.final_states.chunks(d) {
        counts[space.index_of_state(row) as usize] += 1;
    }
    counts
}

/// π reweighted by exp(0.4·u₀), u₀ the first coordinate's value: a wrong law the test must see.
fn perturbed(t: &dyn Target, p: &[f64]) -> Vec<f64> {
    let space = t.space();
    let states = all_states(space, 1 << 10).unwrap();
    let w: Vec<f64> = states.chunks(space.d).zip(p).map(|(x, &q)| q * (0.4 * space.value(x[0]) as f64).exp()).collect();
    let s: f64 = w.iter().sum();
    w.iter().map(|v| v / s).collect()
}

/// Level of each G-test: 10 per test function, so ≤ 1e−3 family-wise.
const ALPHA: f64 = 1e-4;

fn check_law(name: &str, eps: f64, chains: usize, steps: usize) {
    for (label, t) in models() {
        let p = probabilities(t.as_ref()).unwrap();
        let counts = final_counts(name, eps, t.as_ref(), chains, steps, 2026);
        let (g, df) = g_test(&counts, &p);
        let crit = chi2_critical(df, ALPHA);
        eprintln!("{name} on {label}: G = {g:.2}, df {df}, critical {crit:.2}");
        assert!(g < crit, "{name} on {label}: G = {g:.2} ≥ {crit:.2} (df {df}); counts {counts:?}, π {p:?}");
        // Mixed well before T: a quarter of the steps already passes.
        let early = final_counts(name, eps, t.as_ref(), chains, steps / 4, 2027);
        let (g_early, df_early) = g_test(&early, &p);
        let crit_early = chi2_critical(df_early, ALPHA);
        assert!(g_early < crit_early, "{name} on {label} at T/4: G = {g_early:.2} ≥ {crit_early:.2}");
        // Power: the draws reject a law 0.4 nats off on one site.
        let (g_wrong, df_wrong) = g_test(&counts, &perturbed(t.as_ref(), &p));
        assert!(
            g_wrong > chi2_critical(df_wrong, ALPHA),
            "{name} on {label}: the test cannot see a wrong law (G {g_wrong:.2})"
        );
    }
}

/// The reported x-law of `rmala` (step ε = 0.5) equals π: 4,000 independent chains × 200 steps.
#[test]
fn reported_x_law_matches_enumeration() {
    check_law("rmala", 0.5, 4000, 200);
}

/// Through replica exchange (`pt-2:rmala`), which moves chains by `set_states`: a moved chain's z
/// is drawn afresh from p(z | x), and the cold replica's law is still π.
#[test]
fn reported_x_law_matches_enumeration_under_replica_exchange() {
    check_law("pt-2:rmala", 0.5, 2000, 200);
}

#[derive(Default)]
struct Trace(Vec<(Vec<u32>, Vec<StepInfo>)>);

impl dlp_core::Observer for Trace {
    fn observe(&mut self, _: &dlp_core::StepContext, states: dlp_core::States<'_>, info: &[StepInfo]) {
        self.0.push((states.positions().to_vec(), info.to_vec()));
    }
}

#[test]
fn one_and_two_threads_and_any_split_give_identical_runs() {
    for (label, t) in models() {
        let d = t.space().d;
        let sampler = build_sampler("rmala", &SamplerParams { step_size: Some(0.4), ..Default::default() }).unwrap();
        let x0: Vec<u32> = (0..7 * d).map(|i| (i % 3 == 0) as u32).collect();
        let run = |threads, chains_per_task| {
            let opts = RunOptions { seed: 9, threads, chains_per_task };
            let out = run_chains(sampler.as_ref(), t.as_ref(), &x0, 30, &opts, |_, _| Trace::default()).unwrap();
            let mut rows: Vec<Vec<u32>> = vec![Vec::new(); 30];
            for o in &out.observers {
                for (k, (p, _)) in o.0.iter().enumerate() {
                    rows[k].extend_from_slice(p);
                }
            }
            (rows, out.final_states)
        };
        let one = run(1, 0);
        assert_eq!(one, run(2, 0), "{label}");
        assert_eq!(one, run(2, 3), "{label}");
        assert_eq!(one, run(1, 1), "{label}");
    }
}
