//! Restricted Boltzmann machine, visible units marginalised over hidden units in {0,1}:
//! ℓ(x) = Σ_i b_i u_i + Σ_k softplus(c_k + Σ_i W_ik u_i) (`gof.md` §2; paper §3.3), with
//! u the visible value (0/1 for binary, ±1 for spin) and W stored d × M row-major.
//!
//! Gradient with respect to the bit: ∂ℓ/∂x_i = s (b_i + Σ_k W_ik σ(a_k)), a = c + Wᵀu, s = du/dx
//! (1 for binary, 2 for spin). Batches use matrix products (ndarray → matrixmultiply); every
//! row is computed by the same kernel whatever the batch size, so rows do not interact.

use crate::error::{ModelError, check_finite};
use dlp_core::math::{sigmoid, softplus};
use dlp_core::{DomainKind, Space, Target};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};
use rand::{Rng, RngExt};
use std::any::Any;

/// Bernoulli RBM (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct Rbm {
    space: Space,
    m: usize,
    w: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Rbm {
    /// Builds an RBM with visible `domain` (binary or spin), W (d × M row-major), b (d), c (M).
    pub fn new(
        domain: DomainKind,
        d: usize,
        m: usize,
        w: Vec<f64>,
        b: Vec<f64>,
        c: Vec<f64>,
    ) -> Result<Self, ModelError> {
        let space = match domain {
            DomainKind::Binary => Space::binary(d),
            DomainKind::Spin => Space::spin(d),
            other => {
                return Err(ModelError::param(format!(
                    "domain {other:?} is not supported by the rbm model (use binary or spin)"
                )));
            }
        };
        if d == 0 {
            return Err(ModelError::param("d must be at least 1"));
        }
        if m == 0 {
            return Err(ModelError::param("W must have at least one column (M >= 1)"));
        }
        if w.len() != d * m {
            return Err(ModelError::param(format!("W must be d × M = {d} × {m}, found {} entries", w.len())));
        }
        if b.len() != d {
            return Err(ModelError::param(format!("b has length {} but d = {d}", b.len())));
        }
        if c.len() != m {
            return Err(ModelError::param(format!("c has length {} but W has M = {m} columns", c.len())));
        }
        check_finite("W", &w)?;
        check_finite("b", &b)?;
        check_finite("c", &c)?;
        Ok(Rbm { space, m, w, b, c })
    }

    /// Number of visible units.
    pub fn d(&self) -> usize {
        self.space.d
    }

    /// Number of hidden units M.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Weights W, row-major d × M (`w()[i * m + k]` = W_ik).
    pub fn w(&self) -> &[f64] {
        &self.w
    }

    /// Visible biases b (length d).
    pub fn b(&self) -> &[f64] {
        &self.b
    }

    /// Hidden biases c (length M).
    pub fn c(&self) -> &[f64] {
        &self.c
    }

    /// True when the visible units are spins.
    pub fn is_spin(&self) -> bool {
        self.space.kind == DomainKind::Spin
    }

    /// du/dx: 2 for spin, 1 for binary.
    pub fn value_scale(&self) -> f64 {
        if self.is_spin() { 2.0 } else { 1.0 }
    }

    #[inline]
    fn value_of(&self, c: u32) -> f64 {
        if self.is_spin() { 2.0 * c as f64 - 1.0 } else { c as f64 }
    }

    /// a_k = c_k + Σ_i W_ik u_i for the visible bits `x_bits` (length d), into `out` (length M).
    /// P(h_k = 1 | x) = σ(a_k).
    pub fn hidden_preactivation(&self, x_bits: &[u32], out: &mut [f64]) {
        let m = self.m;
        out.copy_from_slice(&self.c);
        for (i, &xi) in x_bits.iter().enumerate() {
            let u = self.value_of(xi);
            if u == 0.0 {
                continue;
            }
            for (o, w) in out.iter_mut().zip(&self.w[i * m..(i + 1) * m]) {
                *o += u * w;
            }
        }
    }

    /// Logit of P(bit_i = 1 | h) for every visible unit, into `out` (length d):
    /// s·(b_i + Σ_k W_ik h_k) with s = 1 for binary and 2 for spin (P(s_i = +1 | h) = σ(2 a_i)).
    pub fn visible_logits(&self, h: &[u32], out: &mut [f64]) {
        let m = self.m;
        let scale = self.value_scale();
        for (i, o) in out.iter_mut().enumerate() {
            let row = &self.w[i * m..(i + 1) * m];
            let mut a = self.b[i];
            for (&hk, &w) in h.iter().zip(row) {
                if hk != 0 {
                    a += w;
                }
            }
            *o = scale * a;
        }
    }

    /// Draws h ~ p(h | x) (one uniform per hidden unit, in order k = 0..M) into `h` (length M).
    pub fn sample_hidden<R: Rng + ?Sized>(&self, x_bits: &[u32], rng: &mut R, h: &mut [u32]) {
        let mut a = vec![0.0; self.m];
        self.hidden_preactivation(x_bits, &mut a);
        for (hk, &ak) in h.iter_mut().zip(&a) {
            *hk = u32::from(rng.random::<f64>() < sigmoid(ak));
        }
    }

    /// Draws visible bits x ~ p(x | h) (one uniform per visible unit, in order) into `x`.
    pub fn sample_visible<R: Rng + ?Sized>(&self, h: &[u32], rng: &mut R, x: &mut [u32]) {
        let mut l = vec![0.0; self.d()];
        self.visible_logits(h, &mut l);
        for (xi, &li) in x.iter_mut().zip(&l) {
            *xi = u32::from(rng.random::<f64>() < sigmoid(li));
        }
    }

    /// Visible values U (n × d) of a batch of bit vectors.
    fn values(&self, xs: &[u32]) -> Array2<f64> {
        let d = self.d();
        let n = xs.len() / d;
        Array2::from_shape_fn((n, d), |(r, i)| self.value_of(xs[r * d + i]))
    }

    /// A = U W + c (n × M).
    fn preactivations(&self, u: &Array2<f64>) -> Array2<f64> {
        let w = ArrayView2::from_shape((self.d(), self.m), &self.w).expect("W has shape d × M");
        let mut a = Array2::from_shape_fn((u.nrows(), self.m), |(_, k)| self.c[k]);
        general_mat_mul(1.0, u, &w, 1.0, &mut a);
        a
    }

    fn log_densities_from(&self, u: &Array2<f64>, a: &Array2<f64>, out: &mut [f64]) {
        for ((urow, arow), o) in u.rows().into_iter().zip(a.rows()).zip(out.iter_mut()) {
            let lin: f64 = urow.iter().zip(&self.b).map(|(u, b)| u * b).sum();
            *o = lin + arow.iter().map(|&t| softplus(t)).sum::<f64>();
        }
    }
}

