//! Timing of the eigenproblems behind `dlp_exact::mixing` at the largest matrix `dlp exact`
//! accepts (`MAX_MATRIX_STATES` = 4096 states), for the README's dependency notes. Not
//! timed assertions: they print the times. Run in release, one at a time:
//! `cargo test -p dlp-exact --release --test mixing_timing -- --ignored --nocapture
//! --test-threads 1` (`DLP_MIXING_N=1024` for another size).

use dlp_exact::matrix::{MAX_MATRIX_STATES, general_eigenvalues, symmetrised_eigenvalues};
use nalgebra::DMatrix;
use rand::RngExt;
use std::time::Instant;

fn size() -> usize {
    std::env::var("DLP_MIXING_N").ok().and_then(|v| v.parse().ok()).unwrap_or(MAX_MATRIX_STATES as usize)
}

#[test]
#[ignore = "timing for the README; prints, asserts only sanity"]
fn symmetric_eigenvalues_time_at_the_matrix_limit() {
    let n = size();
    let mut rng = dlp_core::setup_rng(7);
    // Reversible: P = W / rowsum(W) for symmetric W > 0, with π ∝ rowsum(W).
    let mut w = DMatrix::<f64>::zeros(n, n);
    for i in 0..n {
        for j in 0..=i {
            let v: f64 = rng.random();
            w[(i, j)] = v;
            w[(j, i)] = v;
        }
    }
    let sums: Vec<f64> = (0..n).map(|i| w.row(i).sum()).collect();
    let total: f64 = sums.iter().sum();
    let pi: Vec<f64> = sums.iter().map(|s| s / total).collect();
    let p = DMatrix::from_fn(n, n, |i, j| w[(i, j)] / sums[i]);
    let t = Instant::now();
    let ev = symmetrised_eigenvalues(&p, &pi);
    let secs = t.elapsed().as_secs_f64();
    assert!((ev[0] - 1.0).abs() < 1e-8, "λ₁ = {}", ev[0]);
    eprintln!("n = {n}: symmetric eigenvalues (symmetrised P) {secs:.2} s");
}

#[test]
#[ignore = "timing for the README (many minutes at 4096); prints, asserts only sanity"]
fn general_eigenvalues_time_at_the_matrix_limit() {
    let n = size();
    let mut rng = dlp_core::setup_rng(8);
    // A random stochastic matrix (not reversible).
    let q = DMatrix::from_fn(n, n, |_, _| rng.random::<f64>());
    let q = DMatrix::from_fn(n, n, |i, j| q[(i, j)] / q.row(i).sum());
    let t = Instant::now();
    let ev = general_eigenvalues(&q);
    let secs = t.elapsed().as_secs_f64();
    assert!((ev[0].re - 1.0).abs() < 1e-8, "λ₁ = {}", ev[0]);
    eprintln!("n = {n}: general eigenvalues (real Schur) {secs:.2} s");
}
