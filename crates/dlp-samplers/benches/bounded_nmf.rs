//! Criterion benchmark of SGLD steps on the Bayesian NMF model of paper 001 §6.1 (issue 15):
//! synthetic Poisson-NMF data of the MovieLens subset's shape (a stand-in: 671 × 9,066, 100,004
//! observed entries with mean ≈ 3.5, rank 20, so 194,740 coordinates), minibatch of 10,000
//! entries, one chain, one thread. `gradient` is the target's minibatch f and ∇f alone; each
//! sampler's `step` is one full iteration (gradient + update of every coordinate), so the
//! gradient's share is gradient / step and CoRV's overhead is corv-* / sgld-mirror − 1, all
//! measured in the same run. `cargo bench -p dlp-samplers --bench bounded_nmf`.

use criterion::{Criterion, criterion_group, criterion_main};
use dlp_core::transform::Transform;
use dlp_core::{Batch, ContinuousSampler, ContinuousTarget, chain_rngs, setup_rng};
use dlp_core::{StepInfo, rng::minibatch_rng};
use dlp_models::nmf::PoissonNmf;
use dlp_samplers::bounded::{BoundedSgld, Method, StepSchedule};
use rand::seq::index::sample;
use std::time::Duration;

fn nmf(c: &mut Criterion) {
    let mut rng = setup_rng(0);
    let (m, truth) = PoissonNmf::synthetic(671, 9066, 20, 100_004, 3.5, &mut rng).unwrap();
    let batches: Vec<Vec<usize>> =
        (0..64).map(|t| sample(&mut minibatch_rng(1, t), m.value.len(), 10_000).into_vec()).collect();
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
    let samplers = [
        ("sgld-mirror", Method::Mirror, Transform::Softplus),
        ("sgrld", Method::Sgrld, Transform::Softplus),
        ("corv-exp", Method::Corv, Transform::Exp),
        ("corv-softplus", Method::Corv, Transform::Softplus),
        ("corv-icll", Method::Corv, Transform::Icll),
    ];
    for (name, method, half) in samplers {
        let s = BoundedSgld::new(method, StepSchedule::Constant(1e-5))
            .unwrap()
            .with_transforms(Transform::Sigmoid, half)
            .with_batch(Some(10_000));
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
