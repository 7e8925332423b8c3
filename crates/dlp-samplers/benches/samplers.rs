//! Criterion benchmarks: one step of every chain, per sampler × model (`just bench`).
//!
//! Ising: the paper's periodic lattice (σ = 0.1, b = 0.2) at L ∈ {25, 100} with 1 and 16
//! chains, through `start()` (the fast path where it applies: the lattice DLP kernel, GWG's
//! sum tree) and through the generic path (`fast::Generic`), plus bg-1 and hb-10-1 of fig3;
//! RBM 784×500 with 100
//! chains, through `start()` (cached pre-activation paths) and through `fast::Generic`; GWG
//! on a 50×50 Potts lattice (K = 4), sum-tree kernel and generic.
//! Throughput is in spins (chains × d), so criterion's "elements/s" is spin-steps per
//! second. For comparisons with the official
//! code and the C floor use `dlp bench` / `just bench-peer` (same session, ratios).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dlp_core::math::sigmoid;
use dlp_core::{StepInfo, Target, chain_rngs, setup_rng};
use dlp_models::{IsingModel, Rbm};
use dlp_samplers::fast::Generic;
use dlp_samplers::{SamplerParams, build_sampler};
use rand::RngExt;
use std::time::Duration;

fn bits(seed: u64, n: usize, p: f64) -> Vec<u32> {
    let mut rng = setup_rng(seed);
    (0..n).map(|_| u32::from(rng.random::<f64>() < p)).collect()
}

fn bench_one(
    c: &mut Criterion,
    group: &str,
    target: &dyn Target,
    name: &str,
    step: Option<f64>,
    x0: &[u32],
    id: String,
) {
    let sampler = build_sampler(name, &SamplerParams { step_size: step, ..Default::default() }).unwrap();
    let n = x0.len() / target.space().d;
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(x0.len() as u64));
    g.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    let mut chains = sampler.start(target, x0).unwrap();
    let mut rngs = chain_rngs(1, 0, n);
    let mut info = vec![StepInfo::default(); n];
    g.bench_function(BenchmarkId::new(name, id), |b| b.iter(|| chains.step(&mut rngs, &mut info)));
    g.finish();
}

fn ising(c: &mut Criterion) {
    for l in [25, 100] {
        let m = IsingModel::paper_lattice(l, 0.1, 0.2);
        let generic = Generic(&m);
        for chains in [1, 16] {
            let x0 = bits(0, l * l * chains, sigmoid(0.4));
            for (name, step) in [
                ("dula", Some(0.2)),
                ("dmala", Some(0.4)),
                ("gwg", None),
                ("gwg-4", None),
                ("bg-1", None),
                ("hb-10-1", None),
            ] {
                if matches!(name, "dula" | "dmala" | "gwg" | "gwg-4") {
                    bench_one(c, "ising", &m, name, step, &x0, format!("L{l}-B{chains}-fast"));
                }
                bench_one(c, "ising", &generic, name, step, &x0, format!("L{l}-B{chains}-generic"));
            }
        }
    }
}

fn rbm(c: &mut Criterion) {
    let (d, m) = (784, 500);
    let mut rng = setup_rng(7);
    let mut normal = move || rng.sample::<f64, _>(rand_distr::StandardNormal);
    let w: Vec<f64> = (0..d * m).map(|_| 0.05f64.sqrt() * normal()).collect();
    let b: Vec<f64> = (0..d).map(|_| normal()).collect();
    let cc: Vec<f64> = (0..m).map(|_| normal()).collect();
    let rbm = Rbm::new(dlp_core::DomainKind::Binary, d, m, w, b, cc).unwrap();
    let x0 = bits(1, d * 100, 0.5);
    for (name, step) in
        [("dula", Some(0.1)), ("dmala", Some(0.2)), ("gwg", None), ("bg-1", None), ("block-gibbs", None)]
    {
        bench_one(c, "rbm", &rbm, name, step, &x0, "784x500-B100".into());
        if name != "block-gibbs" {
            // `start()` takes the cached pre-activation paths on an Rbm; `Generic` hides it.
            bench_one(c, "rbm", &Generic(&rbm), name, step, &x0, "784x500-B100-generic".into());
        }
    }
}

/// GWG on a 50×50 periodic Potts lattice with K = 4: the sum-tree kernel (`start()`) against
/// the generic one (`Generic`), one chain.
fn potts(c: &mut Criterion) {
    let (l, k) = (50, 4);
    let couplings = dlp_models::couplings::Couplings::lattice(&[l, l], true, 0.3).unwrap();
    let h: Vec<f64> = (0..l * l * k).map(|i| ((i * 13 % 17) as f64 - 8.0) * 0.05).collect();
    let m = dlp_models::PottsModel::new(dlp_core::Space::categorical(l * l, k), couplings, h).unwrap();
    let x0: Vec<u32> = (0..l * l).map(|i| (i * 7 % k) as u32).collect();
    bench_one(c, "potts", &m, "gwg", None, &x0, format!("L{l}-K{k}-B1-fast"));
    bench_one(c, "potts", &Generic(&m), "gwg", None, &x0, format!("L{l}-K{k}-B1-generic"));
}

criterion_group!(benches, ising, rbm, potts);
criterion_main!(benches);
