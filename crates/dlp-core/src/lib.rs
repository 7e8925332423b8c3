//! dlp-core: the vocabulary shared by every dlp crate.
//!
//! * [`Space`]: the state space of a model — `d` coordinates sharing one value list
//!   (binary, spin, categorical or ordinal). States are stored as index vectors
//!   `c ∈ {0..K−1}^d` (`u32` per coordinate); for binary and spin models the index *is*
//!   the binary coordinate `x = (s + 1)/2`.
//! * [`Target`]: an unnormalised log-density `f` and its gradient, for a batch of states: a
//!   space and one fallible evaluation; [`TargetExt`] adds the conveniences (f of one state,
//!   coordinate differences), [`RowTarget`] the batch loop of row-at-a-time CPU models.
//! * [`Sampler`] / [`Chains`]: a kernel is `start` (init, caching `f` and `∇f`) plus
//!   `step` (one transition of every chain, returning a [`StepInfo`] per chain).
//! * [`capability`]: what a target offers beyond f and ∇f (RBM and Ising parameter views),
//!   looked up by samplers with a fast path instead of downcasting to a model type.
//! * [`draw`]: the inverse-CDF categorical draws and the single-site Gibbs update.
//! * [`lift`]: the even-partition lift of a discrete space into ℝ^d and its surrogates
//!   (paper 004), shared by GF-KSD and GF-SVGD.
//! * [`optim`]: Adam on a flat `f64` parameter vector, the one used by every slice-based
//!   trainer and by GF-SVGD.
//! * [`progress`]: progress bars for long runs, as plain log lines when stderr is no terminal.
//! * [`rng`]: per-chain ChaCha8 streams derived from `(seed, chain)`.
//! * [`run`]: runs chains in parallel with bit-identical results for any thread count.
//! * [`stats`]: ESS, running means and other diagnostics.
//! * [`diagnostics`]: rank-normalised split R-hat, bulk and tail ESS (as ArviZ).
//! * [`transform`]: the bounded-coordinate transforms of paper 001 (Table 1), stable forms.
//!
//! Vocabulary used in every doc comment: `log_density` = f(x) (log of the unnormalised
//! density, uphill is better), `grad` = ∇f(x) with respect to the sampler's coordinates,
//! `step_size` = α of the paper, `n_changed` = coordinates a step changed.

pub mod capability;
pub mod continuous;
pub mod diagnostics;
pub mod draw;
pub mod error;
pub mod io;
pub mod lift;
pub mod math;
pub mod memory;
pub mod optim;
pub mod progress;
pub mod rng;
pub mod run;
pub mod sampler;
pub mod space;
pub mod stats;
pub mod target;
pub mod testing;
pub mod transform;

pub use capability::Capabilities;
pub use continuous::{BoxSpace, ContinuousSampler, ContinuousTarget, run_continuous};
pub use rng::{ChainRng, chain_rng, chain_rngs, minibatch_rng, setup_rng};
pub use run::{
    Observer, OnInterrupt, RunOptions, RunOutput, RunPlan, States, StepContext, Stopped, run_chains,
    run_chains_until_interrupted,
};
pub use sampler::{Chains, Coupling, ExactKernel, Sampler, SamplerError, StepInfo, Transition};
pub use space::{DomainKind, Space};
pub use target::{Batch, BatchScaling, Deltas, EvalError, RowTarget, Target, TargetExt};
