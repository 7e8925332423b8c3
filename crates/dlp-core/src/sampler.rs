//! Sampler kernels: `start` caches what the first step needs, `step` moves every chain once.
//!
//! A sampler is a small configuration value (step size, block size, …) implementing
//! [`Sampler`]; [`Sampler::start`] returns the running [`Chains`], which own the positions
//! and every cache (log-density, gradient, flip logits, hidden activations…) so that a
//! step evaluates the model only where it must (once at the proposal for DMALA).

use crate::rng::ChainRng;
use crate::target::{Batch, EvalError, Target};
use serde::{Deserialize, Serialize};

/// What one step did to one chain (BlackJAX's info record, nuts-rs's `SampleInfo`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepInfo {
    /// The proposal was accepted (always true for samplers without an accept step).
    pub accepted: bool,
    /// min(1, e^A) for Metropolis–Hastings samplers, 1 otherwise.
    pub accept_prob: f64,
    /// Coordinates the proposal would change.
    pub n_proposed: u32,
    /// Coordinates the step actually changed (0 after a rejection).
    pub n_changed: u32,
    /// Log-density evaluations of one state that the step performed (a batch of m states
    /// counts m; a coordinate-delta call over K values counts K).
    pub density_evals: u32,
    /// Gradient evaluations of one state that the step performed.
    pub grad_evals: u32,
    /// Data items read by the step's evaluations of a data model (B per minibatch evaluation,
    /// N per full one; 0 for models without data terms). Cost accounting for stochastic
    /// gradients, where a step is cheap because it reads few items.
    #[serde(default)]
    pub data_evals: u32,
}

impl StepInfo {
    /// A gradient-proposal step whose proposal was x itself: kept without any evaluation.
    pub fn stayed() -> Self {
        StepInfo { accepted: true, accept_prob: 1.0, ..StepInfo::default() }
    }

    /// A gradient-proposal step whose proposal moved `k` coordinates and was evaluated once
    /// (f and ∇f of the proposal), then accepted or not with probability `accept_prob`.
    pub fn evaluated(accepted: bool, accept_prob: f64, k: u32) -> Self {
        StepInfo {
            accepted,
            accept_prob,
            n_proposed: k,
            n_changed: if accepted { k } else { 0 },
            density_evals: 1,
            grad_evals: 1,
            data_evals: 0,
        }
    }
}

/// Errors a sampler reports at construction or start, before any step runs.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum SamplerError {
    /// The sampler name could not be parsed.
    #[error("unknown sampler {0:?} (known: {1})")]
    UnknownSampler(String, String),
    /// A parameter is out of its range.
    #[error("{sampler}: {message}")]
    BadParameter {
        /// The sampler.
        sampler: String,
        /// What is wrong, naming the parameter and its value.
        message: String,
    },
    /// The sampler cannot run on this target (wrong domain, missing capability).
    #[error("{sampler} cannot sample this model: {message}")]
    Unsupported {
        /// The sampler.
        sampler: String,
        /// Why.
        message: String,
    },
    /// The initial states are not valid states of the target's space.
    #[error("bad initial states: {0}")]
    BadInitialState(String),
    /// Evaluating the target failed (a device error, or a minibatch the model cannot serve).
    #[error(transparent)]
    Eval(#[from] EvalError),
}

/// Whether the runner may split a sampler's chains into independent tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Coupling {
    /// Every chain moves on its own (MCMC): chains are split over tasks and threads.
    #[default]
    Independent,
    /// A step couples all chains (interacting particles such as SVGD): the runner keeps them
    /// in one task, so results stay identical for any thread count.
    Joint,
}

/// A configured sampler. Object-safe so that samplers can be chosen by name at run time.
pub trait Sampler: Send + Sync {
    /// The name as written on the command line (`dmala`, `hb-10-1`, `gwg-4`).
    fn name(&self) -> String;

    /// Starts `x0.len() / d` chains at the rows of `x0`, computing the caches the first
    /// step needs. Chains started from the same rows behave identically whether they are
    /// started together or in separate calls (given the same per-chain streams).
    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError>;

    /// Whether chains may run in separate tasks ([`Coupling::Independent`], the default).
    fn coupling(&self) -> Coupling {
        Coupling::Independent
    }

    /// The minibatch size B when the sampler reads stochastic gradients: the runner then draws
    /// B of the target's N data items per step from the minibatch stream and passes them to
    /// [`Chains::try_step`]. `None` (the default): every step sees [`Batch::Full`].
    fn minibatch(&self) -> Option<usize> {
        None
    }

    /// The exact transition probabilities of this sampler, if it exposes them (every
    /// sampler of dlp does; the exact test suite builds matrices from them).
    fn exact(&self) -> Option<&dyn ExactKernel> {
        None
    }
}

/// A batch of running chains with their caches. `X` is the state element: `u32` indices for
/// discrete spaces, `f64` for continuous boxes ([`crate::continuous`]).
pub trait Chains<X = u32>: Send {
    /// Number of chains.
    fn n_chains(&self) -> usize;

    /// Current states, `n_chains × d` row-major.
    fn positions(&self) -> &[X];

    /// Cached log-densities of the current states, for samplers that keep them.
    fn log_densities(&self) -> Option<&[f64]> {
        None
    }

    /// Advances every chain by one step; chain `j` draws only from `rngs[j]` and its record
    /// goes to `info[j]`. `batch` is the step's minibatch ([`Batch::Full`] unless the sampler
    /// asked for one through [`Sampler::minibatch`]). An `Err` (a device failure) ends the run.
    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], batch: Batch<'_>) -> Result<(), EvalError>;

    /// [`Chains::try_step`] on the full data, for CPU targets that cannot fail (tests, exact
    /// tooling). Panics on an evaluation error; runs go through the runner, which does not.
    fn step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo]) {
        if let Err(e) = self.try_step(rngs, info, Batch::Full) {
            panic!("step failed: {e}");
        }
    }

    /// Moves the chains `rows` to the states `xs` (`rows.len() × d`, states of the space), as
    /// if each had accepted a proposal of that state: what they cache of their state is
    /// recomputed, their schedules are kept. Wrappers that exchange states between chains
    /// (replica exchange) need it. `None`: these chains cannot be moved (the default).
    fn set_states(&mut self, rows: &[usize], xs: &[X]) -> Option<Result<(), EvalError>> {
        let _ = (rows, xs);
        None
    }
}

/// One possible next state and its probability.
pub type Transition = (Vec<u32>, f64);

/// Exact one-step transition probabilities, computed by the very functions `step` calls
/// (proposal probabilities and acceptance rule), so that a test can build the sampler's
/// transition matrix and compare it with one transcribed from the paper.
pub trait ExactKernel {
    /// Number of distinct step kernels the sampler cycles through (1 for time-homogeneous
    /// samplers; d for a systematic scan). Step t of a freshly started chain uses phase
    /// `t mod n_phases`.
    fn n_phases(&self, target: &dyn Target) -> usize {
        let _ = target;
        1
    }

    /// The law of the next state from `x` under phase `phase`, as a list of distinct states
    /// with positive probability summing to 1 (the current state included if it can stay).
    /// Samplers with randomised schedules (random block permutations) return the law
    /// averaged over the schedule's randomness, which is what one fresh step does. An error is
    /// the target's: an evaluation the row needed failed (a callback raising, a device error).
    fn transition_row(&self, target: &dyn Target, x: &[u32], phase: usize) -> Result<Vec<Transition>, EvalError>;
}
