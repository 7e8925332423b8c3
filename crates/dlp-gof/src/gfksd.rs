//! Gradient-free kernelized Stein discrepancy on a continuous lift (Han et al. 2020, paper
//! 004; spec §5).
//!
//! Each discrete sample is lifted to ℝ^d by the even partition of N(0, I): coordinate value
//! index c becomes Φ⁻¹((c + u)/K) with jitter u ~ U(0,1), an exact draw from the lifted law
//! q_c. The Langevin Stein kernel of a surrogate ρ (gaussian, or the relaxed model for
//! binary-valued Ising/RBM) with an RBF base kernel is importance-weighted by
//! w = ρ/p_c, self-normalised so the statistic is free of normalising constants.
//! Han et al. do not state the test kernel; RBF with the median bandwidth is our choice (§7.8).

use crate::bootstrap::{NullOutcome, NullTest};
use crate::matrix::KernelMatrix;
use crate::{GofError, Purpose, check_rows, stream};
use dlp_core::Target;
use dlp_core::TargetExt;
/// The lift, its surrogates and relaxations live in `dlp_core::lift`, shared with GF-SVGD.
pub use dlp_core::lift::{Relaxation, Surrogate, lift, normal_quantile, surrogate_scores};

/// The continuous relaxation the `relaxed` surrogate needs, from `target`'s Ising or RBM view
/// (`None` for other targets); `dlp gof` and the Python package both take it from here.
pub fn relaxation_of(target: &dyn dlp_core::Target) -> Option<Relaxation> {
    Relaxation::from_capabilities(&target.capabilities())
}
use rand::RngExt;
use rayon::prelude::*;

/// RBF bandwidth h of spec §5.3.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bandwidth {
    /// Median of the pairwise Euclidean distances of the lifted sample (1 if that is 0).
    Median,
    /// A fixed positive h.
    Fixed(f64),
}

/// Options of a GF-KSD test.
#[derive(Clone, Debug, PartialEq)]
pub struct GfksdOptions {
    /// Surrogate (default gaussian).
    pub surrogate: Surrogate,
    /// Bandwidth (default median).
    pub bandwidth: Bandwidth,
    /// Statistic, bootstrap (default multinomial), replicates, seed.
    pub null: NullTest,
    /// Jitter u (n × d, entries in (0,1)); `None` draws it from `stream(seed, Jitter, row)`.
    pub jitter: Option<Vec<f64>>,
}

/// Result of a GF-KSD test.
#[derive(Clone, Debug, PartialEq)]
pub struct GfksdOutcome {
    /// Statistic, replicates and p-value.
    pub null: NullOutcome,
    /// The bandwidth h used.
    pub bandwidth: f64,
    /// Self-normalised weights w̄ (mean 1).
    pub weights: Vec<f64>,
    /// ESS = (Σ w̄)² / Σ w̄².
    pub ess: f64,
    /// Lifted points (n × d).
    pub lifted: Vec<f64>,
}

/// Jitter for n rows of d coordinates: row a from `stream(seed, Jitter, a)`, uniform on the
/// open interval (0, 1) (an exact 0 is redrawn).
pub fn draw_jitter(n: usize, d: usize, seed: u64) -> Vec<f64> {
    let mut u = vec![0.0; n * d];
    u.par_chunks_mut(d.max(1)).enumerate().for_each(|(a, row)| {
        let mut rng = stream(seed, Purpose::Jitter, a);
        for v in row.iter_mut() {
            *v = loop {
                let t: f64 = rng.random();
                if t > 0.0 {
                    break t;
                }
            };
        }
    });
    u
}

/// Median of ‖x_a − x_b‖ over pairs a < b (even count: mean of the middle two; 1 if 0).
pub fn median_bandwidth(points: &[f64], d: usize) -> f64 {
    let n = points.len() / d;
    let mut dist: Vec<f64> = (0..n)
        .into_par_iter()
        .flat_map_iter(|a| {
            let pa = &points[a * d..(a + 1) * d];
            (a + 1..n).map(move |b| sq_dist(pa, &points[b * d..(b + 1) * d]).sqrt())
        })
        .collect();
    if dist.is_empty() {
        return 1.0;
    }
    let m = dist.len();
    let (_, &mut hi, _) = dist.select_nth_unstable_by(m / 2, f64::total_cmp);
    let med = if m % 2 == 1 {
        hi
    } else {
        let lo = dist[..m / 2].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        0.5 * (lo + hi)
    };
    if med > 0.0 { med } else { 1.0 }
}

