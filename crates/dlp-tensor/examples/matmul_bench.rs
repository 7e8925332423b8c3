//! Benchmark (not a test): candle's f32 CPU matrix product at the shapes of AntiBERTy's
//! layers for 25 chains × 96 tokens (2,400 rows: Q/K/V/output 512 → 512, FFN 512 → 2048 and
//! 2048 → 512, weights transposed as `linear` uses them) and a square 1024³, one JSON line per
//! shape and round (GFLOP/s from the best of REPS calls). It shows which of gemm's kernels
//! candle gets: the workspace turns on gemm's AVX-512 kernels (`x86-v4`, ARCHITECTURE.md);
//! `avx512f` says whether this CPU has them.
//!
//! `RAYON_NUM_THREADS=1 cargo run --release -p dlp-tensor --example matmul_bench [-- REPS ROUNDS]`

use dlp_tensor::Device;
use dlp_tensor::candle_core::{Tensor, utils::get_num_threads};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: usize| args.get(i).map(|a| a.parse().expect("integer argument")).unwrap_or(d);
    let (reps, rounds) = (num(0, 10).max(1), num(1, 2).max(1));
    // (rows, inner, out, weight transposed)
    let shapes = [(2400, 512, 512, true), (2400, 512, 2048, true), (2400, 2048, 512, true), (1024, 1024, 1024, false)];
    let dev = &Device::Cpu;
    // Deterministic operands; the time does not depend on the values.
    let fill = |n: usize, k: usize| -> Vec<f32> { (0..n).map(|i| ((i * k) % 1000) as f32 / 1000.0 - 0.5).collect() };
    for round in 0..rounds {
        for &(m, k, n, transposed) in &shapes {
            let a = Tensor::from_vec(fill(m * k, 7919), (m, k), dev).expect("lhs");
            let w = if transposed {
                Tensor::from_vec(fill(n * k, 104_729), (n, k), dev).and_then(|w| w.t()).expect("rhs")
            } else {
                Tensor::from_vec(fill(k * n, 104_729), (k, n), dev).expect("rhs")
            };
            let mut best = f64::INFINITY;
            for _ in 0..reps {
                let t = Instant::now();
                let c = a.matmul(&w).expect("matmul");
                std::hint::black_box(&c);
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
                "{{\"bench\":\"candle_matmul_f32\",\"round\":{round},\"threads\":{},\"avx512f\":{},\"m\":{m},\"k\":{k},\"n\":{n},\"rhs_transposed\":{transposed},\"best_ms\":{:.2},\"gflops\":{:.1}}}",
                get_num_threads(),
                avx512(),
                best * 1e3,
                2.0 * (m * k * n) as f64 / best / 1e9
            );
        }
    }
}

fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
