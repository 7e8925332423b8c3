//! dlp-exact: exact computations on enumerable spaces, the ground truth of the test suite.
//!
//! * [`enumerate`]: log Z, marginals, moments, E_π[h] and π itself by exhaustive, parallel,
//!   thread-count-independent enumeration (2^25 states of the 5×5 Ising in seconds).
//!
//! Notes on testing (style.md rules 8–11): the exact tier compares matrices and laws to
//! ~1e-10 and runs in `cargo test -p dlp-exact`; larger spaces and more cases are behind
//! the `stat` feature / `#[ignore]` (`cargo test -p dlp-exact --release -- --ignored`).

pub mod enumerate;

pub use enumerate::{EnumOptions, Enumeration, enumerate, enumerate_with, expectation, log_densities, probabilities};

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
    /// Every state has log-density −∞.
    #[error("every state has log-density −∞ (Z = 0)")]
    ZeroMass,
}
