//! Convergence diagnostics on `chains × draws` arrays: rank-normalised split R-hat, bulk ESS
//! and tail ESS of Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), computed as ArviZ
//! computes them (`az.rhat(method="rank")`, `az.ess(method="bulk")`, `az.ess(method="tail")`,
//! arviz 0.23). `crates/dlp-core/tests/diagnostics_arviz.rs` checks every function against
//! ArviZ's own output (fixture made by `scripts/arviz_fixture.py`).
//!
//! The paper's ESS (TensorFlow Probability's estimator on chain 0) stays
//! [`crate::stats::ess_tfp`]; these are the modern multi-chain diagnostics reported beside it.
//!
//! Layout: `draws` is row-major, `n_chains` rows of `n_draws = draws.len() / n_chains`
//! consecutive draws. Normal quantiles come from statrs (`Normal::inverse_cdf`, i.e.
//! −√2·erfc⁻¹(2p)), which agrees with scipy's `ndtri` far below the 1e-6 the test asks for.

use statrs::distribution::{ContinuousCDF, Normal};

/// Why a diagnostic cannot be computed on the given array.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum DiagnosticsError {
    /// `n_chains` is zero or does not divide the number of draws.
    #[error("diagnostics: {len} draws cannot be split into n_chains = {n_chains} equal chains")]
    BadShape {
        /// Total number of values given.
        len: usize,
        /// Number of chains asked for.
        n_chains: usize,
    },
    /// Fewer chains or draws than the diagnostic needs (ArviZ: 4 draws; R-hat: 2 chains).
    #[error("diagnostics: {what} needs at least {min_chains} chain(s) of at least 4 draws, got {n_chains} × {n_draws}")]
    TooShort {
        /// The diagnostic.
        what: &'static str,
        /// Chains it needs.
        min_chains: usize,
        /// Chains given.
        n_chains: usize,
        /// Draws per chain given.
        n_draws: usize,
    },
    /// A draw is NaN or infinite.
    #[error("diagnostics: draw {draw} of chain {chain} is {value}")]
    NotFinite {
        /// Chain of the bad draw.
        chain: usize,
        /// Index of the bad draw within its chain.
        draw: usize,
        /// The value.
        value: f64,
    },
}

/// Validates the shape (`min_chains` chains of ≥ 4 draws, as ArviZ requires) and finiteness;
/// returns the number of draws per chain.
fn check(draws: &[f64], n_chains: usize, min_chains: usize, what: &'static str) -> Result<usize, DiagnosticsError> {
    if n_chains == 0 || !draws.len().is_multiple_of(n_chains) {
        return Err(DiagnosticsError::BadShape { len: draws.len(), n_chains });
    }
    let n_draws = draws.len() / n_chains;
    if n_chains < min_chains || n_draws < 4 {
        return Err(DiagnosticsError::TooShort { what, min_chains, n_chains, n_draws });
    }
    if let Some(p) = draws.iter().position(|v| !v.is_finite()) {
        return Err(DiagnosticsError::NotFinite { chain: p / n_draws, draw: p % n_draws, value: draws[p] });
    }
    Ok(n_draws)
}

/// Splits each chain into its first and last ⌊n/2⌋ draws (the middle draw of an odd chain
/// is dropped) and stacks them: all first halves, then all second halves (ArviZ's
/// `_split_chains`). Returns the `2·n_chains × ⌊n/2⌋` array.
pub fn split_chains(draws: &[f64], n_chains: usize) -> Vec<f64> {
    let n = draws.len() / n_chains;
    let half = n / 2;
    let mut out = Vec::with_capacity(2 * n_chains * half);
    for c in 0..n_chains {
        out.extend_from_slice(&draws[c * n..c * n + half]);
    }
    for c in 0..n_chains {
        out.extend_from_slice(&draws[(c + 1) * n - half..(c + 1) * n]);
    }
    out
}

/// Ranks (1-based) of all values jointly, ties getting the average of their positions
/// (scipy's `rankdata(method="average")`).
fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start+1 ..= end share the mean rank.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// Rank-normalisation: z = Φ⁻¹((r − 3/8)/(S − 3/4 + 1)) with r the average rank among all S
/// values (Blom's offset, as ArviZ's `_z_scale`).
pub fn z_scale(values: &[f64]) -> Vec<f64> {
    let normal = Normal::standard();
    let s = values.len() as f64;
    average_ranks(values).into_iter().map(|r| normal.inverse_cdf((r - 0.375) / (s - 0.75 + 1.0))).collect()
}