fn sq_dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// κ_ρ(x, y) = k [s(x)·s(y) + (s(x)·r − s(y)·r)/h² + d/h² − ‖r‖²/h⁴], r = x − y,
/// k = exp(−‖r‖²/(2h²)) (spec §5.3).
pub fn rbf_stein_kernel(x: &[f64], y: &[f64], sx: &[f64], sy: &[f64], h: f64) -> f64 {
    let d = x.len();
    let h2 = h * h;
    let (mut r2, mut ss, mut sxr, mut syr) = (0.0, 0.0, 0.0, 0.0);
    for i in 0..d {
        let r = x[i] - y[i];
        r2 += r * r;
        ss += sx[i] * sy[i];
        sxr += sx[i] * r;
        syr += sy[i] * r;
    }
    let k = (-r2 / (2.0 * h2)).exp();
    k * (ss + (sxr - syr) / h2 + d as f64 / h2 - r2 / (h2 * h2))
}

/// GF-KSD test of rows `xs` (n × d indices, n ≥ 2) against `target` (spec §5).
pub fn gfksd_test(target: &dyn Target, xs: &[u32], opts: &GfksdOptions) -> Result<GfksdOutcome, GofError> {
    opts.null.validate()?;
    let space = target.space();
    let d = space.d;
    let n = check_rows(space, xs, 2)?;
    if let Surrogate::Relaxed(rel) = &opts.surrogate {
        if space.k() != 2 {
            return Err(GofError::RelaxedNeedsBinary);
        }
        if !rel.fits(d) {
            return Err(GofError::Shape(format!("relaxed surrogate parameters do not fit d = {d}")));
        }
    }
    if let Bandwidth::Fixed(h) = opts.bandwidth
        && !(h > 0.0 && h.is_finite())
    {
        return Err(GofError::Parameter(format!("--bandwidth must be \"median\" or a positive number, got {h}")));
    }
    let jitter = match &opts.jitter {
        Some(u) => {
            if u.len() != xs.len() {
                return Err(GofError::Shape(format!("jitter has {} values, samples have {}", u.len(), xs.len())));
            }
            if let Some(p) = u.iter().position(|&v| !(v > 0.0 && v < 1.0)) {
                return Err(GofError::Shape(format!(
                    "jitter value {} at row {}, column {} is outside (0, 1)",
                    u[p],
                    p / d + 1,
                    p % d + 1
                )));
            }
            u.clone()
        }
        None => draw_jitter(n, d, opts.null.seed),
    };
    let lifted = lift(space, xs, &jitter);
    let h = match opts.bandwidth {
        Bandwidth::Median => median_bandwidth(&lifted, d),
        Bandwidth::Fixed(h) => h,
    };
    let (scores, big_l) = surrogate_scores(&opts.surrogate, &lifted, d);
    let mut ell = vec![0.0; n];
    target.log_density_batch(xs, &mut ell)?;
    let log_w: Vec<f64> = big_l.iter().zip(&ell).map(|(l, e)| l - e).collect();
    let max = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() || log_w.iter().any(|v| !v.is_finite()) {
        let a = log_w.iter().position(|v| !v.is_finite()).unwrap_or(0);
        return Err(GofError::ScoreOverflow { sample: a + 1, log_ratio: log_w[a] });
    }
    let raw: Vec<f64> = log_w.iter().map(|v| (v - max).exp()).collect();
    let mean = raw.iter().sum::<f64>() / n as f64;
    let weights: Vec<f64> = raw.iter().map(|w| w / mean).collect();
    let ess = weights.iter().sum::<f64>().powi(2) / weights.iter().map(|w| w * w).sum::<f64>();
    let matrix = KernelMatrix::from_upper(n, |a, b| {
        weights[a]
            * rbf_stein_kernel(
                &lifted[a * d..(a + 1) * d],
                &lifted[b * d..(b + 1) * d],
                &scores[a * d..(a + 1) * d],
                &scores[b * d..(b + 1) * d],
                h,
            )
            * weights[b]
    });
    let null = opts.null.run(&matrix)?;
    Ok(GfksdOutcome { null, bandwidth: h, weights, ess, lifted })
}
