//! Pieces shared by several samplers: the Metropolis–Hastings test in log space, uniform
//! draws, and the categorical draws (defined in [`dlp_core::draw`], which the reference draws
//! of dlp-gof share).

use dlp_core::ChainRng;
pub use dlp_core::draw::{inverse_cdf, sample_logits, sample_weights};
use rand::RngExt;

/// Draws u ~ U(0,1) and accepts iff log u < `log_ratio` (a NaN ratio rejects, so a
/// proposal with a non-finite log-density is a counted rejection). Returns
/// (accepted, min(1, e^A)).
#[inline]
pub fn mh_accept(log_ratio: f64, rng: &mut ChainRng) -> (bool, f64) {
    let u: f64 = rng.random();
    let accept = u.ln() < log_ratio;
    let p = if log_ratio.is_nan() { 0.0 } else { log_ratio.min(0.0).exp() };
    (accept, p)
}

/// min(1, e^A): the probability with which [`mh_accept`] accepts a log ratio A (0 for NaN).
/// Exact transition rows use it so that they match what `mh_accept` does.
#[inline]
pub fn accept_prob(log_ratio: f64) -> f64 {
    if log_ratio.is_nan() { 0.0 } else { log_ratio.min(0.0).exp() }
}
