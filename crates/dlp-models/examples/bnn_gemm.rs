//! The BNN gradient's share of this machine's GEMM peak (`paper/table2.md`, Performance):
//! times ndarray/matrixmultiply f32 and f64 GEMM at 1024³ (the peak, same library as the
//! model) and one batched gradient evaluation of a COMPAS-shaped BNN (N = 4,887, p = 13,
//! H = 100, 50 chains; synthetic stand-in features, the cost does not depend on the values),
//! which is what one DMALA step costs (the current state's gradient is cached), in both
//! precisions; also the largest |f_f32 − f_f64| over the chains. Single thread; prints one
//! JSON line.
//!
//! `cargo run --release -p dlp-models --example bnn_gemm [-- N P H CHAINS REPS]`

use dlp_core::TargetExt;
use dlp_models::BnnModel;
use dlp_models::bnn::Precision;
use ndarray::Array2;
use ndarray::linalg::general_mat_mul;
use std::time::Instant;

fn best_of<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let a: Vec<usize> = std::env::args().skip(1).map(|s| s.parse().expect("integer arguments")).collect();
    let get = |i: usize, v: usize| a.get(i).copied().unwrap_or(v);
    let (n, p, h, chains, reps) = (get(0, 4887), get(1, 13), get(2, 100), get(3, 50), get(4, 5));
    let m = 1024;
    let (x32, y32) = (Array2::<f32>::from_elem((m, m), 0.5), Array2::<f32>::from_elem((m, m), 0.25));
    let mut z32 = Array2::<f32>::zeros((m, m));
    let s32 = best_of(reps, || general_mat_mul(1.0, &x32, &y32, 0.0, &mut z32));
    let (x64, y64) = (Array2::<f64>::from_elem((m, m), 0.5), Array2::<f64>::from_elem((m, m), 0.25));
    let mut z64 = Array2::<f64>::zeros((m, m));
    let s64 = best_of(reps, || general_mat_mul(1.0, &x64, &y64, 0.0, &mut z64));
    let gemm_flop = 2.0 * (m * m * m) as f64;

    // Deterministic stand-in data and states (values do not change the cost).
    let x: Vec<f64> = (0..n * p).map(|i| ((i * 7919 % 1000) as f64 / 500.0) - 1.0).collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 2) as f64).collect();
    let d = (p + 2) * h + 1;
    let model = BnnModel::new(d, p, h, 100.0, x, y).expect("valid shapes");
    let model32 = model.clone().with_precision(Precision::F32);
    let xs: Vec<u32> = (0..chains * d).map(|i| ((i * 2654435761usize) >> 7 & 1) as u32).collect();
    let (mut f, mut g) = (vec![0.0; chains], vec![0.0; chains * d]);
    let (mut f32v, mut g32) = (vec![0.0; chains], vec![0.0; chains * d]);
    let s_grad = best_of(reps, || model.log_density_grad_batch(&xs, &mut f, &mut g).unwrap());
    let s_f = best_of(reps, || model.log_density_batch(&xs, &mut f).unwrap());
    let s_grad32 = best_of(reps, || model32.log_density_grad_batch(&xs, &mut f32v, &mut g32).unwrap());
    let s_f32 = best_of(reps, || model32.log_density_batch(&xs, &mut f32v).unwrap());
    let f_err = f.iter().zip(&f32v).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let g_err = g.iter().zip(&g32).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let g_max = g.iter().map(|v| v.abs()).fold(0.0, f64::max);
    let bnn_flop = 4.0 * (n * p * h * chains) as f64; // forward X·W1 and backward Xᵀ·Δ
    println!(
        "{{\"sgemm_gflops\": {:.2}, \"dgemm_gflops\": {:.2}, \"bnn_grad_ms\": {:.2}, \"bnn_f_ms\": {:.2}, \"bnn_grad_ms_f32\": {:.2}, \"bnn_f_ms_f32\": {:.2}, \"bnn_gemm_gflop\": {:.3}, \"bnn_gflops\": {:.2}, \"bnn_gflops_f32\": {:.2}, \"share_of_sgemm_peak\": {:.3}, \"share_of_dgemm_peak\": {:.3}, \"share_of_sgemm_peak_f32\": {:.3}, \"f32_max_abs_f_err\": {:.3e}, \"f32_max_abs_grad_err\": {:.3e}, \"max_abs_grad\": {:.3e}, \"f_mean\": {:.4}, \"n\": {n}, \"p\": {p}, \"hidden\": {h}, \"chains\": {chains}}}",
        gemm_flop / s32 / 1e9,
        gemm_flop / s64 / 1e9,
        s_grad * 1e3,
        s_f * 1e3,
        s_grad32 * 1e3,
        s_f32 * 1e3,
        bnn_flop / 1e9,
        bnn_flop / s_grad / 1e9,
        bnn_flop / s_grad32 / 1e9,
        bnn_flop / s_grad / (gemm_flop / s32),
        bnn_flop / s_grad / (gemm_flop / s64),
        bnn_flop / s_grad32 / (gemm_flop / s32),
        f_err,
        g_err,
        g_max,
        f.iter().sum::<f64>() / chains as f64,
    );
}