impl Target for Rbm {
    fn space(&self) -> &Space {
        &self.space
    }

    fn log_density_batch(&self, xs: &[u32], out: &mut [f64]) {
        let u = self.values(xs);
        let a = self.preactivations(&u);
        self.log_densities_from(&u, &a, out);
    }

    fn log_density_grad_batch(&self, xs: &[u32], log_density: &mut [f64], grad: &mut [f64]) {
        let d = self.d();
        let u = self.values(xs);
        let a = self.preactivations(&u);
        self.log_densities_from(&u, &a, log_density);
        let s = a.mapv(sigmoid);
        let w = ArrayView2::from_shape((d, self.m), &self.w).expect("W has shape d × M");
        let mut g = Array2::<f64>::zeros((u.nrows(), d));
        general_mat_mul(1.0, &s, &w.t(), 0.0, &mut g);
        let scale = self.value_scale();
        for (grow, out) in g.rows().into_iter().zip(grad.chunks_exact_mut(d)) {
            for ((o, gi), bi) in out.iter_mut().zip(grow).zip(&self.b) {
                *o = scale * (bi + gi);
            }
        }
    }

    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) {
        // O(M): only the i-th row of W moves the preactivations.
        let m = self.m;
        let mut a = vec![0.0; m];
        self.hidden_preactivation(x, &mut a);
        let du = self.value_of(1 - x[i]) - self.value_of(x[i]);
        let row = &self.w[i * m..(i + 1) * m];
        let mut delta = du * self.b[i];
        for (&ak, &wk) in a.iter().zip(row) {
            delta += softplus(ak + du * wk) - softplus(ak);
        }
        out[x[i] as usize] = 0.0;
        out[1 - x[i] as usize] = delta;
    }

    fn flip_deltas(&self, x: &[u32], out: &mut [f64]) {
        let m = self.m;
        let mut a = vec![0.0; m];
        self.hidden_preactivation(x, &mut a);
        for (i, o) in out.iter_mut().enumerate() {
            let du = self.value_of(1 - x[i]) - self.value_of(x[i]);
            let row = &self.w[i * m..(i + 1) * m];
            let mut delta = du * self.b[i];
            for (&ak, &wk) in a.iter().zip(row) {
                delta += softplus(ak + du * wk) - softplus(ak);
            }
            *o = delta;
        }
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}
