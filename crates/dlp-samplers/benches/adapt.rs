//! Criterion benchmark of the warm-up adaptation's overhead (issue 18: ≤ 5% of warm-up time).
//!
//! Adaptation runs the warm-up as windows of `DEFAULT_WINDOW` steps, each an ordinary fixed-α
//! run restarted from the previous positions (one gradient per chain per restart) with an
//! observer summing acceptance probabilities, then one dual-averaging update. Its overhead
//! over a plain warm-up at the same α is therefore the restarts plus the observer:
//! `windowed` (W / `DEFAULT_WINDOW` restarted runs in one thread pool, observer included)
//! against `single` (one run of W steps), at a fixed α so the kernels cost the same. `adapt`
//! (the real `adapt_step_size`) is listed too; its α moves, so its time also reflects the
//! cost of the kernels at the α values it visits. DMALA and cyclical DMALA on the paper's
//! 25×25 lattice (both on the lattice kernel), 16 chains, one thread.
//! `cargo bench -p dlp-samplers --bench adapt`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dlp_core::{Observer, RunOptions, States, StepContext, StepInfo, run_chains, setup_rng};
use dlp_models::IsingModel;
use dlp_samplers::adapt::{AdaptOptions, adapt_step_size};
use dlp_samplers::{SamplerParams, build_sampler};
use rand::RngExt;
use std::time::Duration;

/// The adaptation's per-chain acceptance sums (as `adapt::AcceptSums`).
struct Sums(Vec<f64>);

impl Observer for Sums {
    fn observe(&mut self, _: &StepContext, _: States<'_>, info: &[StepInfo]) {
        for (s, i) in self.0.iter_mut().zip(info) {
            *s += i.accept_prob;
        }
    }
}

fn warmup(c: &mut Criterion) {
    const W: usize = 1000;
    const WINDOW: usize = dlp_samplers::adapt::DEFAULT_WINDOW;
    let m = IsingModel::paper_lattice(25, 0.1, 0.2);
    let chains = 16;
    let mut rng = setup_rng(0);
    let x0: Vec<u32> = (0..625 * chains).map(|_| u32::from(rng.random::<f64>() < 0.6)).collect();
    let run = RunOptions { seed: 1, threads: 1, chains_per_task: 0 };
    let mut g = c.benchmark_group("warmup");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    for (name, alpha) in [("dmala", 0.4), ("acs-dmala-20", 3.0)] {
        let fixed = build_sampler(name, &SamplerParams { step_size: Some(alpha), ..Default::default() }).unwrap();
        g.bench_function(BenchmarkId::new("single", name), |b| {
            b.iter(|| run_chains(fixed.as_ref(), &m, &x0, W, &run, |_, n| Sums(vec![0.0; n])).unwrap())
        });
        // As `adapt` does: one thread pool for all windows (threads = 0 inside it).
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let inner = RunOptions { threads: 0, ..run.clone() };
        g.bench_function(BenchmarkId::new("windowed", name), |b| {
            b.iter(|| {
                pool.install(|| {
                    let mut x = x0.clone();
                    for _ in 0..W / WINDOW {
                        let out =
                            run_chains(fixed.as_ref(), &m, &x, WINDOW, &inner, |_, n| Sums(vec![0.0; n])).unwrap();
                        x = out.final_states;
                    }
                    x
                })
            })
        });
        let opts = AdaptOptions { warmup: W, window: WINDOW, ..Default::default() };
        g.bench_function(BenchmarkId::new("adapt", name), |b| {
            b.iter(|| adapt_step_size(name, &SamplerParams::default(), &m, &x0, &opts, &run).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, warmup);
criterion_main!(benches);
