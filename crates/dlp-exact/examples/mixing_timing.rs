//! Times the eigenproblems behind `dlp_exact::mixing` for the README's dependency notes:
//! one symmetric eigen-decomposition (symmetrised reversible P) and one general one (real
//! Schur of a non-reversible P) of random stochastic matrices with N states (default
//! `MAX_MATRIX_STATES` = 4096, the largest `dlp exact` accepts; the general one takes many
//! minutes there). A measurement, not a test:
//! `cargo run --release -p dlp-exact --example mixing_timing -- [N] [symmetric|general|both]`.

use dlp_exact::matrix::{MAX_MATRIX_STATES, general_eigenvalues, symmetrised_eigenvalues};
use nalgebra::DMatrix;
use rand::RngExt;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(MAX_MATRIX_STATES as usize);
    let which = args.get(2).map_or("both", String::as_str);
    if which != "general" {
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
        println!("n = {n}: symmetric eigenvalues (symmetrised P) {:.2} s, λ₁ = {}", t.elapsed().as_secs_f64(), ev[0]);
    }
    if which != "symmetric" {
        let mut rng = dlp_core::setup_rng(8);
        let q = DMatrix::from_fn(n, n, |_, _| rng.random::<f64>());
        let q = DMatrix::from_fn(n, n, |i, j| q[(i, j)] / q.row(i).sum());
        let t = Instant::now();
        let ev = general_eigenvalues(&q);
        println!("n = {n}: general eigenvalues (real Schur) {:.2} s, λ₁ = {}", t.elapsed().as_secs_f64(), ev[0]);
    }
}
