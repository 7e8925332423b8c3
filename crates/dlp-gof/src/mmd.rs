//! Squared MMD with the exp-Hamming kernel and a permutation test (Gretton et al. 2012;
//! spec §6). The pooled (n + m) × (n + m) Gram matrix is computed once; each permutation is
//! one quadratic form zᵀK⁰z in the indicator z of the permuted X rows, from which every block
//! sum follows: S_xy = cᵀz − S_xx (c = row sums of K⁰), S_yy = 1ᵀK⁰1 − S_xx − 2 S_xy.

use crate::bootstrap::{Statistic, p_value, replicates};
use crate::kdsd::BaseKernel;
use crate::matrix::KernelMatrix;
use crate::{GofError, check_rows};
use dlp_core::Space;
use rand::seq::SliceRandom;

/// Options of an MMD test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MmdOptions {
    /// λ of the exp-Hamming kernel (default 1).
    pub scale: f64,
    /// U (MMD²_u, default) or V (MMD²_b).
    pub statistic: Statistic,
    /// Number of permutations B ≥ 1.
    pub reps: usize,
    /// Seed of the permutation streams.
    pub seed: u64,
}

/// Result of an MMD test.
#[derive(Clone, Debug, PartialEq)]
pub struct MmdOutcome {
    /// MMD²_u or MMD²_b of the given split.
    pub statistic: f64,
    /// The statistic of each permutation, in replicate order.
    pub replicates: Vec<f64>,
    /// (1 + #{T* ≥ T}) / (B + 1).
    pub p_value: f64,
    /// Rows of X.
    pub n: usize,
    /// Rows of Y.
    pub m: usize,
}

/// Block sums of the pooled Gram matrix for one split.
struct Split {
    sxx: f64,
    syy: f64,
    sxy: f64,
    dx: f64,
    dy: f64,
}

fn mmd_value(s: &Split, n: f64, m: f64, statistic: Statistic) -> f64 {
    match statistic {
        Statistic::U => s.sxx / (n * (n - 1.0)) + s.syy / (m * (m - 1.0)) - 2.0 * s.sxy / (n * m),
        Statistic::V => (s.sxx + s.dx) / (n * n) + (s.syy + s.dy) / (m * m) - 2.0 * s.sxy / (n * m),
    }
}

/// MMD²_u or MMD²_b of X = `xs` (n × d) and Y = `ys` (m × d) with exp-Hamming scale λ.
pub fn mmd_statistic(space: &Space, xs: &[u32], ys: &[u32], scale: f64, statistic: Statistic) -> Result<f64, GofError> {
    Ok(mmd_test(space, xs, ys, &MmdOptions { scale, statistic, reps: 1, seed: 0 })?.statistic)
}

/// Permutation test of X = `xs` against Y = `ys` (n, m ≥ 2).
pub fn mmd_test(space: &Space, xs: &[u32], ys: &[u32], opts: &MmdOptions) -> Result<MmdOutcome, GofError> {
    let kernel = BaseKernel::ExpHamming { scale: opts.scale };
    kernel.validate()?;
    if opts.reps < 1 {
        return Err(GofError::Parameter("--reps must be at least 1".into()));
    }
    let n = check_rows(space, xs, 2)?;
    let m = check_rows(space, ys, 2)?;
    let d = space.d;
    let total = n + m;
    let row = |a: usize| if a < n { &xs[a * d..(a + 1) * d] } else { &ys[(a - n) * d..(a - n + 1) * d] };
    let gram = KernelMatrix::from_upper(total, |a, b| kernel.eval(row(a), row(b)));

    // Observed split, summed directly from the blocks (no cancellation).
    let mut obs = Split { sxx: 0.0, syy: 0.0, sxy: 0.0, dx: 0.0, dy: 0.0 };
    for a in 0..total {
        let r = gram.off_row(a);
        if a < n {
            obs.sxx += r[..n].iter().sum::<f64>();
            obs.sxy += r[n..].iter().sum::<f64>();
            obs.dx += gram.diag()[a];
        } else {
            obs.syy += r[n..].iter().sum::<f64>();
            obs.dy += gram.diag()[a];
        }
    }
    let (nf, mf) = (n as f64, m as f64);
    let statistic = mmd_value(&obs, nf, mf, opts.statistic);

    let rowsum: Vec<f64> = (0..total).map(|a| gram.off_row(a).iter().sum()).collect();
    let all: f64 = rowsum.iter().sum();
    let diag_total: f64 = gram.trace();
    let stat = opts.statistic;
    let reps = replicates(
        &gram,
        opts.reps,
        opts.seed,
        |rng, z| {
            let mut idx: Vec<usize> = (0..total).collect();
            idx.shuffle(rng);
            z.fill(0.0);
            for &i in &idx[..n] {
                z[i] = 1.0;
            }
        },
        |q, z| {
            let cz: f64 = rowsum.iter().zip(z).map(|(c, zi)| c * zi).sum();
            let dx: f64 = gram.diag().iter().zip(z).map(|(g, zi)| g * zi).sum();
            let sxy = cz - q;
            let s = Split { sxx: q, syy: all - q - 2.0 * sxy, sxy, dx, dy: diag_total - dx };
            mmd_value(&s, nf, mf, stat)
        },
    );
    let p = p_value(statistic, &reps);
    Ok(MmdOutcome { statistic, replicates: reps, p_value: p, n, m })
}
