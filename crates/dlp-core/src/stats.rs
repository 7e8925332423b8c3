//! Diagnostics and summaries: running means, effective sample size, quantiles, distances,
//! intervals, means with standard errors and least-squares slopes.

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

    /// Σ over chains and coordinates of (running mean − `truth[coordinate]`)², the numerator
    /// of the RMSE of running means against exact expectations (spec §3.2: RMSE over
    /// chains × sites). `truth` has one entry per coordinate; `sums` is `n_chains × d`.
    pub fn squared_error_sum(&self, truth: &[f64]) -> f64 {
        let d = truth.len().max(1);
        self.means().enumerate().map(|(k, m)| (m - truth[k % d]).powi(2)).sum()
    }
}

/// Natural log of the root mean square given a sum of squares over `count` entries.
pub fn log_rmse(squared_error_sum: f64, count: usize) -> f64 {
    0.5 * (squared_error_sum / count as f64).ln()
}

/// The `q`-quantile (0 ≤ q ≤ 1) of `values` with linear interpolation between order
/// statistics (numpy's default, "type 7"); NaN for an empty slice. NaNs sort last.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let h = (v.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

/// The median of `v` (the mean of the two middle values for an even count, as numpy's),
/// reordering `v` (a selection, O(n)); `None` when empty. Order is [`f64::total_cmp`]'s.
pub fn median_in_place(v: &mut [f64]) -> Option<f64> {
    let m = v.len();
    if m == 0 {
        return None;
    }
    let (lo_part, &mut hi, _) = v.select_nth_unstable_by(m / 2, f64::total_cmp);
    Some(if m % 2 == 1 {
        hi
    } else {
        // The largest of the lower half is the other middle value.
        0.5 * (lo_part.iter().copied().max_by(f64::total_cmp).unwrap_or(hi) + hi)
    })
}

/// The median of `values` (as numpy's); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    median_in_place(&mut values.to_vec()).unwrap_or(f64::NAN)
}

/// ‖p − q‖₁.
pub fn l1_distance(p: &[f64], q: &[f64]) -> f64 {
    p.iter().zip(q).map(|(a, b)| (a - b).abs()).sum()
}

/// Total variation ½‖p − q‖₁.
pub fn total_variation(p: &[f64], q: &[f64]) -> f64 {
    0.5 * l1_distance(p, q)
}

/// Total variation between the empirical law of the value indices `states` (each < p.len())
/// and the law `p`.
pub fn empirical_total_variation(states: &[u32], p: &[f64]) -> f64 {
    let mut h = vec![0.0; p.len()];
    for &z in states {
        h[z as usize] += 1.0 / states.len() as f64;
    }
    0.5 * h.iter().zip(p).map(|(a, b)| (a - b).abs()).sum::<f64>()
}

/// Wilson score interval (95%) for a binomial proportion k/r (Wilson 1927); for reporting.
pub fn wilson_interval(k: usize, r: usize) -> (f64, f64) {
    let z = 1.959_963_984_540_054_f64;
    let (k, r) = (k as f64, r as f64);
    let p = k / r;
    let denom = 1.0 + z * z / r;
    let centre = (p + z * z / (2.0 * r)) / denom;
    let half = z * (p * (1.0 - p) / r + z * z / (4.0 * r * r)).sqrt() / denom;
    // At k = 0 and k = r the bound is exactly 0 (or 1); the formula leaves rounding dust.
    let lo = if k == 0.0 { 0.0 } else { (centre - half).max(0.0) };
    let hi = if k == r { 1.0 } else { (centre + half).min(1.0) };
    (lo, hi)
}

/// The sample mean and the sample variance (divisor n − 1) of `values`; the variance is NaN
/// for fewer than two values and both are NaN when empty.
pub fn mean_variance(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var =
        if values.len() > 1 { values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { f64::NAN };
    (mean, var)
}

/// The sample mean of `values` and its standard error √(s²/n), s² the sample variance
/// ([`mean_variance`]); the error is NaN for fewer than two values.
pub fn mean_standard_error(values: &[f64]) -> (f64, f64) {
    let (mean, var) = mean_variance(values);
    (mean, (var / values.len() as f64).sqrt())
}

/// The ordinary least-squares slope Σ(x − x̄)(y − ȳ) / Σ(x − x̄)² of the points (x, y); NaN
/// for fewer than two points (and for equal x, where it is undefined).
pub fn least_squares_slope(points: &[(f64, f64)]) -> f64 {
    if points.len() < 2 {
        return f64::NAN;
    }
    let n = points.len() as f64;
    let (mx, my) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    sxy / sxx
}

/// The two-proportion z-score of k₁/n₁ against a reference proportion p₂ measured on n₂
/// trials, with the pooled standard error; 0 when that error is 0 (both proportions 0 or 1).
pub fn two_proportion_z(p1: f64, n1: f64, p2: f64, n2: f64) -> f64 {
    let pooled = (p1 * n1 + p2 * n2) / (n1 + n2);
    let se = (pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2)).sqrt();
    if se > 0.0 { (p1 - p2) / se } else { 0.0 }
}

