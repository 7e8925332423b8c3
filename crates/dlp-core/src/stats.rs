//! Diagnostics: running means and effective sample size.

/// Effective sample size of one series with the estimator of TensorFlow Probability that
/// the paper's code uses (spec §3.2): ρ̂_k = autocovariance at lag k with divisor n − k over
/// lag 0, ESS = n / (−1 + 2 Σ_k ((n−k)/n) ρ̂_k), summing from k = 0 up to (not including) the
/// first lag with ρ̂_k < 0. A constant series (ρ̂ undefined) has ESS 1, as in TFP's NaN case.
pub fn ess_tfp(series: &[f64]) -> f64 {
    let n = series.len();
    if n < 2 {
        return n as f64;
    }
    let mean = series.iter().sum::<f64>() / n as f64;
    let centred: Vec<f64> = series.iter().map(|v| v - mean).collect();
    let c0 = centred.iter().map(|v| v * v).sum::<f64>() / n as f64;
    if c0 <= 0.0 || !c0.is_finite() {
        return 1.0;
    }
    let nf = n as f64;
    let mut sum = 0.0;
    for k in 0..n {
        let ck = centred[..n - k].iter().zip(&centred[k..]).map(|(a, b)| a * b).sum::<f64>() / (n - k) as f64;
        let rho = ck / c0;
        if rho < 0.0 {
            break;
        }
        sum += (nf - k as f64) / nf * rho;
    }
    nf / (-1.0 + 2.0 * sum)
}

/// Per-chain, per-coordinate running sums of a numeric function of the state (e.g. spins),
/// for running means over steps 0..t.
#[derive(Clone, Debug)]
pub struct RunningMean {
    /// Number of states added per (chain, coordinate).
    pub count: u64,
    /// Sums, `n_chains × d` row-major.
    pub sums: Vec<f64>,
}

impl RunningMean {
    /// Zero sums for `len` (chain, coordinate) entries.
    pub fn new(len: usize) -> Self {
        RunningMean { count: 0, sums: vec![0.0; len] }
    }

    /// Adds one state per chain, mapping each index through `value`.
    pub fn add(&mut self, positions: &[u32], value: impl Fn(u32) -> f64) {
        for (s, &c) in self.sums.iter_mut().zip(positions) {
            *s += value(c);
        }
        self.count += 1;
    }

    /// Running means.
    pub fn means(&self) -> impl Iterator<Item = f64> + '_ {
        let n = self.count.max(1) as f64;
        self.sums.iter().map(move |s| s / n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ess_of_alternating_series_stops_at_first_negative_lag() {
        // Lag 1 autocorrelation of ±1 alternation is negative, so only lag 0 counts:
        // ESS = n / (−1 + 2) = n.
        let s: Vec<f64> = (0..100).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }).collect();
        assert!((ess_tfp(&s) - 100.0).abs() < 1e-9);
        assert_eq!(ess_tfp(&[3.0; 50]), 1.0);
    }

    #[test]
    fn ess_of_a_blocky_series_is_below_n() {
        // Runs of 10 equal values: strongly autocorrelated, ESS well below n.
        let s: Vec<f64> = (0..1000).map(|i| if (i / 10) % 2 == 0 { 1.0 } else { 0.0 }).collect();
        let e = ess_tfp(&s);
        assert!(e > 1.0 && e < 200.0, "{e}");
    }
}
