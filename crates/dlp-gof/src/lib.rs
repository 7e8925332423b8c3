//! Goodness-of-fit tests for discrete distributions (the goodness-of-fit spec, `gof.md`).
//!
//! * [`kdsd`]: the kernelized discrete Stein discrepancy of Yang et al. (ICML 2018), spec §3,
//!   with the cyclic difference score and the *backward* shift in the Stein kernel (correct for
//!   K ≥ 3, spec §7.1), exp-Hamming (default) or Hamming-linear base kernels.
//! * [`gfksd`]: gradient-free KSD of Han et al. (AISTATS 2020, paper 004), spec §5: a continuous
//!   lift by even partition of N(0, I), a gaussian or relaxed surrogate, RBF kernel and
//!   self-normalised importance weights.
//! * [`mmd`]: squared MMD with the exp-Hamming kernel and a permutation test, against a second
//!   sample or against reference draws from the model (exact on small spaces), spec §6.
//! * [`bootstrap`]: the multinomial and Rademacher bootstraps and the p-value convention of
//!   spec §4, acting on a [`KernelMatrix`] that every replicate reuses.
//! * [`reference`]: draws from the model (exact by enumeration, or Gibbs), for MMD's one-sample
//!   form and for the model null [`model_replicates`] (a Monte Carlo test, exact level at any n
//!   with exact draws, where the bootstraps are only asymptotically calibrated).
//!
//! * [`null`]: [`GofNull`], the null distribution `dlp gof` and the Python package use (a
//!   bootstrap or the model null) and its p-value.
//!
//! Every random draw comes from [`stream`]`(seed, purpose, index)`, one ChaCha8 stream per
//! replicate / sample row / reference draw, so a seed gives bit-identical output for any
//! number of threads. Sums over the n × n matrix are done row by row in a fixed order.

pub mod bootstrap;
pub mod gfksd;
pub mod kdsd;
pub mod matrix;
pub mod mmd;
pub mod mmd_packed;
pub mod null;
pub mod reference;

pub use bootstrap::{Bootstrap, NullTest, Statistic, p_value};
pub use gfksd::{Bandwidth, GfksdOptions, GfksdOutcome, Relaxation, Surrogate, gfksd_test, relaxation_of};
pub use kdsd::{BaseKernel, KdsdOptions, KdsdOutcome, difference_scores, kdsd_matrix, kdsd_test, stein_kernel};
pub use matrix::KernelMatrix;
pub use mmd::{MmdOptions, MmdOutcome, mmd_test};
pub use mmd_packed::{MmdReference, mmd2_hamming_v};
pub use null::GofNull;
pub use reference::{ModelDraws, exact_draws, gibbs_draws, model_replicates};

use dlp_core::{ChainRng, chain_rng};

/// Errors of the statistics: parameters that make a test impossible, or a model whose
/// difference score overflows on the sample.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum GofError {
    /// Too few rows for the statistic (U needs n ≥ 2).
    #[error("too few samples: {n} (need at least {need})")]
    TooFewSamples {
        /// Rows given.
        n: usize,
        /// Rows needed.
        need: usize,
    },
    /// A parameter out of range; the message names it and its value.
    #[error("{0}")]
    Parameter(String),
    /// The multinomial bootstrap was asked for the V statistic.
    #[error("--bootstrap multinomial needs --statistic u")]
    MultinomialNeedsU,
    /// p(fwd x)/p(x) overflowed (or the Stein kernel did) at `sample` (1-based row).
    #[error("score overflow at sample {sample} (log-ratio {log_ratio:.0})")]
    ScoreOverflow {
        /// 1-based sample row.
        sample: usize,
        /// The largest log-ratio ℓ(fwd_i x) − ℓ(x) of that row.
        log_ratio: f64,
    },
    /// The relaxed surrogate needs a binary-valued model with a continuous extension.
    #[error("--surrogate relaxed needs an ising or rbm model")]
    RelaxedNeedsBinary,
    /// A state buffer that is not n whole rows of valid indices, or shapes that disagree.
    #[error("invalid input: {0}")]
    Shape(String),
    /// The model failed to evaluate (a device or Python callback target).
    #[error("{0}")]
    Eval(#[from] dlp_core::EvalError),
}

/// Purposes of the random streams (spec §4 "Reproducibility"): each gets its own family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Purpose {
    /// One stream per bootstrap or permutation replicate.
    Replicate = 1,
    /// One stream per sample row for the GF-KSD jitter.
    Jitter = 2,
    /// One stream per reference draw (exact draw or Gibbs chain) of MMD's one-sample form.
    Reference = 3,
    /// One stream per replicate data set of the model null ([`reference::model_replicates`]).
    Model = 4,
}

/// The stream for (seed, purpose, index): `chain_rng(seed, purpose · 2⁴⁰ + index)`, i.e. the
/// per-chain streams of dlp-core with the purpose in the high bits so families never overlap.
pub fn stream(seed: u64, purpose: Purpose, index: usize) -> ChainRng {
    debug_assert!((index as u64) < 1 << 40);
    chain_rng(seed, ((purpose as u64) << 40) as usize + index)
}

/// Checks that `xs` holds at least `min_n` whole rows of valid indices; returns n.
pub(crate) fn check_rows(space: &dlp_core::Space, xs: &[u32], min_n: usize) -> Result<usize, GofError> {
    space.check_states(xs).map_err(GofError::Shape)?;
    let n = xs.len() / space.d;
    if n < min_n {
        return Err(GofError::TooFewSamples { n, need: min_n });
    }
    Ok(n)
}