/// DISCS's statistic of a state (google-research/discs, `experiment/sampling.py`,
/// `_get_mapped_samples`): Σ_i |x_i − r_i| over the category indices of the state and a
/// fixed reference state r. On binary and spin spaces this is the Hamming distance; on
/// categorical spaces DISCS's code takes the L1 distance between the integer category
/// indices (its states are index arrays there), which is what this computes too — it is not
/// the number of differing sites when K > 2.
pub fn discs_distance(x: &[u32], reference: &[u32]) -> f64 {
    // Summed as integers (exact, and the loop vectorises; an f64 sum is one serial chain of
    // d additions, 17% of a DMALA step on DISCS's 50 × 50 Ising), then converted once.
    x.iter().zip(reference).map(|(&a, &b)| a.abs_diff(b) as u64).sum::<u64>() as f64
}

/// DISCS's burn-in and kept lengths for `chain_length` steps and `ess_ratio` (its
/// `experiment.ess_ratio`, 0.5 by default): steps 1..=⌊L·r⌋ are burn-in, the remaining
/// L − ⌊L·r⌋ states are kept (`sampling.py`: `burn_in_length = int(L · r) + 1`).
pub fn discs_split(chain_length: usize, ess_ratio: f64) -> (usize, usize) {
    let burn = ((chain_length as f64) * ess_ratio).floor() as usize;
    (burn, chain_length - burn.min(chain_length))
}

/// DISCS's ESS of one run (its `evaluators/ess_eval.py`): each chain's kept statistic series
/// (`n_chains` rows of equal length, chain-major) gets TensorFlow Probability's
/// `effective_sample_size` on its own — the draws axis is axis 0 and no `cross_chain_dims`
/// is given, so chains are not pooled — which is [`ess_tfp`] (autocovariance with divisor
/// n − k, truncated at the first negative autocorrelation); a NaN (constant series) becomes
/// 1 (`nan_to_num(nan=1.0)`, as [`ess_tfp`] already does). The run's ESS is the mean over
/// chains, reported with the population standard deviation (`jnp.std`). DISCS computes in
/// float32; this computes in f64.
#[derive(Clone, Debug, PartialEq)]
pub struct DiscsEss {
    /// Mean over chains of the per-chain ESS (DISCS's reported ESS).
    pub mean: f64,
    /// Standard deviation over chains (divisor n_chains).
    pub std: f64,
    /// Each chain's ESS.
    pub per_chain: Vec<f64>,
}

impl DiscsEss {
    /// DISCS's ESS of `series`: `n_chains` chain-major rows of kept statistics.
    pub fn of(series: &[f64], n_chains: usize) -> DiscsEss {
        assert!(n_chains > 0 && series.len().is_multiple_of(n_chains), "series must be n_chains equal rows");
        let n = series.len() / n_chains;
        let per_chain: Vec<f64> =
            if n == 0 { vec![0.0; n_chains] } else { series.chunks_exact(n).map(ess_tfp).collect() };
        let mean = per_chain.iter().sum::<f64>() / n_chains as f64;
        let std = (per_chain.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / n_chains as f64).sqrt();
        DiscsEss { mean, std, per_chain }
    }

    /// ESS per energy evaluation by DISCS's convention (`ess_eval.py`,
    /// `_eval_over_num_ll_calls`): mean ESS / (`evaluations` × `ess_ratio`), where
    /// `evaluations` counts the whole run, burn-in included, once per step for the whole batch
    /// of chains (DISCS's `num_ll_calls` is one scalar per sampler state, incremented by the
    /// sampler's nominal count per step: randomwalk 2, gwg/dmala/dlmc 4, gibbs K,
    /// hammingball (K − 1)·block + 1, blockgibbs K^block, locally balanced and path auxiliary
    /// the model's neighbourhood calls — a value and a gradient count one each). With the
    /// default ratio 0.5 and a constant count per step this is ESS per evaluation of the
    /// kept half.
    pub fn per_evaluation(&self, evaluations: f64, ess_ratio: f64) -> f64 {
        self.mean / (evaluations * ess_ratio)
    }

