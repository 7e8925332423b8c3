//! Criterion benchmark of the GF-SVGD direction (issue 16): n = 500 particles in d = 100 (the
//! 10 × 10 Ising grid of paper 004 Fig. 3, σ_p = 0.1), at 1 and 2 threads. One iteration is
//! O(n²d) ≈ 25 M kernel terms: squared distances of the upper triangle, the median bandwidth,
//! the weights and φ. `cargo bench -p dlp-samplers --bench gf_svgd`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dlp_core::DomainKind;
use dlp_models::IsingModel;
use dlp_samplers::gf_svgd::{GfSvgd, GfSvgdConfig, normal_particles};
use std::time::Duration;

fn direction(c: &mut Criterion) {
    let (n, l) = (500, 10);
    let model = IsingModel::lattice(&[l, l], false, 0.1, vec![0.0; l * l], DomainKind::Spin).unwrap();
    let mut g = c.benchmark_group("gf_svgd_direction_n500_d100");
    g.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut s = GfSvgd::new(&GfSvgdConfig::default(), &model, normal_particles(n, l * l, 0.0, 7)).unwrap();
        g.bench_function(BenchmarkId::new("threads", threads), |b| {
            b.iter(|| pool.install(|| s.compute_direction(&model).unwrap()))
        });
    }
    g.finish();
}

criterion_group!(benches, direction);
criterion_main!(benches);
