//! After warm-up adaptation the kept samples come from the fixed kernel (issue 18): the
//! sampler built from the adapted step sizes — as `dlp sample` builds it — has exactly the
//! transition matrices of the reference kernel at those values, and leaves π invariant.

use dlp_core::testing::Quadratic;
use dlp_core::{RunOptions, Target};
use dlp_exact::matrix::{kernel_matrix, max_abs_diff, stationarity_residual};
use dlp_exact::probabilities;
use dlp_exact::reference::{acs, dlp};
use dlp_samplers::adapt::{AdaptOptions, adapt_step_size, default_target_accept};
use dlp_samplers::{SamplerParams, build_sampler};

fn adapted(name: &str, t: &Quadratic) -> dlp_samplers::adapt::Adapted {
    let x0 = vec![0u32; 8 * t.space().d];
    let opts = AdaptOptions { warmup: 200, target_accept: default_target_accept(name), ..Default::default() };
    let run = RunOptions { seed: 9, threads: 2, chains_per_task: 0 };
    adapt_step_size(name, &SamplerParams::default(), t, &x0, &opts, &run).unwrap()
}

#[test]
fn the_post_warm_up_dmala_kernel_is_the_fixed_alpha_kernel() {
    let t = Quadratic::spec_tiny();
    let a = adapted("dmala", &t);
    let alpha = a.step_size.unwrap();
    assert!(alpha.is_finite() && alpha > 0.0 && alpha != 0.5, "α moved from its start: {a:?}");
    let s = build_sampler("dmala", &SamplerParams { step_size: Some(alpha), ..Default::default() }).unwrap();
    let p = kernel_matrix(&t, s.as_ref(), 0).unwrap();
    assert!(max_abs_diff(&p, &dlp(&t, alpha, None, true).unwrap()) < 1e-12);
    assert!(stationarity_residual(&probabilities(&t).unwrap(), &p) < 1e-10);
}

#[test]
fn the_post_warm_up_cyclical_kernels_are_the_fixed_schedule() {
    let t = Quadratic::spec_tiny();
    let a = adapted("acs-dmala-5", &t);
    let (max, min) = (a.step_size.unwrap(), a.step_size_min.unwrap());
    let params = SamplerParams { step_size: Some(max), step_size_min: Some(min), ..Default::default() };
    let s = build_sampler("acs-dmala-5", &params).unwrap();
    let refs = acs(&t, 5, max, min, 0.95, true).unwrap();
    let pi = probabilities(&t).unwrap();
    for (k, r) in refs.iter().enumerate() {
        let p = kernel_matrix(&t, s.as_ref(), k).unwrap();
        assert!(max_abs_diff(&p, r) < 1e-12, "phase {k}");
        assert!(stationarity_residual(&pi, &p) < 1e-10, "phase {k}");
    }
}
