//! The RBM view and the one copy of the RBM arithmetic: pre-activations, f, ∇f, flip
//! differences and the two conditionals. The model's own `Target` impl
//! (`dlp_models::Rbm`), the DLP and GWG fast paths, single-site Gibbs on an RBM and
//! `block-gibbs` all call these methods, so they agree to the bit where they compute the same
//! quantity.
//!
//! ℓ(x) = b·u + Σ_k softplus(a_k), a = c + Wᵀu (hidden units in {0,1} marginalised), u the
//! visible value of the bit x (0/1 for binary, ±1 for spin), W stored d × M row-major.
//! ∂ℓ/∂x_i = s (b_i + Σ_k W_ik σ(a_k)) with s = du/dx (1 binary, 2 spin).
//!
//! Batches use matrix products (ndarray → matrixmultiply on the calling thread). matrixmultiply
//! computes every row with the same kernel whatever the number of rows, so a row's result
//! does not depend on the other rows of the batch (thread-count independence).

use crate::math::{sigmoid, softplus};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, LinalgScalar};

/// A Bernoulli RBM's parameters, borrowed from the model (see the module doc for ℓ).
#[derive(Clone, Copy, Debug)]
pub struct RbmView<'a> {
    /// True for spin visibles (u = 2x − 1), false for binary (u = x).
    pub spin: bool,
    /// Number of visible units d.
    pub d: usize,
    /// Number of hidden units M.
    pub m: usize,
    /// W, d × M row-major (`w[i * m + k]` = W_ik).
    pub w: &'a [f64],
    /// Visible biases b (length d).
    pub b: &'a [f64],
    /// Hidden biases c (length M).
    pub c: &'a [f64],
}

impl<'a> RbmView<'a> {
    /// The visible value u of bit `x` (0/1 for binary, −1/+1 for spin).
    #[inline]
    pub fn value(&self, x: u32) -> f64 {
        if self.spin { 2.0 * x as f64 - 1.0 } else { x as f64 }
    }

    /// du/dx: 2 for spin, 1 for binary.
    #[inline]
    pub fn value_scale(&self) -> f64 {
        if self.spin { 2.0 } else { 1.0 }
    }

