//! Criterion benchmark of AIS's per-temperature restart (`dlp_samplers::ais`).
//!
//! AIS restarts the chains at every temperature (`Sampler::start` on γ_β), which costs one
//! evaluation of f and ∇f per chain and temperature. `ais` (K temperatures) is set against
//! `plain` (K steps of the same sampler on γ_1 through the same capability-free wrapper, so
//! both run the generic kernel) and `fast` (K steps on the RBM itself, whose fast path AIS
//! cannot use). RBM 100 × 50 (a stand-in with random weights), 64 chains, K = 100, one thread.
//! `cargo bench -p dlp-samplers --bench ais`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dlp_core::{DomainKind, RunOptions, run_chains, setup_rng};
use dlp_models::Rbm;
use dlp_samplers::ais::{AisOptions, ProductBase, Tempered, run_ais};
use dlp_samplers::{SamplerParams, build_sampler};
use rand::RngExt;
use std::time::Duration;

fn restart(c: &mut Criterion) {
    let (d, m, chains, k) = (100, 50, 64, 100);
    let mut rng = setup_rng(0);
    let mut draw = |n: usize, s: f64| (0..n).map(|_| s * (2.0 * rng.random::<f64>() - 1.0)).collect::<Vec<_>>();
    let rbm = Rbm::new(DomainKind::Binary, d, m, draw(d * m, 0.3), draw(d, 0.5), draw(m, 0.5)).unwrap();
    let base = ProductBase::bernoulli(&vec![0.5; d]).unwrap();
    let x0: Vec<u32> = (0..d * chains).map(|i| (i % 3 == 0) as u32).collect();
    let run = RunOptions { seed: 1, threads: 1, chains_per_task: 0 };
    let generic = Tempered { inner: &rbm, base: Some(&base), beta: 1.0 };
    let mut g = c.benchmark_group("ais_restart");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    for (name, alpha) in [("gwg", None), ("dmala", Some(0.2))] {
        let s = build_sampler(name, &SamplerParams { step_size: alpha, ..Default::default() }).unwrap();
        g.bench_function(BenchmarkId::new("ais", name), |b| {
            let opts = AisOptions { chains, temperatures: k, seed: 1, threads: 1 };
            b.iter(|| run_ais(&rbm, &base, s.as_ref(), &opts, &mut |_| {}).unwrap())
        });
        g.bench_function(BenchmarkId::new("plain", name), |b| {
            b.iter(|| run_chains(s.as_ref(), &generic, &x0, k, &run, |_, _| ()).unwrap())
        });
        g.bench_function(BenchmarkId::new("fast", name), |b| {
            b.iter(|| run_chains(s.as_ref(), &rbm, &x0, k, &run, |_, _| ()).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, restart);
criterion_main!(benches);
