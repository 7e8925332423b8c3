//! Criterion benchmark of SGLD steps on the Bayesian NMF model of paper 001 §6.1 (issue 15), on
//! the synthetic stand-in of `common/nmf.rs` (MovieLens subset's shape, minibatch of 10,000
//! entries, one chain, one thread). `gradient` is the target's minibatch f and ∇f alone; each
//! sampler's `step` is one full iteration (gradient + update of every coordinate), so the
//! gradient's share is gradient / step and CoRV's overhead is corv-* / sgld-mirror − 1, all
//! measured in the same run. `cargo bench -p dlp-samplers --bench bounded_nmf`. On a shared,
//! noisy host `examples/corv_overhead.rs` gives steadier ratios (all samplers interleaved).
//! `transform_kernel_256` times the CoRV update's transform alone: (θ, F′, f″/f′) of one block
//! of 256 coordinates (in L1) by `Transform::forward_jac_slice`, per transform; divide by 256
//! for the time per coordinate.

#[path = "common/nmf.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use dlp_core::transform::Transform;
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

fn kernels(c: &mut Criterion) {
    const N: usize = 256;
    // φ over [−3, 1): θ from 0.05 to 3 for the half-line transforms, the NMF entries' range.
    let phi: Vec<f64> = (0..N).map(|i| -3.0 + 4.0 * i as f64 / N as f64).collect();
    let (mut f, mut d, mut l) = ([0.0; N], [0.0; N], [0.0; N]);
    let mut g = c.benchmark_group("transform_kernel_256");
    g.sample_size(30).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    for t in [Transform::Exp, Transform::Softplus, Transform::Sigmoid, Transform::Icll] {
        g.bench_function(t.name(), |b| {
            b.iter(|| t.forward_jac_slice(0.0, 1.0, std::hint::black_box(&phi), &mut f, &mut d, &mut l))
        });
    }
    g.finish();
}

criterion_group!(benches, nmf, kernels);
criterion_main!(benches);
