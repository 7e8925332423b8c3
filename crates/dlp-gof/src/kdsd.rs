//! Kernelized discrete Stein discrepancy (Yang, Liu, Rao, Neville 2018; spec §3).
//!
//! Difference score s_i(x) = 1 − p(fwd_i x)/p(x) with the cyclic forward shift, Stein operator
//! (T_i g)(x) = s_i(x) g(x) − [g(x) − g(bwd_i x)] with the cyclic *backward* shift (using fwd
//! there is bug §7.1 of the spec, invisible for K = 2), and the Stein kernel κ of §3.2 on a base
//! kernel that depends only on which coordinates agree (exp-Hamming or Hamming-linear), so
//! every shifted kernel value is φ(H − 1), φ(H) or φ(H + 1) of the Hamming distance H and κ
//! costs O(d) per pair without materialising shifted states (spec §3.3 hint).

use crate::bootstrap::{NullOutcome, NullTest};
use crate::matrix::KernelMatrix;
use crate::{GofError, check_rows};
use dlp_core::TargetExt;
use dlp_core::{Space, Target};
use rayon::prelude::*;

/// Base kernels on V^d that depend only on the Hamming distance H(x, y) (spec §3.3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BaseKernel {
    /// exp(−λ H / d), λ > 0: strictly positive definite (the default, λ = 1).
    ExpHamming {
        /// λ (`--kernel-scale`).
        scale: f64,
    },
    /// 1 − H/d: PSD but not strictly PD, so D can vanish for q ≠ p (labelled option only).
    HammingLinear,
}

impl Default for BaseKernel {
    fn default() -> Self {
        BaseKernel::ExpHamming { scale: 1.0 }
    }
}

impl BaseKernel {
    /// "exp_hamming" or "hamming_linear", as in the output JSON.
    pub fn name(&self) -> &'static str {
        match self {
            BaseKernel::ExpHamming { .. } => "exp_hamming",
            BaseKernel::HammingLinear => "hamming_linear",
        }
    }

    /// k as a function of the Hamming distance `h` on d coordinates.
    #[inline]
    pub fn phi(&self, h: f64, d: usize) -> f64 {
        match *self {
            BaseKernel::ExpHamming { scale } => (-scale * h / d as f64).exp(),
            BaseKernel::HammingLinear => 1.0 - h / d as f64,
        }
    }

    /// k(x, y) for two index vectors.
    pub fn eval(&self, x: &[u32], y: &[u32]) -> f64 {
        let h = x.iter().zip(y).filter(|(a, b)| a != b).count();
        self.phi(h as f64, x.len())
    }

    /// Rejects λ ≤ 0 or non-finite λ.
    pub fn validate(&self) -> Result<(), GofError> {
        match *self {
            BaseKernel::ExpHamming { scale } if !(scale > 0.0 && scale.is_finite()) => {
                Err(GofError::Parameter(format!("--kernel-scale must be a positive number, got {scale}")))
            }
            _ => Ok(()),
        }
    }
}

/// s_i(x) = 1 − exp(ℓ(fwd_i x) − ℓ(x)) for every row of `xs` (n × d, row-major), rows in
/// parallel. Errors with the 1-based row when a ratio overflows (spec §10.5).
pub fn difference_scores(target: &dyn Target, xs: &[u32]) -> Result<Vec<f64>, GofError> {
    let space = target.space();
    let n = check_rows(space, xs, 0)?;
    let (d, k) = (space.d, space.k());
    let mut s = vec![0.0; n * d];
    s.par_chunks_mut(d).zip(xs.par_chunks(d)).try_for_each(|(srow, x)| {
        if k == 2 {
            // For K = 2 fwd_i is the flip of coordinate i.
            target.flip_deltas(x, srow)?;
        } else {
            let mut out = vec![0.0; k];
            for (i, si) in srow.iter_mut().enumerate() {
                target.coordinate_deltas(x, i, &mut out)?;
                *si = out[(x[i] as usize + 1) % k];
            }
        }
        Ok::<(), dlp_core::EvalError>(())
    })?;
    // Checked on the log-ratios themselves so the message can quote the offending value.
    if let Some(p) = s.iter().position(|r| !r.exp().is_finite()) {
        let a = p / d;
        let worst = s[a * d..(a + 1) * d].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        return Err(GofError::ScoreOverflow { sample: a + 1, log_ratio: worst });
    }
    for si in s.iter_mut() {
        *si = 1.0 - si.exp();
    }
    Ok(s)
}

