//! Helpers shared by the tensor-target tests: random tensor-target inputs and a relative
//! difference (`agree.rs`); [`bert`]: a small BERT configuration (`bert.rs`, and
//! `dlp-device`'s `tests/cuda.rs`, which includes the file by path). Each test binary uses a
//! subset of them.

#![allow(dead_code)]

pub mod bert;

use rand::RngExt;

/// `n` values uniform on (−scale, scale).
pub fn uniform(rng: &mut impl RngExt, n: usize, scale: f64) -> Vec<f64> {
    (0..n).map(|_| rng.random_range(-scale..scale)).collect()
}

/// `n` states of `d` coordinates with values in 0..k, from a seeded stream.
pub fn random_states(seed: u64, n: usize, d: usize, k: u32) -> Vec<u32> {
    let mut rng = dlp_core::setup_rng(seed);
    (0..n * d).map(|_| rng.random_range(0..k)).collect()
}

/// The largest |a − b| / max(1, |b|) over the two slices (b is the reference).
pub fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / y.abs().max(1.0)).fold(0.0, f64::max)
}
