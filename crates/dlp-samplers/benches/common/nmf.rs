//! The NMF timing set-up shared by `benches/bounded_nmf.rs` (criterion, one sampler per
//! interval) and `examples/corv_overhead.rs` (all samplers interleaved): a synthetic stand-in of
//! the MovieLens subset's shape (671 × 9,066, 100,004 observed entries with mean ≈ 3.5, rank 20,
//! so 194,740 coordinates), minibatches of 10,000 entries, and the five samplers at ε = 1e−5.

use dlp_core::transform::Transform;
use dlp_core::{ContinuousSampler, rng::minibatch_rng, setup_rng};
use dlp_models::nmf::PoissonNmf;
use dlp_samplers::bounded::{BoundedSgld, Method, StepSchedule};
use rand::seq::index::sample;

/// (name, method, half-line transform): sigmoid on intervals (none in NMF).
pub const SAMPLERS: [(&str, Method, Transform); 5] = [
    ("sgld-mirror", Method::Mirror, Transform::Softplus),
    ("sgrld", Method::Sgrld, Transform::Softplus),
    ("corv-exp", Method::Corv, Transform::Exp),
    ("corv-softplus", Method::Corv, Transform::Softplus),
    ("corv-icll", Method::Corv, Transform::Icll),
];

/// The stand-in model, its true (W, Hᵀ) row (the chains' start) and `n_batches` minibatches.
pub fn standin(n_batches: usize) -> (PoissonNmf, Vec<f64>, Vec<Vec<usize>>) {
    let mut rng = setup_rng(0);
    let (m, truth) = PoissonNmf::synthetic(671, 9066, 20, 100_004, 3.5, &mut rng).unwrap();
    let batches = (0..n_batches).map(|t| sample(&mut minibatch_rng(1, t), m.value.len(), 10_000).into_vec()).collect();
    (m, truth, batches)
}

/// The sampler of one `SAMPLERS` row, with minibatches of 10,000.
pub fn sampler(method: Method, half: Transform) -> Box<dyn ContinuousSampler> {
    Box::new(
        BoundedSgld::new(method, StepSchedule::Constant(1e-5))
            .unwrap()
            .with_transforms(Transform::Sigmoid, half)
            .with_batch(Some(10_000)),
    )
}
