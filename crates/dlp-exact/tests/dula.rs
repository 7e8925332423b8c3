//! DULA's stationary law (spec §4.2–§4.8): solved from the implementation's matrix, it differs
//! from π, equals the closed form π_α ∝ π·Z_α on log-quadratic targets, shrinks towards π as
//! α decreases, and respects Theorem 5.1's bounds when their assumptions hold.

mod common;

use common::ModelSpec;
use dlp_core::testing::Quadratic;
use dlp_core::{RowTarget, Sampler, Space, Target};
use dlp_exact::matrix::{dula_closed_form, kernel_matrix, l1_distance, stationary, thm51_bounds};
use dlp_exact::probabilities;
use dlp_samplers::{SamplerParams, build_sampler};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

fn dula(alpha: f64, precond: Option<Vec<f64>>) -> Box<dyn Sampler> {
    let name = if precond.is_some() { "pdula" } else { "dula" };
    build_sampler(
        name,
        &SamplerParams {
            step_size: Some(alpha),
            preconditioner: precond,
            batch_size: None,
            step_size_min: None,
            ladder: None,
        },
    )
    .unwrap()
}

fn dula_law(t: &dyn Target, alpha: f64, precond: Option<Vec<f64>>) -> Vec<f64> {
    stationary(&kernel_matrix(t, dula(alpha, precond).as_ref(), 0).unwrap()).unwrap()
}

#[test]
fn tiny_model_bias_matches_spec_4_3_and_decreases_with_alpha() {
    let t = Quadratic::spec_tiny();
    let pi = probabilities(&t).unwrap();
    // ‖π_α − π‖₁ from spec §4.3 (independent numpy computation).
    let table = dlp_core::testing::SPEC_TINY_DULA_L1_VS_ALPHA;
    let mut last = 0.0;
    for (alpha, l1) in table {
        let law = dula_law(&t, alpha, None);
        let bias = l1_distance(&law, &pi);
        assert!((bias - l1).abs() < 1e-4 * l1.max(1e-3), "α = {alpha}: {bias} vs {l1}");
        assert!(bias > last, "bias must grow with α");
        last = bias;
    }
}

#[test]
fn extension_dependence_matches_spec_4_8() {
    // Adding c·Σ(x_i² − x_i) leaves π unchanged but moves DULA's law (pitfall P9).
    for (c, l1) in [(0.0, 0.192636), (1.0, 0.126485), (-1.0, 0.283306)] {
        let mut t = Quadratic::spec_tiny();
        for i in 0..3 {
            t.w[i * 3 + i] += c;
            t.b[i] -= c;
        }
        let pi = probabilities(&t).unwrap();
        let bias = l1_distance(&dula_law(&t, 0.5, None), &pi);
        assert!((bias - l1).abs() < 2e-6, "c = {c}: {bias}");
    }
}

#[test]
fn ising_3x3_bias_matches_spec_4_7() {
    let t = dlp_models::IsingModel::paper_lattice(3, 0.1, 0.2);
    let pi = probabilities(&t).unwrap();
    for (alpha, l1, mean) in
        [(0.1, 1.25055e-2, 0.46020517), (0.2, 1.41961e-1, 0.41029339), (0.4, 4.16807e-1, 0.30983958)]
    {
        let law = dula_law(&t, alpha, None);
        assert!((l1_distance(&law, &pi) - l1).abs() < 1e-5 * l1 / 1e-2, "α = {alpha}");
        // E[s_0]: spin index 1 is +1; state index has coordinate 0 most significant.
        let m: f64 = law.iter().enumerate().map(|(s, p)| p * if s >> 8 & 1 == 1 { 1.0 } else { -1.0 }).sum();
        assert!((m - mean).abs() < 1e-7, "α = {alpha}: E[s] = {m}");
        assert!(l1_distance(&law, &dula_closed_form(&t, alpha, None).unwrap()) < 1e-10);
    }
}

/// U_a(θ) = −θ²/4 + a sin θ on {−3..3} (spec §4.6).
struct SinTarget(f64, Space);

impl RowTarget for SinTarget {
    fn row_space(&self) -> &Space {
        &self.1
    }
    fn row_log_density(&self, x: &[u32]) -> f64 {
        let th = self.1.values[x[0] as usize] as f64;
        -th * th / 4.0 + self.0 * th.sin()
    }
    fn row_log_density_grad(&self, x: &[u32], g: &mut [f64]) -> f64 {
        let th = self.1.values[x[0] as usize] as f64;
        g[0] = -th / 2.0 + self.0 * th.cos();
        self.row_log_density(x)
    }
}