/// Sample variance with divisor n − 1.
fn var_ddof1(values: impl Iterator<Item = f64> + Clone) -> f64 {
    let (n, sum) = values.clone().fold((0usize, 0.0), |(n, s), v| (n + 1, s + v));
    let mean = sum / n as f64;
    values.map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n as f64 - 1.0)
}

/// Classic (non-split) potential scale reduction of a `n_chains × n` array (ArviZ's `_rhat`):
/// sqrt(((n−1)/n·W + B/n) / W) with W the mean within-chain variance and B/n the variance
/// of the chain means.
fn rhat_plain(x: &[f64], n_chains: usize) -> f64 {
    let n = x.len() / n_chains;
    let rows = || x.chunks_exact(n);
    let means: Vec<f64> = rows().map(|r| r.iter().sum::<f64>() / n as f64).collect();
    let within = rows().map(|r| var_ddof1(r.iter().copied())).sum::<f64>() / n_chains as f64;
    let between = n as f64 * var_ddof1(means.iter().copied());
    ((between / within + n as f64 - 1.0) / n as f64).sqrt()
}

/// Rank-normalised split R-hat: the larger of the split R-hat of the rank-normalised draws
/// (bulk) and of the rank-normalised |draw − median| (tail). Needs ≥ 2 chains of ≥ 4 draws.
/// A constant array gives NaN, as in ArviZ.
pub fn rhat_rank(draws: &[f64], n_chains: usize) -> Result<f64, DiagnosticsError> {
    check(draws, n_chains, 2, "rank-normalised R-hat")?;
    let split = split_chains(draws, n_chains);
    let bulk = rhat_plain(&z_scale(&split), 2 * n_chains);
    let med = crate::stats::median(&split);
    let folded: Vec<f64> = split.iter().map(|v| (v - med).abs()).collect();
    let tail = rhat_plain(&z_scale(&folded), 2 * n_chains);
    // numpy's max propagates NaN; f64::max would hide it.
    Ok(if bulk.is_nan() || tail.is_nan() { f64::NAN } else { bulk.max(tail) })
}

/// Multi-chain ESS of a `n_chains × n` array with Geyer's initial positive and initial
/// monotone sequences (ArviZ's `_ess`, Vehtari et al. 2021 eq. 10–11), no splitting.
///
/// Autocovariances are computed directly, lag by lag, only up to where Geyer's truncation
/// stops (instead of ArviZ's FFT over all lags): the values are the same up to rounding,
/// no FFT crate is needed, and the cost is O(n · lags used), small for mixing chains.
pub fn ess_geyer(x: &[f64], n_chains: usize) -> f64 {
    let n = x.len() / n_chains;
    let (lo, hi) = x.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
    // numpy's finfo(float).resolution: ArviZ calls an array this flat independent draws.
    if hi - lo < 1e-15 {
        return x.len() as f64;
    }
    let centred: Vec<Vec<f64>> = x
        .chunks_exact(n)
        .map(|r| {
            let m = r.iter().sum::<f64>() / n as f64;
            r.iter().map(|v| v - m).collect()
        })
        .collect();
    // Mean over chains of the lag-t autocovariance with divisor n.
    let mean_acov = |t: usize| -> f64 {
        centred.iter().map(|r| r[..n - t].iter().zip(&r[t..]).map(|(a, b)| a * b).sum::<f64>() / n as f64).sum::<f64>()
            / n_chains as f64
    };
    let nf = n as f64;
    let chain_means: Vec<f64> = x.chunks_exact(n).map(|r| r.iter().sum::<f64>() / nf).collect();
    let mean_var = mean_acov(0) * nf / (nf - 1.0);
    let mut var_plus = mean_var * (nf - 1.0) / nf;
    if n_chains > 1 {
        var_plus += var_ddof1(chain_means.iter().copied());
    }
    let rho_at = |t: usize| 1.0 - (mean_var - mean_acov(t)) / var_plus;

    let mut rho = vec![0.0; n];
    let mut rho_even = 1.0;
    rho[0] = rho_even;
    let mut rho_odd = rho_at(1);
    rho[1] = rho_odd;
    // Geyer's initial positive sequence: sum pairs of lags while the pair sum is positive.
    let mut t = 1usize;
    while t + 3 < n && rho_even + rho_odd > 0.0 {
        rho_even = rho_at(t + 1);
        rho_odd = rho_at(t + 2);
        if rho_even + rho_odd >= 0.0 {
            rho[t + 1] = rho_even;
            rho[t + 2] = rho_odd;
        }
        t += 2;
    }
    // max_t = t − 2 ≥ −1; kept as isize because ArviZ's slices use −1 + 1 = 0.
    let max_t = t as isize - 2;
    let after = (max_t + 1) as usize;
    if rho_even > 0.0 {
        rho[after] = rho_even;
    }
    // Geyer's initial monotone sequence: pair sums may not increase.
    let mut t = 1isize;
    while t <= max_t - 2 {
        let u = t as usize;
        if rho[u + 1] + rho[u + 2] > rho[u - 1] + rho[u] {
            rho[u + 1] = (rho[u - 1] + rho[u]) / 2.0;
            rho[u + 2] = rho[u + 1];
        }
        t += 2;
    }
    let total = x.len() as f64;
    let mut tau = -1.0 + 2.0 * rho[..after].iter().sum::<f64>() + rho.get(after).copied().unwrap_or(0.0);
    tau = tau.max(1.0 / total.log10());
    if rho.iter().any(|v| v.is_nan()) { f64::NAN } else { total / tau }
}

