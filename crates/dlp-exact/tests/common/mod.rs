//! Test targets written for these tests, independent of dlp-models.
#![allow(dead_code)]

use dlp_core::{Space, Target};

/// L×L periodic lattice Ising in the paper's convention (spec §3.2, §4.1):
/// f(s) = sᵀJs + b Σ s_i with J = σ·A, i.e. 2σ per undirected edge; the sampler coordinate
/// is the bit x = (s+1)/2 and ∂f/∂x_i = 4σ n_i + 2b (n_i = Σ_{j~i} s_j).
pub struct LatticeIsing {
    space: Space,
    l: usize,
    sigma: f64,
    bias: f64,
}

impl LatticeIsing {
    pub fn new(l: usize, sigma: f64, bias: f64) -> Self {
        LatticeIsing { space: Space::spin(l * l), l, sigma, bias }
    }

    fn neighbours(&self, i: usize) -> [usize; 4] {
        let l = self.l;
        let (r, c) = (i / l, i % l);
        [((r + 1) % l) * l + c, ((r + l - 1) % l) * l + c, r * l + (c + 1) % l, r * l + (c + l - 1) % l]
    }

    fn f(&self, x: &[u32]) -> f64 {
        let s = |i: usize| 2.0 * x[i] as f64 - 1.0;
        let mut f = 0.0;
        for i in 0..x.len() {
            // Right and down neighbours count each edge once; sᵀJs counts it twice.
            let [down, _, right, _] = self.neighbours(i);
            f += 2.0 * self.sigma * s(i) * (s(down) + s(right)) + self.bias * s(i);
        }
        f
    }
}

impl Target for LatticeIsing {
    fn space(&self) -> &Space {
        &self.space
    }
    fn log_density_batch(&self, xs: &[u32], out: &mut [f64]) {
        for (x, o) in xs.chunks(self.space.d).zip(out) {
            *o = self.f(x);
        }
    }
    fn log_density_grad_batch(&self, xs: &[u32], log_density: &mut [f64], grad: &mut [f64]) {
        let d = self.space.d;
        for ((x, o), g) in xs.chunks(d).zip(log_density).zip(grad.chunks_mut(d)) {
            *o = self.f(x);
            for (i, gi) in g.iter_mut().enumerate() {
                let n: f64 = self.neighbours(i).iter().map(|&j| 2.0 * x[j] as f64 - 1.0).sum();
                *gi = 4.0 * self.sigma * n + 2.0 * self.bias;
            }
        }
    }
}
