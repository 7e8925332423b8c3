//! Criterion benchmark of SGLD steps on the Bayesian NMF model of paper 001 §6.1 (issue 15), on
//! the synthetic stand-in of `common/nmf.rs` (MovieLens subset's shape, minibatch of 10,000
//! entries, one chain, one thread). `gradient` is the target's minibatch f and ∇f alone; each
//! sampler's `step` is one full iteration (gradient + update of every coordinate), so the
//! gradient's share is gradient / step and CoRV's overhead is corv-* / sgld-mirror − 1, all
//! measured in the same run. `cargo bench -p dlp-samplers --bench bounded_nmf`. On a shared,
//! noisy host `examples/corv_overhead.rs` gives steadier ratios (all samplers interleaved).

#[path = "common/nmf.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use dlp_core::{Batch, ContinuousTarget, StepInfo, chain_rngs};
use std::time::Duration;

fn nmf(c: &mut Criterion) {
    let (m, truth, batches) = common::standin(64);
    let mut g = c.benchmark_group("nmf_671x9066_r20_b10000");
    g.sample_size(20).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    let (mut f, mut grad) = (vec![0.0], vec![0.0; m.dim()]);
    let mut t = 0;
    g.bench_function("gradient", |b| {
        b.iter(|| {
            t = (t + 1) % batches.len();
            m.evaluate(&truth, Batch::Items(&batches[t]), &mut f, Some(&mut grad)).unwrap();
        })
    });
    for (name, method, half) in common::SAMPLERS {
        let s = common::sampler(method, half);
        let mut chains = s.start(&m, &truth).unwrap();
        let mut rngs = chain_rngs(2, 0, 1);
        let mut info = vec![StepInfo::default(); 1];
        let mut t = 0;
        g.bench_function(name, |b| {
            b.iter(|| {
                t = (t + 1) % batches.len();
                chains.try_step(&mut rngs, &mut info, Batch::Items(&batches[t])).unwrap();
            })
        });
    }
    g.finish();
}

criterion_group!(benches, nmf);
criterion_main!(benches);
