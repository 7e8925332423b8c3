//! Continuous, possibly bounded coordinates: the second state type of the core.
//!
//! A [`BoxSpace`] is a product of intervals (lower, upper) with infinite ends allowed; states
//! are `f64` rows. A [`ContinuousTarget`] is the continuous counterpart of
//! [`crate::Target`]: one fallible, minibatch-aware oracle for f and ∇f of a batch of rows.
//! Continuous samplers ([`ContinuousSampler`]) return the same [`Chains`] trait (with
//! `X = f64`), draw from the same per-chain streams, get minibatches from the same stream,
//! and run on the same runner ([`run_continuous`] → [`crate::run::run_tasks`]) with the same
//! observers and diagnostics as the discrete samplers. Discrete targets keep their own
//! `u32` trait so that their fast paths stay as fast as before.

use crate::run::{Observer, OnInterrupt, RunOptions, RunOutput, RunPlan, run_tasks};
use crate::sampler::{Chains, Coupling, SamplerError};
use crate::target::{Batch, EvalError};
use serde::{Deserialize, Serialize};

/// A product of intervals: coordinate i lives in (lower\[i\], upper\[i\]) (ends may be ±∞).
/// States must lie strictly inside: targets on bounded boxes usually have log-densities
/// that diverge at the ends (Beta, Gamma), and the transforms of paper 001 map the open box.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoxSpace {
    /// Number of coordinates.
    pub d: usize,
    /// Lower ends (−∞ allowed).
    pub lower: Vec<f64>,
    /// Upper ends (+∞ allowed).
    pub upper: Vec<f64>,
}

impl BoxSpace {
    /// ℝ^d.
    pub fn real(d: usize) -> Self {
        BoxSpace { d, lower: vec![f64::NEG_INFINITY; d], upper: vec![f64::INFINITY; d] }
    }

    /// The same interval (lo, hi) at each of `d` coordinates; `None` unless lo < hi (NaN ends
    /// are rejected).
    pub fn uniform(d: usize, lo: f64, hi: f64) -> Option<Self> {
        (lo < hi).then(|| BoxSpace { d, lower: vec![lo; d], upper: vec![hi; d] })
    }

    /// True when some coordinate has a finite end.
    pub fn is_bounded(&self) -> bool {
        self.lower.iter().chain(&self.upper).any(|v| v.is_finite())
    }

    /// True when `x` (one row) lies strictly inside the box.
    #[inline]
    pub fn contains(&self, x: &[f64]) -> bool {
        x.iter().zip(self.lower.iter().zip(&self.upper)).all(|(&v, (&lo, &hi))| v > lo && v < hi)
    }

    /// Checks that `xs` holds whole rows strictly inside the box; names the first bad entry.
    pub fn check_states(&self, xs: &[f64]) -> Result<(), String> {
        if self.d == 0 || !xs.len().is_multiple_of(self.d) {
            return Err(format!("state buffer of length {} is not a multiple of d = {}", xs.len(), self.d));
        }
        for (p, &v) in xs.iter().enumerate() {
            let (lo, hi) = (self.lower[p % self.d], self.upper[p % self.d]);
            if !(v > lo && v < hi) {
                return Err(format!("chain {}, coordinate {}: {v} is outside ({lo}, {hi})", p / self.d, p % self.d));
            }
        }
        Ok(())
    }
}

/// π(x) ∝ exp(f(x)) on a [`BoxSpace`], with f differentiable inside the box.
/// Rows must be evaluated independently of each other (thread-count independence).
pub trait ContinuousTarget: Send + Sync {
    /// The state space.
    fn space(&self) -> &BoxSpace;

    /// N when f = Σ_{n<N} ℓ_n + log p0 (minibatches possible), else `None`.
    fn n_data(&self) -> Option<usize> {
        None
    }

    /// f̂ of every row of `xs` into `log_density` and ∇f̂ into `grad` (`n × d`) when given;
    /// `batch` as for [`crate::Target::evaluate`]. Rows outside the box get f = −∞.
    fn evaluate(
        &self,
        xs: &[f64],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError>;
}

/// A configured continuous (or particle) sampler, chosen by name at run time.
pub trait ContinuousSampler: Send + Sync {
    /// The name as written on the command line.
    fn name(&self) -> String;

    /// Starts `x0.len() / d` chains (or particles) at the rows of `x0`.
    fn start<'t>(
        &self,
        target: &'t dyn ContinuousTarget,
        x0: &[f64],
    ) -> Result<Box<dyn Chains<f64> + 't>, SamplerError>;

    /// Whether the chains may run in separate tasks; particle samplers return
    /// [`Coupling::Joint`].
    fn coupling(&self) -> Coupling {
        Coupling::Independent
    }

    /// The minibatch size B, for stochastic-gradient samplers.
    fn minibatch(&self) -> Option<usize> {
        None
    }
}

/// Runs `x0.len() / d` chains of a continuous sampler: the continuous front end of the one
/// runner ([`crate::run_chains`] is the discrete one), with the same seeding, minibatch
/// stream, coupling rule and observers.
pub fn run_continuous<O, F>(
    sampler: &dyn ContinuousSampler,
    target: &dyn ContinuousTarget,
    x0: &[f64],
    steps: usize,
    options: &RunOptions,
    make_observer: F,
) -> Result<RunOutput<O, f64>, SamplerError>
where
    O: Observer<f64>,
    F: Fn(usize, usize) -> O + Sync,
{
    target.space().check_states(x0).map_err(SamplerError::BadInitialState)?;
    let plan = RunPlan::new(sampler.name(), sampler.coupling(), sampler.minibatch(), target.n_data())?;
    let start = |x: &[f64]| sampler.start(target, x);
    run_tasks(&plan, target.space().d, x0, steps, options, &start, &|| None, OnInterrupt::Fail, make_observer)
}