/// The largest log-ratio ℓ(fwd_i x) − ℓ(x) = log(1 − s_i) of one row of scores.
fn max_log_ratio(s: &[f64]) -> f64 {
    s.iter().map(|&v| if v.is_finite() { (1.0 - v).ln() } else { f64::INFINITY }).fold(f64::NEG_INFINITY, f64::max)
}

/// κ(x, y) of spec §3.2 for index vectors x, y (K values per coordinate) with scores sx, sy.
///
/// With a_i = k − k(bwd_i x, y) and b_i = k − k(x, bwd_i y) (and k(bwd_i x, bwd_i y) = k),
/// κ = k Σ s_i(x)s_i(y) − Σ s_i(x) b_i − Σ s_i(y) a_i + Σ (a_i + b_i); a shift changes H by
/// [bwd(x_i) ≠ y_i] − [x_i ≠ y_i] ∈ {−1, 0, +1}, so a_i, b_i ∈ {φ(H) − φ(H ± 1), 0}.
pub fn stein_kernel(kernel: &BaseKernel, k: usize, x: &[u32], y: &[u32], sx: &[f64], sy: &[f64]) -> f64 {
    let d = x.len();
    let k = k as u32;
    let bwd = |c: u32| if c == 0 { k - 1 } else { c - 1 };
    let mut h = 0usize;
    let mut dot = 0.0;
    // Sums of s(x) over coordinates where shifting y moves H by +1 / −1, of s(y) where
    // shifting x does, and the numbers of such coordinates.
    let (mut sx_p, mut sx_m, mut sy_p, mut sy_m) = (0.0, 0.0, 0.0, 0.0);
    let (mut n_p, mut n_m) = (0usize, 0usize);
    for i in 0..d {
        let (xi, yi) = (x[i], y[i]);
        let delta = (xi != yi) as i32;
        dot += sx[i] * sy[i];
        h += delta as usize;
        match ((bwd(xi) != yi) as i32) - delta {
            1 => {
                sy_p += sy[i];
                n_p += 1;
            }
            -1 => {
                sy_m += sy[i];
                n_m += 1;
            }
            _ => {}
        }
        match ((xi != bwd(yi)) as i32) - delta {
            1 => {
                sx_p += sx[i];
                n_p += 1;
            }
            -1 => {
                sx_m += sx[i];
                n_m += 1;
            }
            _ => {}
        }
    }
    let hf = h as f64;
    let k0 = kernel.phi(hf, d);
    let dp = if n_p > 0 { k0 - kernel.phi(hf + 1.0, d) } else { 0.0 };
    let dm = if n_m > 0 { k0 - kernel.phi(hf - 1.0, d) } else { 0.0 };
    k0 * dot - (dp * sx_p + dm * sx_m) - (dp * sy_p + dm * sy_m) + dp * n_p as f64 + dm * n_m as f64
}

