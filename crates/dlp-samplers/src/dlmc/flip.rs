//! The DLMC proposal's per-coordinate flip law (module docs of [`crate::dlmc`]): shared by the
//! generic chains, the exact kernel and the lattice fast path ([`crate::fast::ising`]). A leaf.

use dlp_core::math::log_sigmoid;

/// log(1 − e^{−a}) for a ≥ 0 (−∞ at 0), stable at both ends.
#[inline]
fn log1mexp(a: f64) -> f64 {
    if a <= std::f64::consts::LN_2 { (-(-a).exp_m1()).ln() } else { (-(-a).exp()).ln_1p() }
}

/// log(e^a + e^b).
#[inline]
fn logaddexp(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == f64::NEG_INFINITY { m } else { m + ((a - m).exp() + (b - m).exp()).ln() }
}

/// Per-coordinate flip laws of the DLMC proposal at `x` with gradient `grad` and time `h`:
/// `log_p[i]` = log p_i, `log_keep[i]` = log(1 − p_i) (module docs). `step` and the exact
/// kernel both call it.
pub fn flip_log_probs(h: f64, x: &[u32], grad: &[f64], log_p: &mut [f64], log_keep: &mut [f64]) {
    for i in 0..x.len() {
        let delta = (1.0 - 2.0 * x[i] as f64) * grad[i];
        let total_rate = (0.5 * delta).exp() + (-0.5 * delta).exp();
        let log_nu = log_sigmoid(delta);
        log_p[i] = log_nu + log1mexp(h * total_rate);
        log_keep[i] = logaddexp(log_sigmoid(-delta), log_nu - h * total_rate);
    }
}

/// log q(y|x) from the flip laws at x.
#[inline]
pub fn log_prob(x: &[u32], y: &[u32], log_p: &[f64], log_keep: &[f64]) -> f64 {
    (0..x.len()).map(|i| if x[i] != y[i] { log_p[i] } else { log_keep[i] }).sum()
}
