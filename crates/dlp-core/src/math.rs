//! Numerically stable scalar functions used by samplers and models.

/// The logistic function σ(z) = 1/(1 + e^{−z}), stable for large |z|.
#[inline]
pub fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// softplus(z) = log(1 + e^z) = max(z, 0) + log1p(e^{−|z|}).
#[inline]
pub fn softplus(z: f64) -> f64 {
    z.max(0.0) + (-z.abs()).exp().ln_1p()
}

/// log σ(z) = −softplus(−z); finite for every finite z (the paper's code is not, pitfall P5).
#[inline]
pub fn log_sigmoid(z: f64) -> f64 {
    -softplus(-z)
}

/// log Σ exp(v), with −∞ for an empty slice or all −∞ entries.
pub fn logsumexp(v: &[f64]) -> f64 {
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    if m == f64::INFINITY {
        return m;
    }
    m + v.iter().map(|&x| (x - m).exp()).sum::<f64>().ln()
}

/// Replaces `v` by softmax(v) in place (entries of −∞ get probability 0).
pub fn softmax_in_place(v: &mut [f64]) {
    let lse = logsumexp(v);
    for x in v.iter_mut() {
        *x = (*x - lse).exp();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_sigmoid_is_finite_and_matches_direct_form() {
        for &z in &[-800.0, -30.0, -1.0, 0.0, 0.5, 30.0, 800.0] {
            let ls = log_sigmoid(z);
            assert!(ls.is_finite(), "log_sigmoid({z}) = {ls}");
            if z.abs() < 30.0 {
                let direct = (1.0 / (1.0 + z.exp().recip())).ln();
                assert!((ls - direct).abs() < 1e-14, "{z}: {ls} vs {direct}");
            }
        }
        assert!((sigmoid(0.3) + sigmoid(-0.3) - 1.0).abs() < 1e-15);
        assert_eq!(sigmoid(-1000.0), 0.0);
        assert_eq!(sigmoid(1000.0), 1.0);
    }

    #[test]
    fn logsumexp_handles_infinities() {
        assert_eq!(logsumexp(&[]), f64::NEG_INFINITY);
        assert_eq!(logsumexp(&[f64::NEG_INFINITY, 0.0]), 0.0);
        assert!((logsumexp(&[1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-12);
        let mut p = vec![0.0, 2f64.ln()];
        softmax_in_place(&mut p);
        assert!((p[0] - 1.0 / 3.0).abs() < 1e-15 && (p[1] - 2.0 / 3.0).abs() < 1e-15);
    }
}
