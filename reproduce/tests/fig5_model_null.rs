//! `004-fig5 --bootstrap model`: the Stein tests calibrated by data sets drawn from p as the data
//! are hold their level under H0 (a Monte Carlo test) and reject a strong perturbation.

use dlp_core::rng::derive_seed;
use dlp_reproduce::gf_svgd::{gof_rbm_pair, gof_rejections, rbm_gibbs, stein_outcomes, uniform_states};

const D: usize = 8;
const M: usize = 4;
const N: usize = 30;
const SWEEPS: usize = 20;
const B: usize = 199;
const R: u64 = 200;

/// Rejections of [KDSD, GF-KSD relaxed, GF-KSD gaussian] in R replications at perturbation
/// `sigma`, against one model null of B data sets (shared, as the binary shares it).
fn rejections(sigma: f64) -> [usize; 3] {
    let p = gof_rbm_pair(D, M, 0.0, 11, 0).unwrap().0;
    let draw = |rbm: &dlp_models::Rbm, s: u64| {
        rbm_gibbs(rbm, &uniform_states(N, D, derive_seed(s, &[1])), SWEEPS, derive_seed(s, &[2])).unwrap()
    };
    let null: Vec<[f64; 3]> = (0..B as u64)
        .map(|b| {
            let s = derive_seed(5, &[b]);
            stein_outcomes(&p, &draw(&p, s), 1, s).unwrap().map(|o| o.statistic)
        })
        .collect();
    let mut count = [0; 3];
    for r in 0..R {
        let s = derive_seed(6, &[r]);
        let q = gof_rbm_pair(D, M, sigma, 11, derive_seed(s, &[3])).unwrap().1;
        let (xs, ys) = (draw(&q, derive_seed(s, &[4])), draw(&p, derive_seed(s, &[5])));
        let rej = gof_rejections(&p, &xs, &ys, 19, 0.05, s, Some(&null)).unwrap();
        for t in 0..3 {
            count[t] += rej[t] as usize;
        }
    }
    count
}

/// Under H0 each test's rejection count, given the shared null, is Binomial(R, π) with π ~
/// Beta(10, 190) over null draws (reject iff at most 9 of the 199 replicates reach T): P(count
/// ≥ 30) = 3.1e-4 per test, so the three checks fail falsely with probability < 1e-3.
#[test]
fn model_null_holds_its_level_under_h0() {
    let c = rejections(0.0);
    eprintln!("H0 rejections of {R}: {c:?}");
    assert!(c.iter().all(|&k| k < 30), "a Stein test over-rejects a true null with the model null: {c:?} of {R}");
}

/// A strong perturbation (one scalar ε ~ N(0, 2²) added to every weight) is rejected: the model
/// null is not a test that never rejects.
#[test]
fn model_null_rejects_a_strong_perturbation() {
    let c = rejections(2.0);
    eprintln!("sigma' = 2 rejections of {R}: {c:?}");
    assert!(c.iter().all(|&k| k >= 60), "a Stein test with the model null misses a strong perturbation: {c:?} of {R}");
}
