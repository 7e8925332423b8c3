//! dlp-exact: exact computations on enumerable spaces, the ground truth of the test suite.
//!
//! * [`enumerate`]: log Z, marginals, moments, E_π\[h\] and π itself by exhaustive, parallel,
//!   thread-count-independent enumeration (2^25 states of the 5×5 Ising in seconds).
//! * [`matrix`]: transition matrices from a sampler's `ExactKernel`, stationary laws,
//!   residuals, exact mixing rates ([`mixing`]: spectral gap, SLEM, relaxation time), DULA's
//!   closed form π_α ∝ π·Z_α, Theorem 5.1's bounds, [`ExactReport`].
//! * [`ergodic`]: communicating classes, closed classes, periods and per-class laws of a
//!   transition matrix: irreducibility and aperiodicity, checked before any law is solved.
//! * [`corv`]: the first-order bias and the finite-step stationary moments of the CoRV
//!   Langevin chain on a 1-D bounded target (quadrature, banded transfer operator + GTH): the
//!   exact checks of `dlp_samplers::bounded` (paper 001).
//! * [`lattice`]: E_π and DULA's E_{π_α} of an Ising model's mean spin in one enumeration.
//! * [`reference`]: transition matrices transcribed from the papers' formulas, independent
//!   of `dlp-samplers`, for every registered sampler.
//!
//! Everything but [`enumerate`] and [`lattice`] works on transition matrices (nalgebra) and is
//! behind the default feature `matrices`, which the lightest reproductions leave off.
//!
//! Notes on testing (style.md rules 8–11): the exact tier compares matrices and laws to
//! ~1e-10 and runs in `cargo test -p dlp-exact`; larger spaces and more cases are behind
//! the `stat` feature / `#[ignore]` (`cargo test -p dlp-exact --release -- --ignored`).

// Index loops transcribe the formulas (x_i, W_ij) as written; iterator forms would obscure them.
#![allow(clippy::needless_range_loop)]

#[cfg(feature = "matrices")]
pub mod corv;
pub mod enumerate;
#[cfg(feature = "matrices")]
pub mod ergodic;
#[cfg(feature = "matrices")]
pub mod gth;
pub mod lattice;
#[cfg(feature = "matrices")]
pub mod matrix;
#[cfg(feature = "matrices")]
pub mod reference;
#[cfg(feature = "matrices")]
pub mod spectrum;

pub use enumerate::{
    EnumOptions, Enumeration, enumerate, enumerate_plain, enumerate_with, expectation, gray_code_applies,
    log_densities, mean_variance, probabilities,
};
pub use lattice::ising_mean_and_dula_mean;
#[cfg(feature = "matrices")]
pub use matrix::{
    DulaLaw, ExactReport, Mixing, Thm51Bounds, cycle_matrix, detailed_balance_residual, dula_closed_form, exact_report,
    general_eigenvalues, kernel_matrix, mixing, stationarity_residual, stationary, stationary_gth, stationary_lu,
    thm51_bounds, total_variation,
};

/// Errors of exact computations; each names the quantity and the offending value.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ExactError {
    /// The space is too large for the requested computation.
    #[error("{what}: the space has {n_states} states, more than the limit {limit}")]
    TooManyStates {
        /// The computation that refused.
        what: &'static str,
        /// |V|^d (as text, since it may overflow u64).
        n_states: String,
        /// The limit.
        limit: u64,
    },
    /// The target returned NaN or +∞.
    #[error("log-density of state {state} is {value}, not finite or −∞")]
    BadLogDensity {
        /// Index of the state (enumeration order).
        state: u64,
        /// The value.
        value: f64,
    },
    /// The sampler does not expose an exact kernel.
    #[error("sampler {0} has no exact kernel")]
    NoExactKernel(String),
    /// A transition row is not a probability law over distinct valid states.
    #[error("{sampler}: transition row of state {state} (phase {phase}) is invalid: {why}")]
    BadRow {
        /// The sampler.
        sampler: String,
        /// Index of the state whose row is bad.
        state: usize,
        /// The phase.
        phase: usize,
        /// What is wrong.
        why: String,
    },
    /// The chain has no unique stationary law (several closed classes), or a solver that
    /// assumes one met a singular system; says which.
    #[error("the transition matrix has no unique stationary law: {0}")]
    NoUniqueStationary(String),
    /// A theorem's assumptions do not hold.
    #[error("assumption violated: {0}")]
    Assumption(String),
    /// Every state has log-density −∞.
    #[error("every state has log-density −∞ (Z = 0)")]
    ZeroMass,
    /// An eigensolver failed (non-finite entries, or its iteration limit).
    #[error("eigenvalues: {0}")]
    Eigen(String),
    /// The target could not be evaluated (no minibatch estimates, a device error).
    #[error(transparent)]
    Eval(#[from] dlp_core::EvalError),
    /// The sampler refuses to run on this model (its `start` error).
    #[error(transparent)]
    Refused(dlp_core::SamplerError),
}
