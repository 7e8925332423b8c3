//! The target trait: an unnormalised log-density and its gradient, for a batch of states.

use crate::space::Space;
use std::any::Any;

/// A distribution π(x) ∝ exp(f(x)) on a finite [`Space`], with f extended to a
/// differentiable function of the sampler coordinates (see [`Space::coordinate`]).
///
/// Batch methods take `n` states as one row-major `n × d` slice of indices so that models
/// can use matrix products. Implementations must compute each row independently of the
/// others (no reductions across rows): this is what makes results identical for any
/// number of threads. Parameters are checked when a model is built, so these methods
/// cannot fail; a non-finite log-density is treated by samplers as a rejected proposal.
pub trait Target: Send + Sync {
    /// The state space.
    fn space(&self) -> &Space;

    /// f(x) for every row of `xs` (`xs.len() == out.len() * d`).
    fn log_density_batch(&self, xs: &[u32], out: &mut [f64]);

    /// f(x) and ∇f(x) for every row; `grad` is `n × space().grad_len()`, row-major.
    /// Binary and spin models differentiate with respect to the bit x ∈ {0,1}; categorical
    /// models with respect to the one-hot matrix (d × K); ordinal ones with respect to the
    /// integer value.
    fn log_density_grad_batch(&self, xs: &[u32], log_density: &mut [f64], grad: &mut [f64]);

    /// f of one state.
    fn log_density(&self, x: &[u32]) -> f64 {
        let mut out = [0.0];
        self.log_density_batch(x, &mut out);
        out[0]
    }

    /// f and ∇f of one state; returns f and writes the gradient to `grad`.
    fn log_density_grad(&self, x: &[u32], grad: &mut [f64]) -> f64 {
        let mut out = [0.0];
        self.log_density_grad_batch(x, &mut out, grad);
        out[0]
    }

    /// For coordinate `i` and every index v < K: f(x with x_i = v) − f(x), into `out`
    /// (length K; entry x_i is 0). Models override this when a conditional is cheap
    /// (Ising, Potts, RBM); the default evaluates K states.
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) {
        let k = self.space().k();
        let d = self.space().d;
        let mut ys = Vec::with_capacity(k * d);
        for v in 0..k as u32 {
            ys.extend_from_slice(x);
            ys[v as usize * d + i] = v;
        }
        let mut f = vec![0.0; k];
        self.log_density_batch(&ys, &mut f);
        let f0 = f[x[i] as usize];
        for (o, fv) in out.iter_mut().zip(&f) {
            *o = fv - f0;
        }
        out[x[i] as usize] = 0.0;
    }

    /// Binary spaces: f(x^{(i)}) − f(x) for flipping each coordinate i, into `out` (length d).
    /// The default calls [`Target::coordinate_deltas`] d times.
    fn flip_deltas(&self, x: &[u32], out: &mut [f64]) {
        let mut two = [0.0; 2];
        for (i, o) in out.iter_mut().enumerate() {
            self.coordinate_deltas(x, i, &mut two);
            *o = two[1 - x[i] as usize];
        }
    }

    /// Binary spaces: `Some(f(x^{(i)}) − f(x))` for flipping coordinate i, when the model
    /// computes one flip in O(degree) (lattice Ising). `None` (the default) tells callers such
    /// as exhaustive enumeration that whole-state evaluation is cheaper for this model.
    fn cheap_flip_delta(&self, _x: &[u32], _i: usize) -> Option<f64> {
        None
    }

    /// The target as a data-term model, for stochastic-gradient samplers.
    fn as_data_target(&self) -> Option<&dyn DataTarget> {
        None
    }

    /// The concrete model, for samplers with a specialised fast path (e.g. a lattice Ising
    /// kernel). Fast paths must implement the same Markov kernel as the generic code.
    fn as_any(&self) -> Option<&dyn Any> {
        None
    }
}

/// A target whose log-density is a sum over data items plus a prior:
/// f(x) = Σ_{n<N} ℓ_n(x) + log p0(x). Used by stochastic-gradient DLP (paper §6).
pub trait DataTarget: Target {
    /// Number of data items N.
    fn n_data(&self) -> usize;

    /// Unbiased estimate of ∇f(x) from the items `batch` (indices in 0..N, drawn uniformly
    /// without replacement): (N/B) Σ_{n∈batch} ∇ℓ_n(x) + ∇log p0(x), into `grad`.
    fn grad_estimate(&self, x: &[u32], batch: &[usize], grad: &mut [f64]);
}
