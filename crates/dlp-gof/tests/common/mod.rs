//! Test targets written straight from spec §2 on user-facing values, and a naive Stein
//! kernel that materialises shifted states (an independent transcription of spec §3.2).
#![allow(dead_code)]

use dlp_core::{RowTarget, Space, Target, TargetExt};

/// A log-density on user-facing values.
pub type LogDensity = Box<dyn Fn(&[f64]) -> f64 + Send + Sync>;

/// π(x) ∝ exp(f(values of x)) for any closure f; gradients are not used by the GOF tests.
pub struct FnTarget {
    pub space: Space,
    pub f: LogDensity,
}

impl RowTarget for FnTarget {
    fn row_space(&self) -> &Space {
        &self.space
    }
    fn row_log_density(&self, row: &[u32]) -> f64 {
        let v: Vec<f64> = row.iter().map(|&c| self.space.values[c as usize] as f64).collect();
        (self.f)(&v)
    }
    fn row_log_density_grad(&self, _: &[u32], _: &mut [f64]) -> f64 {
        unimplemented!("GOF tests never ask for gradients")
    }
}

/// Ising ℓ = Σ b_i x_i + Σ_{i<j} J_ij x_i x_j on `space` values.
pub fn ising(space: Space, j: Vec<f64>, b: Vec<f64>) -> FnTarget {
    let d = space.d;
    FnTarget {
        space,
        f: Box::new(move |x| {
            let mut f = 0.0;
            for i in 0..d {
                f += b[i] * x[i];
                for l in i + 1..d {
                    f += j[i * d + l] * x[i] * x[l];
                }
            }
            f
        }),
    }
}

/// Potts ℓ = Σ h_i[c_i] + Σ_{i<j} J_ij [c_i = c_j] (values 0..K−1).
pub fn potts(d: usize, k: usize, j: Vec<f64>, h: Vec<f64>) -> FnTarget {
    FnTarget {
        space: Space::categorical(d, k),
        f: Box::new(move |x| {
            let mut f = 0.0;
            for i in 0..d {
                f += h[i * k + x[i] as usize];
                for l in i + 1..d {
                    if x[i] == x[l] {
                        f += j[i * d + l];
                    }
                }
            }
            f
        }),
    }
}

/// RBM marginal ℓ = Σ b_i x_i + Σ_k softplus(c_k + Σ_i W_ik x_i), W d × M row-major.
pub fn rbm(space: Space, w: Vec<f64>, b: Vec<f64>, c: Vec<f64>) -> FnTarget {
    let d = space.d;
    FnTarget {
        space,
        f: Box::new(move |x| {
            let m = c.len();
            let mut f: f64 = (0..d).map(|i| b[i] * x[i]).sum();
            for k in 0..m {
                let t = c[k] + (0..d).map(|i| w[i * m + k] * x[i]).sum::<f64>();
                f += (1.0 + t.exp()).ln();
            }
            f
        }),
    }
}

/// Table target: ℓ given for every state index.
pub fn table(space: Space, logp: Vec<f64>) -> FnTarget {
    let s2 = space.clone();
    FnTarget {
        space,
        f: Box::new(move |x| {
            let idx: Vec<u32> = x.iter().map(|&v| s2.index_of_value(v as i64).unwrap()).collect();
            logp[s2.index_of_state(&idx) as usize]
        }),
    }
}

/// Spec §3.2 literally: scores from ℓ of shifted states, kernel evaluated on shifted copies.
/// `wrong_shift` uses fwd where bwd belongs (bug §7.1).
pub fn naive_stein(t: &dyn Target, lambda: f64, x: &[u32], y: &[u32], wrong_shift: bool) -> f64 {
    let sp = t.space();
    let (d, k) = (sp.d, sp.k() as u32);
    let kern = |a: &[u32], b: &[u32]| {
        let h = a.iter().zip(b).filter(|(p, q)| p != q).count() as f64;
        (-lambda * h / d as f64).exp()
    };
    let shift = |z: &[u32], i: usize, up: bool| {
        let mut w = z.to_vec();
        w[i] = if up { (w[i] + 1) % k } else { (w[i] + k - 1) % k };
        w
    };
    let score =
        |z: &[u32], i: usize| 1.0 - (t.log_density(&shift(z, i, true)).unwrap() - t.log_density(z).unwrap()).exp();
    let kxy = kern(x, y);
    let mut total = 0.0;
    for i in 0..d {
        let (sx, sy) = (score(x, i), score(y, i));
        let bx = shift(x, i, wrong_shift);
        let by = shift(y, i, wrong_shift);
        total += kxy * sx * sy - sx * (kxy - kern(x, &by)) - sy * (kxy - kern(&bx, y))
            + (kxy - kern(&bx, y) - kern(x, &by) + kern(&bx, &by));
    }
    total
}

/// Indices of `rows` (given as values) in `space`.
pub fn to_indices(space: &Space, rows: &[&[i64]]) -> Vec<u32> {
    rows.iter().flat_map(|r| r.iter().map(|&v| space.index_of_value(v).unwrap())).collect()
}

/// Relative closeness.
#[track_caller]
pub fn close(got: f64, want: f64, rel: f64, what: &str) {
    let tol = rel * want.abs().max(1e-300);
    assert!((got - want).abs() <= tol, "{what}: got {got:.15e}, want {want:.15e}");
}

/// A tiny deterministic generator for test parameters (splitmix64), so the tests do not
/// depend on the library's own streams.
pub struct Mix(pub u64);
impl Mix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    pub fn unif(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn normal(&mut self) -> f64 {
        rand_distr::Distribution::<f64>::sample(&rand_distr::StandardNormal, self)
    }
}

/// `Mix` as a `rand` generator, so that `rand_distr` draws its normals.
impl rand::TryRng for Mix {
    type Error = std::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok((self.next() >> 32) as u32)
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(self.next())
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        for chunk in dst.chunks_mut(8) {
            chunk.copy_from_slice(&self.next().to_le_bytes()[..chunk.len()]);
        }
        Ok(())
    }
}
