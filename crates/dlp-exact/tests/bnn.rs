//! The binary BNN (`kind: bnn`, spec §3.6) is a target like any other for the exact suite:
//! on d = 9 (p = 2, H = 2; 512 states; `dlp exact` runs the d = 11 example, CLI test) DMALA's transition matrix equals the independent
//! reference transcription and leaves π invariant (πP = π to 1e−10), DULA's matrix equals
//! its reference and its stationary law (no closed form: f is not log-quadratic) is computed
//! from the matrix; with minibatches `sg-dula`'s kernel is the reference's average over every
//! batch (d = 7, 128 states, so all C(5, 2) batches are cheap).

use dlp_core::Target;
use dlp_exact::enumerate::probabilities;
use dlp_exact::matrix::{kernel_matrix, max_abs_diff, stationarity_residual, stationary, total_variation};
use dlp_exact::reference;
use dlp_models::BnnModel;
use dlp_samplers::{SamplerParams, build_sampler};

/// Seeded deterministic data (a fixed LCG, so the test does not depend on a crate's stream).
fn model(p: usize, h: usize, n: usize, tau: f64) -> BnnModel {
    let mut s = 12345u64;
    let mut u = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let x: Vec<f64> = (0..n * p).map(|_| 3.0 * u() - 1.5).collect();
    let y: Vec<f64> = (0..n).map(|_| (u() < 0.5) as u32 as f64).collect();
    BnnModel::new((p + 2) * h + 1, p, h, tau, x, y).unwrap()
}

fn sampler(name: &str, alpha: f64, batch: Option<usize>) -> Box<dyn dlp_core::Sampler> {
    build_sampler(name, &SamplerParams { step_size: Some(alpha), batch_size: batch, ..Default::default() }).unwrap()
}

#[test]
fn dmala_leaves_the_bnn_posterior_invariant_and_dula_matches_its_reference() {
    let t = model(2, 2, 9, 4.0);
    assert_eq!(t.space().d, 9);
    let pi = probabilities(&t).unwrap();
    let p = kernel_matrix(&t, sampler("dmala", 0.3, None).as_ref(), 0).unwrap();
    assert!(max_abs_diff(&p, &reference::dlp(&t, 0.3, None, true).unwrap()) < 1e-12);
    let res = stationarity_residual(&pi, &p);
    assert!(res < 1e-10, "DMALA: ‖πP − π‖ = {res}");
    let q = kernel_matrix(&t, sampler("dula", 0.3, None).as_ref(), 0).unwrap();
    assert!(max_abs_diff(&q, &reference::dlp(&t, 0.3, None, false).unwrap()) < 1e-12);
    let pi_dula = stationary(&q).unwrap();
    assert!(stationarity_residual(&pi_dula, &q) < 1e-10);
    // DULA is biased (Thm 5.1) yet close for this step size: measured TV 0.01–0.1.
    let tv = total_variation(&pi_dula, &pi);
    assert!(tv > 1e-6 && tv < 0.2, "DULA TV = {tv}");
}

#[test]
fn sg_dula_on_the_bnn_is_the_average_over_every_minibatch() {
    let t = model(1, 2, 5, 2.0);
    for b in [1, 2, 5] {
        let p = kernel_matrix(&t, sampler("sg-dula", 0.4, Some(b)).as_ref(), 0).unwrap();
        assert!(max_abs_diff(&p, &reference::sg_dlp(&t, 0.4, b, false).unwrap()) < 1e-12, "B = {b}");
    }
}
