//! CoRV's time per NMF iteration over plain SGLD (mirror) on a shared machine, for paper 001's
//! "at most +10%" claim (App. D): the `benches/bounded_nmf.rs` set-up (a synthetic stand-in of
//! the MovieLens subset's shape, 671 × 9,066, rank 20, 194,740 coordinates, minibatch 10,000,
//! one chain, one thread), but every sampler stepped in turn within each round — gradient
//! alone, mirror, SGRLD, CoRV exp / softplus / ICLL, 10 iterations each — over R rounds and
//! compared by their minima (the least-disturbed round of each; contention only adds time).
//! Criterion times each sampler in its own interval, so on a noisy host its ratios move by
//! ±30% between runs; here the ratios come from one interleaved run.
//! `cargo run --release -p dlp-samplers --example corv_overhead -- [R]`.

#[path = "../benches/common/nmf.rs"]
mod common;

use dlp_core::{Batch, ContinuousTarget, StepInfo, chain_rngs};
use std::time::Instant;

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(30);
    const ITERS: usize = 10;
    let (m, truth, batches) = common::standin(ITERS);
    let samplers: Vec<_> = common::SAMPLERS.iter().map(|&(_, method, half)| common::sampler(method, half)).collect();
    let mut chains: Vec<_> = samplers.iter().map(|s| s.start(&m, &truth).unwrap()).collect();
    let mut rngs = chain_rngs(2, 0, 1);
    let mut info = vec![StepInfo::default(); 1];
    let (mut f, mut grad) = (vec![0.0], vec![0.0; m.dim()]);
    // best[0]: the gradient alone; best[1 + i]: sampler i. Seconds per iteration.
    let mut best = vec![f64::INFINITY; 1 + samplers.len()];
    for _ in 0..rounds {
        let t = Instant::now();
        for b in &batches {
            m.evaluate(&truth, Batch::Items(b), &mut f, Some(&mut grad)).unwrap();
        }
        best[0] = best[0].min(t.elapsed().as_secs_f64() / ITERS as f64);
        for (i, c) in chains.iter_mut().enumerate() {
            let t = Instant::now();
            for b in &batches {
                c.try_step(&mut rngs, &mut info, Batch::Items(b)).unwrap();
            }
            best[1 + i] = best[1 + i].min(t.elapsed().as_secs_f64() / ITERS as f64);
        }
    }
    let mirror = best[1];
    println!("gradient alone   {:.3} ms  ({:.0}% of a mirror iteration)", best[0] * 1e3, best[0] / mirror * 100.0);
    for (i, (name, ..)) in common::SAMPLERS.iter().enumerate() {
        let t = best[1 + i];
        println!("{name:16} {:.3} ms  {:+.0}% vs sgld-mirror", t * 1e3, (t / mirror - 1.0) * 100.0);
    }
    println!("(minimum over {rounds} interleaved rounds of {ITERS} iterations each)");
}
