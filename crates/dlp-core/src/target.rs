//! The target trait: an unnormalised log-density and its gradient, for a batch of states,
//! its conveniences ([`TargetExt`]) and the row-at-a-time form of CPU models ([`RowTarget`]).

use crate::capability::{Capabilities, Conditionals};
pub use crate::error::EvalError;
use crate::space::Space;
use serde::{Deserialize, Serialize};

/// A distribution π(x) ∝ exp(f(x)) on a finite [`Space`], with f extended to a
/// differentiable function of the sampler coordinates (see [`Space::coordinate`]).
///
/// A target is its space and one fallible, batched, minibatch-aware evaluation; everything
/// else it offers (data terms, cheap conditionals, parameter views) is a capability
/// ([`Target::capabilities`]). Callers use the conveniences of [`TargetExt`] (f of one state,
/// coordinate differences, ...), implemented once for every target on top of these three
/// methods. A CPU model that computes one row at a time implements [`RowTarget`] instead and
/// gets this trait from the blanket implementation.
///
/// Batches are `n` states as one row-major `n × d` slice of indices so that models can use
/// matrix products. Implementations must compute each row independently of the others (no
/// reductions across rows): this is what makes results identical for any number of threads.
/// A non-finite log-density is treated by samplers as a rejected proposal.
pub trait Target: Send + Sync {
    /// The state space.
    fn space(&self) -> &Space;

    /// f̂ of every row of `xs` into `log_density` (`xs.len() == log_density.len() * d`), and
    /// ∇f̂ into `grad` when given (`n × space().grad_len()`, row-major). Binary and spin models
    /// differentiate with respect to the bit x ∈ {0,1}; categorical models with respect to the
    /// one-hot matrix (d × K); ordinal ones with respect to the integer value.
    ///
    /// With [`Batch::Full`] f̂ = f and ∇f̂ = ∇f. With [`Batch::Items`] a data model
    /// ([`Capabilities::n_data`]) returns its minibatch estimates under its own
    /// [`BatchScaling`]; models without data terms return [`EvalError::NoData`]. CPU models
    /// never fail on the full data (parameters are checked when a model is built); a
    /// device-backed target (dlp-tensor) turns out-of-memory or a lost device into an `Err`,
    /// which stops the run with one line instead of a panic.
    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError>;

    /// What the model offers beyond f and ∇f ([`crate::capability`]: data terms, conditionals,
    /// parameter views for the fast paths and model-specific samplers), looked up by samplers
    /// at `start`; samplers never see concrete model types. The default offers nothing, so
    /// every sampler takes its generic path. A fast path must implement the same Markov
    /// kernel as the generic code.
    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::default()
    }
}

/// The conveniences every caller uses, implemented once for every [`Target`] on top of
/// [`Target::evaluate`] and [`Target::capabilities`]. Evaluations are fallible (a device
/// target may fail): samplers pass the error on with `?`, tests unwrap it.
pub trait TargetExt: Target {
    /// f(x) for every row of `xs` (`xs.len() == out.len() * d`), on the full data.
    fn log_density_batch(&self, xs: &[u32], out: &mut [f64]) -> Result<(), EvalError> {
        self.evaluate(xs, Batch::Full, out, None)
    }

    /// f(x) and ∇f(x) for every row; `grad` is `n × space().grad_len()`, row-major.
    fn log_density_grad_batch(&self, xs: &[u32], log_density: &mut [f64], grad: &mut [f64]) -> Result<(), EvalError> {
        self.evaluate(xs, Batch::Full, log_density, Some(grad))
    }

    /// f of one state.
    fn log_density(&self, x: &[u32]) -> Result<f64, EvalError> {
        let mut out = [0.0];
        self.evaluate(x, Batch::Full, &mut out, None)?;
        Ok(out[0])
    }

    /// f and ∇f of one state; returns f and writes the gradient to `grad`.
    fn log_density_grad(&self, x: &[u32], grad: &mut [f64]) -> Result<f64, EvalError> {
        let mut out = [0.0];
        self.evaluate(x, Batch::Full, &mut out, Some(grad))?;
        Ok(out[0])
    }