#[test]
fn ordinal_bias_grows_with_nonlinearity_spec_4_6() {
    for (alpha, row) in [
        (0.5, [(0.0, 0.018800), (0.25, 0.031746), (0.5, 0.045230), (1.0, 0.089855), (2.0, 0.159873)]),
        (1.0, [(0.0, 0.042661), (0.25, 0.064363), (0.5, 0.090194), (1.0, 0.186551), (2.0, 0.387893)]),
    ] {
        for (a, l1) in row {
            let t = SinTarget(a, Space::ordinal(1, (-3..=3).collect()));
            let bias = l1_distance(&dula_law(&t, alpha, None), &probabilities(&t).unwrap());
            assert!((bias - l1).abs() < 2e-6, "α = {alpha}, a = {a}: {bias}");
        }
    }
}

fn log_quadratic(max_d: usize) -> impl Strategy<Value = ModelSpec> {
    prop_oneof![
        common::ising(max_d),
        common::ordinal(),
        common::categorical(1 << max_d).prop_filter("potts", |m| matches!(m, ModelSpec::Potts { .. }))
    ]
}

/// Random log-quadratic targets (Ising in bits, Potts in one-hot, ordinal quadratics with a
/// diagonal): the solved law is the closed form, and differs from π.
#[test]
fn closed_form_holds_on_random_log_quadratic_targets() {
    let config = Config { cases: 100, rng_seed: RngSeed::Fixed(5), failure_persistence: None, ..Config::default() };
    TestRunner::new(config)
        .run(&(log_quadratic(7), 0.2f64..2.0, any::<bool>()), |(spec, alpha, pre)| {
            let t = spec.build();
            let h = pre.then(|| common::precond(t.space().d));
            let law = dula_law(t.as_ref(), alpha, h.clone());
            let closed = dula_closed_form(t.as_ref(), alpha, h.as_deref()).unwrap();
            let err = l1_distance(&law, &closed);
            prop_assert!(err < 1e-10, "solve vs closed form: {err:e}");
            Ok(())
        })
        .unwrap();
}

/// Theorem 5.1 items 2–4 on random binary quadratics (zero-diagonal W; integer domain,
/// assumptions of item 3 checked inside `thm51_bounds`).
#[test]
fn theorem_5_1_bounds_hold_on_random_binary_quadratics() {
    let config = Config { cases: 100, rng_seed: RngSeed::Fixed(51), failure_persistence: None, ..Config::default() };
    let strategy = (2usize..=6).prop_flat_map(|d| {
        (prop::collection::vec(-1.0..1.0f64, d * d), prop::collection::vec(-1.0..1.0f64, d), 0.1f64..1.0)
    });
    TestRunner::new(config)
        .run(&strategy, |(w, b, alpha)| {
            let d = b.len();
            let t = Quadratic::new(Space::binary(d), w.clone(), b);
            let bounds = thm51_bounds(&t, &w, alpha).unwrap();
            // The bias from the implementation's matrix equals the closed form's.
            let bias = l1_distance(&dula_law(&t, alpha, None), &probabilities(&t).unwrap());
            prop_assert!((bias - bounds.bias_l1).abs() < 1e-10);
            prop_assert!(bias <= bounds.hat_z_bound + 1e-12, "{bounds:?}");
            prop_assert!(bias <= bounds.binary_bound.unwrap() + 1e-12, "{bounds:?}");
            if let Some(e) = bounds.eigen_bound {
                prop_assert!(bounds.hat_z_bound <= e + 1e-12, "{bounds:?}");
            }
            // Smaller α, smaller bias (log-quadratic targets; zero bias only for flat targets).
            // α ≥ 0.05 keeps flip probabilities ≥ e^{−10}, so the LU solve keeps ~1e−12 accuracy.
            let smaller = l1_distance(&dula_law(&t, alpha / 2.0, None), &probabilities(&t).unwrap());
            prop_assert!(smaller < bias || bias < 1e-9, "α/2 gives {smaller} ≥ {bias}");
            Ok(())
        })
        .unwrap();
}