/// [`stein_kernel`] for K = 2, branch-free: every coordinate where x and y agree moves H by +1
/// under either shift, every disagreeing one by −1, so with D = Σ_{x_i≠y_i} (s_i(x) + s_i(y))
/// and `total` = Σ_i (s_i(x) + s_i(y)),
/// κ = k·s(x)·s(y) − Δ₊(total − D) − Δ₋ D + 2Δ₊(d − H) + 2Δ₋ H.
/// Four lane accumulators in a fixed order let the loop vectorise deterministically.
fn binary_stein_kernel(kernel: &BaseKernel, x: &[u32], y: &[u32], sx: &[f64], sy: &[f64], total: f64) -> f64 {
    let d = x.len();
    let (mut dot, mut hh, mut dis) = ([0.0f64; 4], [0.0f64; 4], [0.0f64; 4]);
    let main = d - d % 4;
    for c in (0..main).step_by(4) {
        for l in 0..4 {
            let i = c + l;
            let m = (x[i] ^ y[i]) as f64;
            dot[l] += sx[i] * sy[i];
            hh[l] += m;
            dis[l] += m * (sx[i] + sy[i]);
        }
    }
    for i in main..d {
        let m = (x[i] ^ y[i]) as f64;
        dot[0] += sx[i] * sy[i];
        hh[0] += m;
        dis[0] += m * (sx[i] + sy[i]);
    }
    let sum4 = |v: [f64; 4]| (v[0] + v[1]) + (v[2] + v[3]);
    let (dot, h, dis) = (sum4(dot), sum4(hh), sum4(dis));
    let k0 = kernel.phi(h, d);
    let dp = if h < d as f64 { k0 - kernel.phi(h + 1.0, d) } else { 0.0 };
    let dm = if h > 0.0 { k0 - kernel.phi(h - 1.0, d) } else { 0.0 };
    k0 * dot - dp * (total - dis) - dm * dis + 2.0 * dp * (d as f64 - h) + 2.0 * dm * h
}

/// The n × n KDSD matrix H_ab = κ(x_a, x_b) for rows `xs` with scores `scores` (both n × d).
pub fn kdsd_matrix(space: &Space, xs: &[u32], scores: &[f64], kernel: &BaseKernel) -> KernelMatrix {
    let d = space.d;
    let n = xs.len() / d;
    assert_eq!(scores.len(), xs.len(), "scores and samples differ in shape");
    let k = space.k();
    if k == 2 {
        let totals: Vec<f64> = scores.chunks(d).map(|r| r.iter().sum()).collect();
        return KernelMatrix::from_upper(n, |a, b| {
            let (ra, rb) = (a * d..(a + 1) * d, b * d..(b + 1) * d);
            binary_stein_kernel(
                kernel,
                &xs[ra.clone()],
                &xs[rb.clone()],
                &scores[ra],
                &scores[rb],
                totals[a] + totals[b],
            )
        });
    }
    KernelMatrix::from_upper(n, |a, b| {
        stein_kernel(
            kernel,
            k,
            &xs[a * d..(a + 1) * d],
            &xs[b * d..(b + 1) * d],
            &scores[a * d..(a + 1) * d],
            &scores[b * d..(b + 1) * d],
        )
    })
}

/// Options of a KDSD test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KdsdOptions {
    /// Base kernel (default exp-Hamming, λ = 1).
    pub kernel: BaseKernel,
    /// Statistic, bootstrap, replicates, seed.
    pub null: NullTest,
}

/// Result of a KDSD test.
#[derive(Clone, Debug, PartialEq)]
pub struct KdsdOutcome {
    /// Statistic, replicates and p-value.
    pub null: NullOutcome,
    /// The Stein kernel matrix.
    pub matrix: KernelMatrix,
}

/// KDSD test of the rows `xs` (n × d indices, n ≥ 2) against `target`.
pub fn kdsd_test(target: &dyn Target, xs: &[u32], opts: &KdsdOptions) -> Result<KdsdOutcome, GofError> {
    opts.kernel.validate()?;
    opts.null.validate()?;
    let space = target.space();
    check_rows(space, xs, 2)?;
    let scores = difference_scores(target, xs)?;
    let matrix = kdsd_matrix(space, xs, &scores, &opts.kernel);
    if !matrix.is_finite() {
        // Finite scores whose products overflow: name the row with the largest log-ratio,
        // the sample that makes its whole row and column non-finite.
        let d = space.d;
        let (a, r) = scores
            .chunks(d)
            .map(max_log_ratio)
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |best, (a, r)| if r > best.1 { (a, r) } else { best });
        return Err(GofError::ScoreOverflow { sample: a + 1, log_ratio: r });
    }
    let null = opts.null.run(&matrix)?;
    Ok(KdsdOutcome { null, matrix })
}
