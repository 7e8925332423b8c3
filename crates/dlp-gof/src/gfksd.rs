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
use dlp_core::math::{sigmoid, softplus};
use dlp_core::{Space, Target};
use rand::RngExt;
use rayon::prelude::*;

/// Φ⁻¹(p) = −√2 erfc⁻¹(2p), via statrs' port of Boost's inverse erfc (about 1e-15 relative).
pub fn normal_quantile(p: f64) -> f64 {
    -std::f64::consts::SQRT_2 * statrs::function::erf::erfc_inv(2.0 * p)
}

/// A continuous extension ℓ̃ of a binary-valued model (spec §5.2), on real values v with the
/// two values (v₀, v₁) of the domain.
#[derive(Clone, Debug, PartialEq)]
pub enum Relaxation {
    /// ℓ̃(v) = bᵀv + ½ vᵀJv, ∇ℓ̃ = b + Jv (J symmetric, zero diagonal, d × d row-major).
    Ising {
        /// (v₀, v₁): (−1, 1) for spin, (0, 1) for binary.
        values: (f64, f64),
        /// J, d × d row-major.
        j: Vec<f64>,
        /// b, length d.
        b: Vec<f64>,
    },
    /// ℓ̃(v) = bᵀv + Σ_k softplus(c_k + Σ_i W_ik v_i), ∇ℓ̃ = b + W σ(c + Wᵀv).
    Rbm {
        /// (v₀, v₁) of the visible units.
        values: (f64, f64),
        /// W, d × M row-major.
        w: Vec<f64>,
        /// b, length d.
        b: Vec<f64>,
        /// c, length M.
        c: Vec<f64>,
    },
}

impl Relaxation {
    /// (v₀, v₁).
    pub fn values(&self) -> (f64, f64) {
        match self {
            Relaxation::Ising { values, .. } | Relaxation::Rbm { values, .. } => *values,
        }
    }

    /// ℓ̃(v), writing ∇ℓ̃(v) into `grad` (length d).
    pub fn log_density_grad(&self, v: &[f64], grad: &mut [f64]) -> f64 {
        let d = v.len();
        match self {
            Relaxation::Ising { j, b, .. } => {
                let mut f = 0.0;
                for i in 0..d {
                    let jv: f64 = (0..d).map(|l| j[i * d + l] * v[l]).sum();
                    grad[i] = b[i] + jv;
                    f += b[i] * v[i] + 0.5 * v[i] * jv;
                }
                f
            }
            Relaxation::Rbm { w, b, c, .. } => {
                let m = c.len();
                let mut f: f64 = b.iter().zip(v).map(|(bi, vi)| bi * vi).sum();
                grad.copy_from_slice(b);
                for k in 0..m {
                    let t = c[k] + (0..d).map(|i| w[i * m + k] * v[i]).sum::<f64>();
                    f += softplus(t);
                    let sg = sigmoid(t);
                    for i in 0..d {
                        grad[i] += w[i * m + k] * sg;
                    }
                }
                f
            }
        }
    }
}

/// The surrogate ρ of spec §5.2.
#[derive(Clone, Debug, PartialEq)]
pub enum Surrogate {
    /// ρ = N(0, I), s_ρ(x) = −x (any domain).
    Gaussian,
    /// ρ ∝ p₀(x) exp(ℓ̃(Γ̃(x))), Γ̃(x)_i = v₀ + (v₁ − v₀) σ(x_i).
    Relaxed(Relaxation),
}

impl Surrogate {
    /// "gaussian" or "relaxed".
    pub fn name(&self) -> &'static str {
        match self {
            Surrogate::Gaussian => "gaussian",
            Surrogate::Relaxed(_) => "relaxed",
        }
    }
}

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

/// x_{a,i} = Φ⁻¹((c_{a,i} + u_{a,i}) / K) (spec §5.1).
pub fn lift(space: &Space, xs: &[u32], jitter: &[f64]) -> Vec<f64> {
    let k = space.k() as f64;
    xs.iter().zip(jitter).map(|(&c, &u)| normal_quantile((c as f64 + u) / k)).collect()
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

/// Surrogate scores s_ρ (n × d) and log-surrogate terms L(x) (length n) of lifted points.
pub fn surrogate_scores(surrogate: &Surrogate, lifted: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
    let n = lifted.len() / d;
    let mut s = vec![0.0; n * d];
    let mut l = vec![0.0; n];
    s.par_chunks_mut(d).zip(l.par_iter_mut()).zip(lifted.par_chunks(d)).for_each(|((srow, la), x)| match surrogate {
        Surrogate::Gaussian => {
            for (si, xi) in srow.iter_mut().zip(x) {
                *si = -xi;
            }
        }
        Surrogate::Relaxed(rel) => {
            let (v0, v1) = rel.values();
            let sig: Vec<f64> = x.iter().map(|&t| sigmoid(t)).collect();
            let v: Vec<f64> = sig.iter().map(|&g| v0 + (v1 - v0) * g).collect();
            let mut grad = vec![0.0; d];
            *la = rel.log_density_grad(&v, &mut grad);
            for i in 0..d {
                srow[i] = -x[i] + grad[i] * (v1 - v0) * sig[i] * (1.0 - sig[i]);
            }
        }
    });
    (s, l)
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
        let dims_ok = match rel {
            Relaxation::Ising { j, b, .. } => j.len() == d * d && b.len() == d,
            Relaxation::Rbm { w, b, c, .. } => b.len() == d && w.len() == d * c.len(),
        };
        if !dims_ok {
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
    target.log_density_batch(xs, &mut ell);
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