/// Bulk ESS: [`ess_geyer`] of the rank-normalised split chains. One chain is allowed (it is
/// split into two halves); needs ≥ 4 draws per chain.
pub fn ess_bulk(draws: &[f64], n_chains: usize) -> Result<f64, DiagnosticsError> {
    check(draws, n_chains, 1, "bulk ESS")?;
    Ok(ess_geyer(&z_scale(&split_chains(draws, n_chains)), 2 * n_chains))
}

/// ESS of the indicator draw ≤ q_p, q_p the type-7 p-quantile of all draws, split chains
/// (ArviZ's `_ess_quantile`).
pub fn ess_quantile(draws: &[f64], n_chains: usize, p: f64) -> Result<f64, DiagnosticsError> {
    check(draws, n_chains, 1, "quantile ESS")?;
    // ArviZ takes the type-7 quantile (`mquantiles(alphap=1, betap=1)`), as stats::quantile.
    let q = crate::stats::quantile(draws, p);
    let indicator: Vec<f64> = draws.iter().map(|&v| if v <= q { 1.0 } else { 0.0 }).collect();
    Ok(ess_geyer(&split_chains(&indicator, n_chains), 2 * n_chains))
}

/// Tail ESS: the smaller of the 5% and 95% quantile ESS.
pub fn ess_tail(draws: &[f64], n_chains: usize) -> Result<f64, DiagnosticsError> {
    let low = ess_quantile(draws, n_chains, 0.05)?;
    let high = ess_quantile(draws, n_chains, 0.95)?;
    Ok(low.min(high))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn average_ranks_share_ties() {
        // Hand-ranked: 1.0 ×2 at positions 1, 2 → 1.5; 3.0 → 3; 5.0 ×3 at 4..6 → 5.
        assert_eq!(average_ranks(&[5.0, 1.0, 5.0, 3.0, 1.0, 5.0]), vec![5.0, 1.5, 5.0, 3.0, 1.5, 5.0]);
    }

    #[test]
    fn split_drops_the_middle_draw_of_odd_chains() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0];
        assert_eq!(split_chains(&x, 2), vec![1.0, 2.0, 10.0, 20.0, 4.0, 5.0, 40.0, 50.0]);
    }

    #[test]
    fn median_follows_numpy() {
        assert_eq!(crate::stats::median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(crate::stats::median(&[4.0, 1.0, 3.0]), 3.0);
    }

    #[test]
    fn bad_shapes_name_the_problem() {
        let e = rhat_rank(&[1.0; 10], 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "diagnostics: rank-normalised R-hat needs at least 2 chain(s) of at least 4 draws, got 1 × 10"
        );
        assert!(matches!(ess_bulk(&[1.0; 10], 3), Err(DiagnosticsError::BadShape { len: 10, n_chains: 3 })));
        let mut x = vec![0.5; 8];
        x[5] = f64::NAN;
        assert!(matches!(ess_tail(&x, 2), Err(DiagnosticsError::NotFinite { chain: 1, draw: 1, .. })));
    }

    #[test]
    fn constant_draws_count_as_independent() {
        assert_eq!(ess_bulk(&[2.0; 40], 2).unwrap(), 40.0);
        assert!(rhat_rank(&[2.0; 40], 2).unwrap().is_nan());
    }
}
