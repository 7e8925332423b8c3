//! Pieces shared by several samplers: the Metropolis–Hastings test in log space, uniform
//! draws, categorical draws from logits.

use dlp_core::ChainRng;
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

/// Index drawn from the unnormalised log-weights `logits` (entries of −∞ are never drawn).
pub fn sample_logits(logits: &[f64], rng: &mut ChainRng) -> usize {
    let m = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = logits.iter().map(|&l| (l - m).exp()).sum();
    let mut u: f64 = rng.random::<f64>() * total;
    for (k, &l) in logits.iter().enumerate() {
        u -= (l - m).exp();
        if u < 0.0 {
            return k;
        }
    }
    // Rounding left u ≥ 0: return the last index with positive weight.
    logits.iter().rposition(|&l| l > f64::NEG_INFINITY).unwrap_or(0)
}

/// min(1, e^A): the probability with which [`mh_accept`] accepts a log ratio A (0 for NaN).
/// Exact transition rows use it so that they match what `mh_accept` does.
#[inline]
pub fn accept_prob(log_ratio: f64) -> f64 {
    if log_ratio.is_nan() { 0.0 } else { log_ratio.min(0.0).exp() }
}