    /// For coordinate `i` and every index v < K: f(x with x_i = v) − f(x), into `out`
    /// (length K; entry x_i is 0): the model's [`Conditionals`] when it offers them, else K
    /// states evaluated in one batch ([`evaluated_coordinate_deltas`]).
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), EvalError> {
        match self.capabilities().conditionals {
            Some(c) => c.coordinate_deltas(x, i, out),
            None => evaluated_coordinate_deltas(self, x, i, out),
        }
    }

    /// Binary spaces: f(x^{(i)}) − f(x) for flipping each coordinate i, into `out` (length d):
    /// the model's [`Conditionals`], else [`evaluated_coordinate_deltas`] d times.
    fn flip_deltas(&self, x: &[u32], out: &mut [f64]) -> Result<(), EvalError> {
        match self.capabilities().conditionals {
            Some(c) => c.flip_deltas(x, out),
            None => evaluated_flip_deltas(self, x, out),
        }
    }

    /// Binary spaces: `Some(f(x^{(i)}) − f(x))` when the model computes one flip in O(degree)
    /// ([`Conditionals::cheap_flip_delta`]); `None` otherwise.
    fn cheap_flip_delta(&self, x: &[u32], i: usize) -> Option<f64> {
        self.capabilities().conditionals?.cheap_flip_delta(x, i)
    }

    /// N of a data model ([`Capabilities::n_data`]), `None` for models without data terms.
    fn n_data(&self) -> Option<usize> {
        self.capabilities().n_data
    }
}

impl<T: Target + ?Sized> TargetExt for T {}

/// f(x with x_i = v) − f(x) for every v < K, from one batched evaluation of the K states
/// (what [`TargetExt::coordinate_deltas`] does for a model without [`Conditionals`]).
pub fn evaluated_coordinate_deltas<T: Target + ?Sized>(
    target: &T,
    x: &[u32],
    i: usize,
    out: &mut [f64],
) -> Result<(), EvalError> {
    let k = target.space().k();
    let d = target.space().d;
    let mut ys = Vec::with_capacity(k * d);
    for v in 0..k as u32 {
        ys.extend_from_slice(x);
        ys[v as usize * d + i] = v;
    }
    let mut f = vec![0.0; k];
    target.evaluate(&ys, Batch::Full, &mut f, None)?;
    let f0 = f[x[i] as usize];
    for (o, fv) in out.iter_mut().zip(&f) {
        *o = fv - f0;
    }
    out[x[i] as usize] = 0.0;
    Ok(())
}

/// Binary spaces: every flip difference by [`evaluated_coordinate_deltas`], one coordinate at
/// a time (what [`TargetExt::flip_deltas`] does for a model without [`Conditionals`]).
pub fn evaluated_flip_deltas<T: Target + ?Sized>(target: &T, x: &[u32], out: &mut [f64]) -> Result<(), EvalError> {
    let mut two = [0.0; 2];
    for (i, o) in out.iter_mut().enumerate() {
        evaluated_coordinate_deltas(target, x, i, &mut two)?;
        *o = two[1 - x[i] as usize];
    }
    Ok(())
}

/// A target's single-coordinate differences with its [`Conditionals`] looked up once: hot
/// loops (single-site Gibbs, locally balanced proposals) keep one from `start` instead of
/// asking the target for its capabilities at every coordinate. Same numbers as the
/// [`TargetExt`] methods.
#[derive(Clone, Copy)]
pub struct Deltas<'t> {
    target: &'t dyn Target,
    conditionals: Option<&'t dyn Conditionals>,
}

impl<'t> Deltas<'t> {
    /// The differences of `target`.
    pub fn of(target: &'t dyn Target) -> Self {
        Deltas { target, conditionals: target.capabilities().conditionals }
    }

    /// The target itself.
    pub fn target(&self) -> &'t dyn Target {
        self.target
    }

    /// As [`TargetExt::coordinate_deltas`].
    #[inline]
    pub fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), EvalError> {
        match self.conditionals {
            Some(c) => c.coordinate_deltas(x, i, out),
            None => evaluated_coordinate_deltas(self.target, x, i, out),
        }
    }

    /// As [`TargetExt::flip_deltas`].
    #[inline]
    pub fn flip_deltas(&self, x: &[u32], out: &mut [f64]) -> Result<(), EvalError> {
        match self.conditionals {
            Some(c) => c.flip_deltas(x, out),
            None => evaluated_flip_deltas(self.target, x, out),
        }
    }
}

/// A CPU model that computes f (and ∇f) one state at a time. The blanket implementation of
/// [`Target`] writes the batch loop once: every row of a [`Batch::Full`] evaluation through
/// these methods, [`EvalError::NoData`] for a minibatch. Models that use matrix products
/// over the batch (RBM, BNN, logistic regression, tensor targets) implement [`Target`]
/// directly. The methods are named apart from [`Target`]'s so the two never clash in scope.
pub trait RowTarget: Send + Sync {
    /// The state space ([`Target::space`]).
    fn row_space(&self) -> &Space;

    /// f(x) of one state `x` (length d).
    fn row_log_density(&self, x: &[u32]) -> f64;

    /// f(x), with ∇f(x) written to `grad` (length `grad_len`).
    fn row_log_density_grad(&self, x: &[u32], grad: &mut [f64]) -> f64;

    /// [`Target::capabilities`]; none by default.
    fn row_capabilities(&self) -> Capabilities<'_> {
        Capabilities::default()
    }
}

