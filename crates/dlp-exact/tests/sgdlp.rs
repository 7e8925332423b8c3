//! Stochastic-gradient DULA (spec §1.10, Thm 6.1): with the full batch it is DULA; with
//! minibatches its kernel is the DULA kernel under ĝ averaged over all C(N, B) minibatches
//! (reference transcription), ĝ is unbiased (exact expectation over every minibatch), and
//! one-step rows of `step` match the exact rows (G-test, family-wise rate ≤ 1e−3).

mod common;

use common::{chi2_critical, g_test};
use dlp_core::{DataTarget, Sampler, Space, StepInfo, Target, chain_rngs};
use dlp_exact::matrix::{kernel_matrix, max_abs_diff};
use dlp_exact::reference;
use dlp_samplers::{SamplerParams, build_sampler};

/// f(x) = Σ_n ℓ_n(x) + bᵀx on {0,1}^3 with ℓ_n(x) = a_nᵀx + c_n x_0 x_1 (N = 4 items).
struct Data {
    space: Space,
    a: [[f64; 3]; 4],
    c: [f64; 4],
    b: [f64; 3],
}

impl Data {
    fn new() -> Self {
        Data {
            space: Space::binary(3),
            a: [[0.5, -0.2, 0.1], [-0.4, 0.3, 0.6], [0.2, 0.2, -0.7], [0.9, -0.5, 0.0]],
            c: [0.3, -0.6, 0.8, 0.1],
            b: [0.1, 0.0, -0.2],
        }
    }
    fn item_grad(&self, n: usize, x: &[u32], g: &mut [f64]) {
        let v: Vec<f64> = x.iter().map(|&c| c as f64).collect();
        g[0] += self.a[n][0] + self.c[n] * v[1];
        g[1] += self.a[n][1] + self.c[n] * v[0];
        g[2] += self.a[n][2];
    }
}

impl Target for Data {
    fn space(&self) -> &Space {
        &self.space
    }
    fn log_density_batch(&self, xs: &[u32], out: &mut [f64]) {
        for (x, o) in xs.chunks(3).zip(out) {
            let v: Vec<f64> = x.iter().map(|&c| c as f64).collect();
            *o = (0..3).map(|i| self.b[i] * v[i]).sum::<f64>()
                + (0..4)
                    .map(|n| (0..3).map(|i| self.a[n][i] * v[i]).sum::<f64>() + self.c[n] * v[0] * v[1])
                    .sum::<f64>();
        }
    }
    fn log_density_grad_batch(&self, xs: &[u32], f: &mut [f64], grad: &mut [f64]) {
        self.log_density_batch(xs, f);
        for (x, g) in xs.chunks(3).zip(grad.chunks_mut(3)) {
            g.copy_from_slice(&self.b);
            for n in 0..4 {
                self.item_grad(n, x, g);
            }
        }
    }
    fn as_data_target(&self) -> Option<&dyn DataTarget> {
        Some(self)
    }
}

impl DataTarget for Data {
    fn n_data(&self) -> usize {
        4
    }
    fn grad_estimate(&self, x: &[u32], batch: &[usize], grad: &mut [f64]) {
        let mut sum = [0.0; 3];
        for &n in batch {
            self.item_grad(n, x, &mut sum);
        }
        let scale = 4.0 / batch.len() as f64;
        for i in 0..3 {
            grad[i] = self.b[i] + scale * sum[i];
        }
    }
}

fn sg(batch: usize) -> Box<dyn Sampler> {
    build_sampler("sg-dula", &SamplerParams { step_size: Some(0.5), preconditioner: None, batch_size: Some(batch) })
        .unwrap()
}

#[test]
fn minibatch_gradient_is_unbiased_over_all_minibatches() {
    let t = Data::new();
    for b in 1..=4usize {
        for s in 0..8u64 {
            let mut x = [0u32; 3];
            t.space.state_of_index(s, &mut x);
            let mut full = [0.0; 3];
            t.log_density_grad(&x, &mut full);
            let mut mean = [0.0; 3];
            let mut count = 0.0;
            for mask in 0u32..16 {
                if mask.count_ones() as usize != b {
                    continue;
                }
                let batch: Vec<usize> = (0..4).filter(|n| mask >> n & 1 == 1).collect();
                let mut g = [0.0; 3];
                t.grad_estimate(&x, &batch, &mut g);
                (0..3).for_each(|i| mean[i] += g[i]);
                count += 1.0;
            }
            for i in 0..3 {
                assert!((mean[i] / count - full[i]).abs() < 1e-14, "B = {b}, state {s}, coordinate {i}");
            }
        }
    }
}

#[test]
fn full_batch_is_dula_and_minibatch_kernels_match_the_reference() {
    let t = Data::new();
    let dula =
        build_sampler("dula", &SamplerParams { step_size: Some(0.5), preconditioner: None, batch_size: None }).unwrap();
    let full = kernel_matrix(&t, sg(4).as_ref(), 0).unwrap();
    assert!(max_abs_diff(&full, &kernel_matrix(&t, dula.as_ref(), 0).unwrap()) < 1e-12);
    for b in 1..=4 {
        let p = kernel_matrix(&t, sg(b).as_ref(), 0).unwrap();
        let r = reference::sg_dula(&t, 0.5, b).unwrap();
        assert!(max_abs_diff(&p, &r) < 1e-12, "B = {b}");
        if b < 4 {
            // Minibatch noise changes the kernel (otherwise the comparison above is vacuous).
            assert!(max_abs_diff(&p, &full) > 1e-3, "B = {b}");
        }
    }
}

/// 4,000 chains per state and batch size; Bonferroni over 8 states × 2 batch sizes.
#[test]
fn one_step_rows_of_step_match_exact_rows() {
    const N: usize = 4000;
    let t = Data::new();
    let mut results = Vec::new();
    for b in [1usize, 2] {
        let s = sg(b);
        let p = kernel_matrix(&t, s.as_ref(), 0).unwrap();
        for st in 0..8 {
            let mut x = [0u32; 3];
            t.space.state_of_index(st as u64, &mut x);
            let x0: Vec<u32> = x.iter().copied().cycle().take(3 * N).collect();
            let mut chains = s.start(&t, &x0).unwrap();
            let mut rngs = chain_rngs(300 + st as u64, 0, N);
            let mut info = vec![StepInfo::default(); N];
            chains.step(&mut rngs, &mut info);
            let mut counts = vec![0u64; 8];
            for y in chains.positions().chunks(3) {
                counts[t.space.index_of_state(y) as usize] += 1;
            }
            let row: Vec<f64> = (0..8).map(|j| p[(st, j)]).collect();
            results.push((b, st, g_test(&counts, &row)));
        }
    }
    let alpha = 1e-3 / results.len() as f64;
    for (b, st, (g, df)) in results {
        assert!(g <= chi2_critical(df, alpha), "B = {b}, state {st}: G = {g:.2} on {df} df");
    }
}