    /// ESS per second (`_eval_over_time`): mean ESS / the wall time of the kept steps' sampler
    /// calls alone (DISCS times only `stp_mixing` after burn-in; statistic and ESS excluded).
    pub fn per_second(&self, seconds: f64) -> f64 {
        self.mean / seconds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_follow_numpy_and_the_interval_brackets_the_proportion() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[4.0, 1.0, 3.0]), 3.0);
        assert!(median(&[]).is_nan());
        assert_eq!(total_variation(&[0.5, 0.5], &[0.25, 0.75]), 0.25);
        assert_eq!(empirical_total_variation(&[0, 0, 1, 1], &[0.25, 0.75]), 0.25);
        // Wilson's interval for 5/10 at 95%: 0.5 ± 0.2800 (hand-computed: centre 0.5,
        // half-width z·sqrt(0.025 + z²/400)/(1 + z²/10)).
        let (lo, hi) = wilson_interval(5, 10);
        assert!((lo - 0.2366).abs() < 1e-4 && (hi - 0.7634).abs() < 1e-4, "{lo} {hi}");
        assert_eq!(wilson_interval(0, 10).0, 0.0);
        assert_eq!(wilson_interval(10, 10).1, 1.0);
    }

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

    #[test]
    fn quantiles_interpolate_like_numpy() {
        // numpy.quantile([1, 2, 3, 4], [0, .25, .5, .75, 1]) = 1, 1.75, 2.5, 3.25, 4.
        let v = [4.0, 1.0, 3.0, 2.0];
        let got: Vec<f64> = [0.0, 0.25, 0.5, 0.75, 1.0].iter().map(|&q| quantile(&v, q)).collect();
        assert_eq!(got, vec![1.0, 1.75, 2.5, 3.25, 4.0]);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn squared_errors_of_running_means_against_a_truth_vector() {
        // Two chains, d = 2, states (0,1) and (1,1) then (1,1) and (1,0) as ±1 spins:
        // chain 0 means (0, 1), chain 1 means (1, 0); truth (0.5, 0.5) → 4 × 0.25 = 1.
        let mut rm = RunningMean::new(4);
        let spin = |c: u32| 2.0 * c as f64 - 1.0;
        rm.add(&[0, 1, 1, 1], spin);
        rm.add(&[1, 1, 1, 0], spin);
        assert!((rm.squared_error_sum(&[0.5, 0.5]) - 1.0).abs() < 1e-12);
        assert!((log_rmse(1.0, 4) - 0.5f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn mean_variance_standard_error_and_slope_by_hand() {
        // [1, 2, 3, 6]: mean 3, squared deviations 4 + 1 + 0 + 9 = 14, s² = 14/3, se = √(14/12).
        let (m, v) = mean_variance(&[1.0, 2.0, 3.0, 6.0]);
        assert_eq!(m, 3.0);
        assert!((v - 14.0 / 3.0).abs() < 1e-15, "{v}");
        let (m, se) = mean_standard_error(&[1.0, 2.0, 3.0, 6.0]);
        assert!(m == 3.0 && (se - (14.0f64 / 12.0).sqrt()).abs() < 1e-15, "{se}");
        assert!(mean_variance(&[5.0]).1.is_nan() && mean_standard_error(&[5.0]).1.is_nan());
        // y = 3 − 2x exactly, then a point off the line: slope of (0,0),(1,1),(2,1) is ½
        // (x̄ = 1, ȳ = ⅔: Sxy = 1, Sxx = 2).
        let line: Vec<(f64, f64)> = (0..5).map(|i| (i as f64, 3.0 - 2.0 * i as f64)).collect();
        assert!((least_squares_slope(&line) + 2.0).abs() < 1e-15);
        assert!((least_squares_slope(&[(0.0, 0.0), (1.0, 1.0), (2.0, 1.0)]) - 0.5).abs() < 1e-15);
        assert!(least_squares_slope(&[(1.0, 2.0)]).is_nan());
    }

    #[test]
    fn two_proportion_z_by_hand() {
        // 0.6 of 100 against 0.4 of 100: pooled 0.5, se = √(0.25 · 0.02) = √0.005, z = 0.2/√0.005.
        let z = two_proportion_z(0.6, 100.0, 0.4, 100.0);
        assert!((z - 0.2 / 0.005f64.sqrt()).abs() < 1e-12, "{z}");
        assert!(two_proportion_z(0.0, 10.0, 0.0, 10.0) == 0.0 && two_proportion_z(0.4, 10.0, 0.6, 10.0) < 0.0);
    }

    #[test]
    fn discs_ess_by_hand() {
        // Statistic: reference (0, 2, 1) against states (1, 2, 3) → |1−0| + 0 + |3−1| = 3,
        // and (0, 0, 1) → 0 + 2 + 0 = 2 (index L1, not the 2 and 1 differing sites).
        assert_eq!(discs_distance(&[1, 2, 3], &[0, 2, 1]), 3.0);
        assert_eq!(discs_distance(&[0, 0, 1], &[0, 2, 1]), 2.0);
        // Chain 0 = (1, 1, 0, 0): mean ½, centred ±½, c0 = ¼, c1 = (¼ − ¼ + ¼)/3 = 1/12 so
        // ρ1 = ⅓, c2 = (−¼ − ¼)/2 < 0 stops. Σ = 1 + (3/4)(1/3) = 5/4, ESS = 4/(−1 + 5/2) = 8/3.
        // Chain 1 is constant: NaN in TFP, 1 after nan_to_num. Mean (8/3 + 1)/2 = 11/6,
        // population std |8/3 − 1|/2 = 5/6.
        let e = DiscsEss::of(&[1.0, 1.0, 0.0, 0.0, 2.0, 2.0, 2.0, 2.0], 2);
        assert!((e.per_chain[0] - 8.0 / 3.0).abs() < 1e-12, "{:?}", e.per_chain);
        assert_eq!(e.per_chain[1], 1.0);
        assert!((e.mean - 11.0 / 6.0).abs() < 1e-12 && (e.std - 5.0 / 6.0).abs() < 1e-12, "{e:?}");
        // 10 steps at 4 evaluations per step, ratio ½: 11/6 / 20; 11/6 per 2 s.
        assert!((e.per_evaluation(40.0, 0.5) - 11.0 / 120.0).abs() < 1e-12);
        assert!((e.per_second(2.0) - 11.0 / 12.0).abs() < 1e-12);
        // sampling.py: L = 100 000, r = ½ → 50 000 burn-in steps, 50 000 kept; L = 7 → 3, 4.
        assert_eq!(discs_split(100_000, 0.5), (50_000, 50_000));
        assert_eq!(discs_split(7, 0.5), (3, 4));
    }

    #[test]
    fn discs_ess_agrees_with_the_multi_chain_geyer_ess_on_ar1_chains() {
        // Eight stationary AR(1) chains, φ = ½, 50 000 draws each: the true ESS per chain is
        // n (1 − φ)/(1 + φ) = n/3. DISCS's per-chain mean × chains and ArviZ's pooled Geyer
        // ESS (`diagnostics::ess_geyer`, checked against ArviZ) estimate the same total. Each
        // per-chain estimate has a relative standard deviation of about √(2(2M + 1)/n) ≈ 4%
        // for a truncation lag M ≈ 20, so the mean of eight about 1.5%; the 10% band is over
        // six standard deviations (false failure < 1e-8 for a normal approximation; the seed
        // is fixed anyway).
        use rand::RngExt;
        let (chains, n, phi) = (8usize, 50_000usize, 0.5f64);
        let mut x = Vec::with_capacity(chains * n);
        for c in 0..chains {
            let mut rng = crate::rng::chain_rng(43, c);
            let mut v = 0.0f64;
            for t in 0..n + 100 {
                // Box–Muller from two uniforms (no distribution crate needed in a test).
                let (u1, u2): (f64, f64) = (rng.random::<f64>().max(1e-300), rng.random::<f64>());
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                v = phi * v + (1.0 - phi * phi).sqrt() * z;
                if t >= 100 {
                    x.push(v);
                }
            }
        }
        let truth = (chains * n) as f64 * (1.0 - phi) / (1.0 + phi);
        let discs = DiscsEss::of(&x, chains).mean * chains as f64;
        let geyer = crate::diagnostics::ess_geyer(&x, chains);
        assert!((discs / truth - 1.0).abs() < 0.1, "DISCS {discs} vs truth {truth}");
        assert!((geyer / truth - 1.0).abs() < 0.1, "Geyer {geyer} vs truth {truth}");
        assert!((discs / geyer - 1.0).abs() < 0.1, "DISCS {discs} vs Geyer {geyer}");
        // One chain: DISCS's ESS is the paper's single-series estimator itself.
        assert_eq!(DiscsEss::of(&x[..n], 1).mean, ess_tfp(&x[..n]));
    }
}