impl<T: RowTarget> Target for T {
    fn space(&self) -> &Space {
        self.row_space()
    }

    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        if !batch.is_full() {
            return Err(EvalError::NoData);
        }
        let space = self.row_space();
        let d = space.d;
        match grad {
            None => {
                for (x, o) in xs.chunks(d).zip(log_density.iter_mut()) {
                    *o = self.row_log_density(x);
                }
            }
            Some(grad) => {
                let w = space.grad_len();
                for ((x, o), g) in xs.chunks(d).zip(log_density.iter_mut()).zip(grad.chunks_mut(w)) {
                    *o = self.row_log_density_grad(x, g);
                }
            }
        }
        Ok(())
    }

    fn capabilities(&self) -> Capabilities<'_> {
        self.row_capabilities()
    }
}

/// The data items one evaluation sees. Drawn by the runner from the minibatch stream of the
/// step ([`crate::rng::minibatch_rng`]) and shared by all chains of that step, so one matrix
/// product serves every chain and results do not depend on the thread count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batch<'a> {
    /// Every data item: the exact f and ∇f.
    Full,
    /// These items (distinct indices in 0..N, drawn uniformly without replacement).
    Items(&'a [usize]),
}

impl Batch<'_> {
    /// True for [`Batch::Full`].
    pub fn is_full(&self) -> bool {
        matches!(self, Batch::Full)
    }

    /// Data items one evaluation on this batch reads, for [`crate::StepInfo::data_evals`]:
    /// B for a minibatch, N ([`TargetExt::n_data`], 0 for a model without data terms) for the full data.
    pub fn n_items(&self, n_data: Option<usize>) -> u32 {
        match self {
            Batch::Items(b) => b.len() as u32,
            Batch::Full => n_data.unwrap_or(0) as u32,
        }
    }
}

/// How a data model turns the items of a minibatch into an estimate of f and ∇f
/// (`reproduction.md` §1.10, §3.6: the paper's convention and the official BNN code's).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "scaling")]
pub enum BatchScaling {
    /// f̂ = (N/B) Σ_{n∈batch} ℓ_n + log p0: unbiased for f and ∇f (paper 000 §6).
    Sum,
    /// f̂ = c · mean_{n∈batch} ℓ_n + log p0 with a constant c (the official BNN code's energy,
    /// a tempered likelihood; c = N gives [`BatchScaling::Sum`]).
    MeanTimes {
        /// The constant c.
        c: f64,
    },
}

impl BatchScaling {
    /// The factor multiplying Σ_{n∈batch} ℓ_n for a batch of `b` items out of `n`.
    pub fn factor(&self, n: usize, b: usize) -> f64 {
        match *self {
            BatchScaling::Sum => n as f64 / b as f64,
            BatchScaling::MeanTimes { c } => c / b as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Quadratic;

    /// The blanket batch loop of a row target: each row as `row_log_density(_grad)` computes
    /// it alone, bit for bit; minibatches are refused.
    #[test]
    fn row_targets_evaluate_each_row_alone_and_refuse_minibatches() {
        let t = Quadratic::spec_tiny();
        let xs = [0, 1, 1, 1, 0, 1, 1, 1, 1];
        let (mut f, mut g) = ([0.0; 3], [0.0; 9]);
        t.log_density_grad_batch(&xs, &mut f, &mut g).unwrap();
        for (r, x) in xs.chunks(3).enumerate() {
            let mut gr = [0.0; 3];
            assert_eq!(f[r].to_bits(), t.row_log_density_grad(x, &mut gr).to_bits());
            assert_eq!(f[r].to_bits(), t.log_density(x).unwrap().to_bits());
            assert!(gr.iter().zip(&g[3 * r..]).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
        assert_eq!(t.evaluate(&xs, Batch::Items(&[0]), &mut f, None), Err(EvalError::NoData));
        assert_eq!(t.n_data(), None);
    }

    /// Without a conditionals capability the differences are evaluated; `Deltas` and the
    /// `TargetExt` methods give the same numbers.
    #[test]
    fn evaluated_deltas_are_differences_of_f() {
        let t = Quadratic::spec_tiny();
        let x = [1, 0, 1];
        let f0 = t.log_density(&x).unwrap();
        let (mut flips, mut via) = ([0.0; 3], [0.0; 3]);
        t.flip_deltas(&x, &mut flips).unwrap();
        Deltas::of(&t).flip_deltas(&x, &mut via).unwrap();
        for i in 0..3 {
            let mut y = x;
            y[i] ^= 1;
            assert_eq!(flips[i].to_bits(), (t.log_density(&y).unwrap() - f0).to_bits(), "flip {i}");
            assert_eq!(flips[i].to_bits(), via[i].to_bits());
        }
        assert_eq!(t.cheap_flip_delta(&x, 0), None);
    }
}
