//! The target trait: an unnormalised log-density and its gradient, for a batch of states.

use crate::capability::Capabilities;
use crate::space::Space;
use serde::{Deserialize, Serialize};

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

    /// N when f is a sum over N data items plus a prior, f(x) = Σ_{n<N} ℓ_n(x) + log p0(x),
    /// so that [`Target::evaluate`] accepts [`Batch::Items`] (minibatch estimates, paper 000
    /// §6); `None` (the default) for models without data terms.
    fn n_data(&self) -> Option<usize> {
        None
    }

    /// The fallible, minibatch-aware oracle that the generic gradient samplers call: f̂ of every
    /// row of `xs` into `log_density`, and ∇f̂ into `grad` when given (`n × grad_len`).
    ///
    /// With [`Batch::Full`] f̂ = f and ∇f̂ = ∇f (the default forwards to the infallible batch
    /// methods and then reports [`Target::take_error`]). With [`Batch::Items`] a data model
    /// returns its minibatch estimates under its own [`BatchScaling`]; models without data
    /// terms return [`EvalError::NoData`]. A device-backed target (dlp-tensor) implements this
    /// method natively and turns out-of-memory or a lost device into an `Err`, which stops the
    /// run with one line instead of a panic.
    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        match batch {
            Batch::Full => {
                match grad {
                    Some(g) => self.log_density_grad_batch(xs, log_density, g),
                    None => self.log_density_batch(xs, log_density),
                }
                self.take_error().map_or(Ok(()), Err)
            }
            Batch::Items(_) => Err(EvalError::NoData),
        }
    }

    /// The first error an infallible method met since the last call, if any. The infallible
    /// methods of a fallible (device) target cannot return one: they write NaN, which samplers
    /// treat as a rejected proposal, and park the error here; the runner checks it after every
    /// step and stops the run. CPU models never fail and keep the default `None`.
    fn take_error(&self) -> Option<EvalError> {
        None
    }

    /// What the model offers beyond f and ∇f ([`crate::capability`]: parameter views for the
    /// fast paths and model-specific samplers), looked up by samplers at `start`; samplers never
    /// see concrete model types. The default offers nothing, so every sampler takes its generic
    /// path. A fast path must implement the same Markov kernel as the generic code.
    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::default()
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
    /// B for a minibatch, N (`n_data`, 0 for a model without data terms) for the full data.
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

/// An evaluation that could not be done. Ends the run with this line (CLI: exit 1 for a
/// device failure, 2 for a request the model cannot serve).
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum EvalError {
    /// A minibatch was asked of a model that has no data terms.
    #[error("the model is not a sum over data items (it has no minibatch estimates)")]
    NoData,
    /// A minibatch item index is out of range.
    #[error("minibatch item {index} is outside 0..{n_data}")]
    BadItem {
        /// The offending index.
        index: usize,
        /// N.
        n_data: usize,
    },
    /// The device that evaluates the model failed (out of memory, lost device, kernel error).
    #[error("device error on {device}: {message}")]
    Device {
        /// The device, e.g. `cpu` or `cuda:0`.
        device: String,
        /// What the device library said.
        message: String,
    },
}
