//! DISCS's tasks at enumerable size (`dlp_models::discs`, the `-small` tier): their exact
//! laws against closed forms where the family has one, and the new FHMM posterior under the
//! exact suite's checks (a gradient sampler's exact kernel leaves it invariant and is
//! irreducible), so the ground truth the benchmark's quick test compares with is sound.

use dlp_core::stats::discs_distance;
use dlp_core::{Target, TargetExt};
use dlp_exact::matrix::{kernel_matrix, stationarity_residual};
use dlp_exact::{EnumOptions, enumerate, mean_variance, probabilities};
use dlp_models::discs::{TASKS, find};
use dlp_models::{CategoricalModel, IsingModel};
use dlp_samplers::{SamplerParams, build_sampler};

#[test]
fn every_small_task_enumerates_to_a_normalised_law() {
    for t in TASKS.iter().filter(|t| t.enumerable) {
        let m = t.model().unwrap();
        let p = probabilities(&m).unwrap();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-10, "{}", t.name);
        assert!(p.iter().all(|&q| q > 0.0), "{}: a state has probability 0", t.name);
    }
}

#[test]
fn bernoulli_and_categorical_marginals_and_the_statistic_have_closed_forms() {
    // Bernoulli: independent bits with P(x_i = 1) = σ(θ_i); the distance to r is a sum of
    // independent Bernoulli(q_i), q_i = P(x_i ≠ r_i): mean Σ q_i, variance Σ q_i (1 − q_i).
    let m = find("bernoulli-small").unwrap().model().unwrap();
    let theta = m.downcast_ref::<IsingModel>().unwrap().fields().to_vec();
    let e = enumerate(&m, &EnumOptions::default()).unwrap();
    let r: Vec<u32> = (0..12).map(|i| (i % 3 == 0) as u32).collect();
    let (mut mean, mut var) = (0.0, 0.0);
    for (i, th) in theta.iter().enumerate() {
        let p1 = 1.0 / (1.0 + (-th).exp());
        assert!((e.marginals[2 * i + 1] - p1).abs() < 1e-12);
        let q = if r[i] == 1 { 1.0 - p1 } else { p1 };
        mean += q;
        var += q * (1.0 - q);
    }
    let (em, ev) = mean_variance(&m, &|x: &[u32]| discs_distance(x, &r)).unwrap();
    assert!((em - mean).abs() < 1e-10 && (ev - var).abs() < 1e-10, "{em} {ev} vs {mean} {var}");

    // Categorical: marginals are the softmax rows; the index-L1 statistic's mean is
    // Σ_i Σ_k π_ik |k − r_i| (independent sites).
    let m = find("categorical-small").unwrap().model().unwrap();
    let lp = m.downcast_ref::<CategoricalModel>().unwrap().log_probs().to_vec();
    let e = enumerate(&m, &EnumOptions::default()).unwrap();
    let r = [3u32, 0, 1, 2, 0, 3];
    let mut mean = 0.0;
    for i in 0..6 {
        for k in 0..4 {
            let p = lp[4 * i + k].exp();
            assert!((e.marginals[4 * i + k] - p).abs() < 1e-12);
            mean += p * (k as f64 - r[i] as f64).abs();
        }
    }
    let (em, _) = mean_variance(&m, &|x: &[u32]| discs_distance(x, &r)).unwrap();
    assert!((em - mean).abs() < 1e-10);
}

#[test]
fn gradient_samplers_leave_the_fhmm_posterior_invariant() {
    // The FHMM posterior's gradient is not an exact flip difference (the squared residual), so
    // this is where a wrong ∇f would show: DMALA's exact kernel must still leave π invariant
    // (its MH test uses f alone), as must GWG's and Gibbs's.
    let m = find("fhmm-small").unwrap().model().unwrap();
    assert_eq!(m.space().d, 9);
    let pi = probabilities(&m).unwrap();
    let params = SamplerParams { step_size: Some(0.2), ..SamplerParams::default() };
    for name in ["dmala", "gwg", "gibbs"] {
        let s = build_sampler(name, &params).unwrap();
        let p = kernel_matrix(&m, s.as_ref(), 0).unwrap();
        assert!(stationarity_residual(&pi, &p) < 1e-10, "{name}");
    }
    // The gradient drives the proposal: at a state, it is the flip difference plus w_k²/(2σ²)
    // (the module's identity), so flips computed from it match evaluated differences.
    let x = vec![0, 1, 1, 0, 0, 1, 1, 1, 0];
    let mut g = vec![0.0; 9];
    let f = m.log_density_grad(&x, &mut g).unwrap();
    let mut flips = vec![0.0; 9];
    m.flip_deltas(&x, &mut flips).unwrap();
    for s in 0..9 {
        let mut y = x.clone();
        y[s] = 1 - y[s];
        assert!((flips[s] - (m.log_density(&y).unwrap() - f)).abs() < 1e-12);
        // Quadratic correction is negative: the linear prediction overestimates every flip.
        let linear = g[s] * (1.0 - 2.0 * x[s] as f64);
        assert!(linear > flips[s], "site {s}: {linear} vs {}", flips[s]);
    }
}