    /// Row i of W (the weights of visible unit i, length M).
    #[inline]
    pub fn w_row(&self, i: usize) -> &'a [f64] {
        &self.w[i * self.m..(i + 1) * self.m]
    }

    /// a = c + Wᵀu of one state (bits `x`, length d) into `out` (length M), one row of W per
    /// visible unit with u ≠ 0: O(d·M), the exact value the incremental caches start from and
    /// refresh to. P(h_k = 1 | x) = σ(a_k).
    pub fn hidden_preactivation(&self, x: &[u32], out: &mut [f64]) {
        out.copy_from_slice(self.c);
        for (i, &xi) in x.iter().enumerate() {
            let u = self.value(xi);
            if u == 0.0 {
                continue;
            }
            for (o, w) in out.iter_mut().zip(self.w_row(i)) {
                *o += u * w;
            }
        }
    }

    /// a += du·W_i: the pre-activations after visible unit i moved by du (O(M)).
    #[inline]
    pub fn add_flip(&self, a: &mut [f64], i: usize, du: f64) {
        for (ak, &wk) in a.iter_mut().zip(self.w_row(i)) {
            *ak += du * wk;
        }
    }

    /// b·u of one state.
    #[inline]
    pub fn linear_term(&self, x: &[u32]) -> f64 {
        x.iter().zip(self.b).map(|(&xi, &bi)| self.value(xi) * bi).sum()
    }

    /// ℓ(x) = b·u + Σ_k softplus(a_k) from the bits `x` and their pre-activations `a`.
    pub fn log_density_from(&self, x: &[u32], a: &[f64]) -> f64 {
        self.linear_term(x) + a.iter().map(|&t| softplus(t)).sum::<f64>()
    }

    /// ℓ(x^{(i)}) − ℓ(x) for flipping bit i, from the pre-activations `a` of x: O(M) where a
    /// whole evaluation is O(d·M). du·b_i + Σ_k softplus(a_k + du·W_ik) − softplus(a_k).
    pub fn flip_delta(&self, a: &[f64], x: &[u32], i: usize) -> f64 {
        let du = self.value(1 - x[i]) - self.value(x[i]);
        let mut delta = du * self.b[i];
        for (&ak, &wk) in a.iter().zip(self.w_row(i)) {
            delta += softplus(ak + du * wk) - softplus(ak);
        }
        delta
    }

    /// Visible values U (n × d) of a batch of bit vectors.
    pub fn values(&self, xs: &[u32]) -> Array2<f64> {
        let d = self.d;
        Array2::from_shape_fn((xs.len() / d, d), |(r, i)| self.value(xs[r * d + i]))
    }

    /// A = U W + c (n × M) from visible values U: one matrix product.
    pub fn preactivations(&self, u: &Array2<f64>) -> Array2<f64> {
        let w = ArrayView2::from_shape((self.d, self.m), self.w).expect("W has shape d × M");
        let mut a = Array2::from_shape_fn((u.nrows(), self.m), |(_, k)| self.c[k]);
        general_mat_mul(1.0, u, &w, 1.0, &mut a);
        a
    }

    /// A = U W + c (n × M) of a batch of visible bit vectors.
    pub fn hidden_preactivations(&self, xs: &[u32]) -> Array2<f64> {
        self.preactivations(&self.values(xs))
    }

    /// ℓ of every row of `xs` into `out`.
    pub fn log_densities(&self, xs: &[u32], out: &mut [f64]) {
        let a = self.hidden_preactivations(xs);
        for ((x, ar), o) in xs.chunks_exact(self.d).zip(a.rows()).zip(out.iter_mut()) {
            *o = self.log_density_from(x, ar.as_slice().expect("rows of a standard-layout array"));
        }
    }

    /// ℓ and ∇ℓ (with respect to the bits) of every row of `xs`: the products U W and σ(A) Wᵀ.
    pub fn log_densities_and_grads(&self, xs: &[u32], log_density: &mut [f64], grad: &mut [f64]) {
        let n = log_density.len();
        let a = self.hidden_preactivations(xs);
        for ((x, ar), o) in xs.chunks_exact(self.d).zip(a.rows()).zip(log_density.iter_mut()) {
            *o = self.log_density_from(x, ar.as_slice().expect("rows of a standard-layout array"));
        }
        let s = a.mapv(sigmoid);
        self.hidden_times_wt(n, s.as_slice().expect("standard layout"), self.w, grad);
        self.finish_grads(&mut grad[..n * self.d]);
    }

    /// ∇ℓ = s·(b + σ(A) Wᵀ) from rows holding the product σ(A) Wᵀ, in place.
    #[inline]
    pub fn finish_grads(&self, rows: &mut [f64]) {
        let scale = self.value_scale();
        for row in rows.chunks_exact_mut(self.d) {
            for (o, &bi) in row.iter_mut().zip(self.b) {
                *o = scale * (bi + *o);
            }
        }
    }

    /// out[r, i] = Σ_k s[r, k]·W[i, k] for rows r < `rows` (s: rows × M, W: d × M as `w`,
    /// out: rows × d, all row-major): σ(A) Wᵀ, in f64 or, with an f32 copy of W, in f32.
    /// ndarray → matrixmultiply on the calling thread, every row computed by the same kernel
    /// for any number of rows (the `gemm` crate is faster but its rows depend on the number
    /// of rows for small shapes, which would break thread-count independence).
    pub fn hidden_times_wt<T: LinalgScalar>(&self, rows: usize, s: &[T], w: &[T], out: &mut [T]) {
        let (d, m) = (self.d, self.m);
        let w = ArrayView2::from_shape((d, m), w).expect("W is d × M");
        let sv = ArrayView2::from_shape((rows, m), &s[..rows * m]).expect("rows × M");
        let mut g = ArrayViewMut2::from_shape((rows, d), &mut out[..rows * d]).expect("rows × d");
        general_mat_mul(T::one(), &sv, &w.t(), T::zero(), &mut g);
    }

    /// Logits of P(bit_i = 1 | h) for one hidden vector `h` (0/1 entries, length M) into `out`
    /// (length d): s·(b_i + Σ_k W_ik h_k), s = 1 binary, 2 spin (P(u_i = +1 | h) = σ(2a_i)).
    pub fn visible_logits(&self, h: &[u32], out: &mut [f64]) {
        let scale = self.value_scale();
        for (i, o) in out.iter_mut().enumerate() {
            let mut a = self.b[i];
            for (&hk, &w) in h.iter().zip(self.w_row(i)) {
                if hk != 0 {
                    a += w;
                }
            }
            *o = scale * a;
        }
    }

    /// [`RbmView::visible_logits`] of a batch of hidden vectors (n × M, entries 0/1): one
    /// matrix product b + H Wᵀ, doubled for spin visibles.
    pub fn visible_logits_batch(&self, hs: &Array2<f64>) -> Array2<f64> {
        let w = ArrayView2::from_shape((self.d, self.m), self.w).expect("W is d × M");
        let mut l = Array2::from_shape_fn((hs.nrows(), self.d), |(_, i)| self.b[i]);
        general_mat_mul(1.0, hs, &w.t(), 1.0, &mut l);
        if self.spin {
            l.mapv_inplace(|v| 2.0 * v);
        }
        l
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradient_product_rows_do_not_depend_on_the_other_rows() {
        // Thread-count independence needs each chain's gradient to be the same bits whatever
        // task it is computed in: every block of consecutive rows (at any offset, next to any
        // other rows) must equal the same rows of the full product, in f64 and f32, for small
        // and RBM-sized shapes.
        for (d, m, n) in [(3, 2, 9), (20, 9, 13), (37, 23, 11), (784, 500, 7)] {
            let mut st = (d * 31 + m) as u64;
            let mut next = || {
                st = st.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (st >> 11) as f64 / (1u64 << 53) as f64 - 0.5
            };
            let w: Vec<f64> = (0..d * m).map(|_| next()).collect();
            let sv: Vec<f64> = (0..n * m).map(|_| next()).collect();
            let (w32, s32): (Vec<f32>, Vec<f32>) =
                (w.iter().map(|&v| v as f32).collect(), sv.iter().map(|&v| v as f32).collect());
            let v = RbmView { spin: false, d, m, w: &w, b: &[], c: &[] };
            let mut full = vec![0.0; n * d];
            v.hidden_times_wt(n, &sv, &w, &mut full);
            let mut full32 = vec![0.0f32; n * d];
            v.hidden_times_wt(n, &s32, &w32, &mut full32);
            for len in 1..=n {
                for r0 in 0..=n - len {
                    let mut part = vec![0.0; len * d];
                    v.hidden_times_wt(len, &sv[r0 * m..], &w, &mut part);
                    assert!(part[..] == full[r0 * d..(r0 + len) * d], "f64 d={d} m={m}: rows {r0}..+{len}");
                    let mut part32 = vec![0.0f32; len * d];
                    v.hidden_times_wt(len, &s32[r0 * m..], &w32, &mut part32);
                    assert!(part32[..] == full32[r0 * d..(r0 + len) * d], "f32 d={d} m={m}: rows {r0}..+{len}");
                }
            }
            // And the product is the product (not just self-consistent).
            let (i, r) = (d - 1, n - 1);
            let want: f64 = (0..m).map(|k| sv[r * m + k] * w[i * m + k]).sum();
            assert!((full[r * d + i] - want).abs() < 1e-12 * m as f64);
        }
    }
}
