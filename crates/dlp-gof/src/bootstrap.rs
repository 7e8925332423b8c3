//! Null distributions by resampling (spec §4): the multinomial ("weighted") bootstrap paired
//! with U, the Rademacher wild bootstrap for U or V, and the p-value convention
//! p = (1 + #{T*_b ≥ T}) / (B + 1).
//!
//! Every replicate is a quadratic form in the same [`KernelMatrix`] (never recomputed), and
//! replicate b draws only from `stream(seed, Replicate, b)`, so p-values do not depend on the
//! thread count.

use crate::matrix::{BLOCK, KernelMatrix};
use crate::{GofError, Purpose, stream};
use dlp_core::ChainRng;
use rand::RngExt;
use rayon::prelude::*;

/// Which statistic a test reports (spec §3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Statistic {
    /// Unbiased U-statistic (diagonal excluded), the default.
    U,
    /// Biased V-statistic (diagonal included).
    V,
}

impl Statistic {
    /// "u" or "v", as on the command line and in the output JSON.
    pub fn name(self) -> &'static str {
        match self {
            Statistic::U => "u",
            Statistic::V => "v",
        }
    }
}

/// Which bootstrap produces the null distribution (spec §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bootstrap {
    /// Multinomial weights ω = (m − 1)/n, T* = ωᵀH⁰ω; U only.
    Multinomial,
    /// Rademacher signs ε, T* = εᵀH⁰ε/(n(n−1)) for U or εᵀHε/n² for V.
    Rademacher,
}

impl Bootstrap {
    /// "multinomial" or "rademacher".
    pub fn name(self) -> &'static str {
        match self {
            Bootstrap::Multinomial => "multinomial",
            Bootstrap::Rademacher => "rademacher",
        }
    }
}

/// p = (1 + #{b : T*_b ≥ T}) / (B + 1): never 0, ties count against rejection (spec §4).
pub fn p_value(statistic: f64, replicates: &[f64]) -> f64 {
    let exceed = replicates.iter().filter(|&&t| t >= statistic).count();
    (1 + exceed) as f64 / (replicates.len() + 1) as f64
}

/// Checks `reps ≥ 1` and `0 < alpha < 1` with the CLI's wording (spec §10.5).
pub fn check_reps_alpha(reps: usize, alpha: f64) -> Result<(), GofError> {
    if reps < 1 {
        return Err(GofError::Parameter("--reps must be at least 1".into()));
    }
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(GofError::Parameter("--alpha must be in (0, 1)".into()));
    }
    Ok(())
}

/// A bootstrap test on a statistic's matrix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NullTest {
    /// U or V.
    pub statistic: Statistic,
    /// Multinomial (U only) or Rademacher.
    pub bootstrap: Bootstrap,
    /// Number of replicates B ≥ 1.
    pub reps: usize,
    /// Seed of the replicate streams.
    pub seed: u64,
}

/// A statistic with its bootstrap replicates and p-value.
#[derive(Clone, Debug, PartialEq)]
pub struct NullOutcome {
    /// The observed statistic T.
    pub statistic: f64,
    /// T*_1..T*_B in replicate order.
    pub replicates: Vec<f64>,
    /// (1 + #{T* ≥ T}) / (B + 1).
    pub p_value: f64,
}

impl NullTest {
    /// Rejects the multinomial bootstrap with V and B = 0 (spec §4, §10.5).
    pub fn validate(&self) -> Result<(), GofError> {
        if self.bootstrap == Bootstrap::Multinomial && self.statistic == Statistic::V {
            return Err(GofError::MultinomialNeedsU);
        }
        if self.reps < 1 {
            return Err(GofError::Parameter("--reps must be at least 1".into()));
        }
        Ok(())
    }

    /// The observed statistic of `m`.
    pub fn statistic_of(&self, m: &KernelMatrix) -> f64 {
        match self.statistic {
            Statistic::U => m.u_statistic(),
            Statistic::V => m.v_statistic(),
        }
    }

    /// Statistic, B replicates and p-value.
    pub fn run(&self, m: &KernelMatrix) -> Result<NullOutcome, GofError> {
        self.validate()?;
        if m.n() < 2 {
            return Err(GofError::TooFewSamples { n: m.n(), need: 2 });
        }
        let statistic = self.statistic_of(m);
        let n = m.n();
        let nf = n as f64;
        let trace = m.trace();
        let replicates = match self.bootstrap {
            Bootstrap::Multinomial => replicates(m, self.reps, self.seed, multinomial_draw, |q, _| q),
            Bootstrap::Rademacher => {
                let stat = self.statistic;
                replicates(
                    m,
                    self.reps,
                    self.seed,
                    |rng, w| {
                        for e in w.iter_mut() {
                            *e = if rng.random::<bool>() { 1.0 } else { -1.0 };
                        }
                    },
                    move |q, _| rademacher_scale(q, trace, nf, stat),
                )
            }
        };
        let p_value = p_value(statistic, &replicates);
        Ok(NullOutcome { statistic, replicates, p_value })
    }
}

fn rademacher_scale(q: f64, trace: f64, n: f64, statistic: Statistic) -> f64 {
    match statistic {
        Statistic::U => q / (n * (n - 1.0)),
        // ε_a² = 1, so the diagonal adds the trace to εᵀHε.
        Statistic::V => (q + trace) / (n * n),
    }
}

/// Multinomial(n; 1/n, …) counts from n uniform picks, turned into ω_a = (m_a − 1)/n.
fn multinomial_draw(rng: &mut ChainRng, w: &mut [f64]) {
    let n = w.len();
    let mut counts = vec![0u32; n];
    for _ in 0..n {
        counts[rng.random_range(0..n)] += 1;
    }
    for (wa, &m) in w.iter_mut().zip(&counts) {
        *wa = (m as f64 - 1.0) / n as f64;
    }
}

/// Runs `reps` replicates: replicate b fills its weight vector from `stream(seed, Replicate,
/// b)` with `fill`, and its value is `finish(wᵀH⁰w, w)`. Blocks of [`BLOCK`] replicates run in
/// parallel; results are in replicate order.
pub fn replicates<F, G>(m: &KernelMatrix, reps: usize, seed: u64, fill: F, finish: G) -> Vec<f64>
where
    F: Fn(&mut ChainRng, &mut [f64]) + Sync,
    G: Fn(f64, &[f64]) -> f64 + Sync,
{
    let n = m.n();
    let blocks = reps.div_ceil(BLOCK);
    let per_block: Vec<Vec<f64>> = (0..blocks)
        .into_par_iter()
        .map(|blk| {
            let lanes = (reps - blk * BLOCK).min(BLOCK);
            let mut ws = vec![vec![0.0; n]; lanes];
            let mut inter = vec![0.0; n * BLOCK];
            for (r, w) in ws.iter_mut().enumerate() {
                let mut rng = stream(seed, Purpose::Replicate, blk * BLOCK + r);
                fill(&mut rng, w);
                for (a, &v) in w.iter().enumerate() {
                    inter[a * BLOCK + r] = v;
                }
            }
            let q = m.quadratic_forms(&inter);
            ws.iter().enumerate().map(|(r, w)| finish(q[r], w)).collect()
        })
        .collect();
    per_block.into_iter().flatten().collect()
}

/// One multinomial replicate for given counts (m_1..m_n), Σ m = n: ωᵀH⁰ω with ω = (m − 1)/n.
pub fn multinomial_replicate(m: &KernelMatrix, counts: &[u32]) -> f64 {
    let n = m.n() as f64;
    let w: Vec<f64> = counts.iter().map(|&c| (c as f64 - 1.0) / n).collect();
    m.quadratic_form(&w)
}

/// One Rademacher replicate for given signs ε (entries ±1), scaled for `statistic`.
pub fn rademacher_replicate(m: &KernelMatrix, eps: &[f64], statistic: Statistic) -> f64 {
    rademacher_scale(m.quadratic_form(eps), m.trace(), m.n() as f64, statistic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_value_counts_ties_against_rejection_and_is_never_zero() {
        assert_eq!(p_value(1.0, &[0.0, 1.0, 2.0]), 0.75);
        assert_eq!(p_value(5.0, &[0.0, 1.0, 2.0]), 0.25);
    }

    #[test]
    fn multinomial_weights_are_centred_and_replicates_do_not_depend_on_block_layout() {
        let mut rng = stream(3, Purpose::Replicate, 0);
        let mut w = vec![0.0; 50];
        multinomial_draw(&mut rng, &mut w);
        assert!(w.iter().sum::<f64>().abs() < 1e-12);
        let m = KernelMatrix::from_upper(20, |a, b| ((a + 2 * b) % 5) as f64 - 2.0);
        let t = NullTest { statistic: Statistic::U, bootstrap: Bootstrap::Multinomial, reps: 19, seed: 4 };
        let all = t.run(&m).unwrap().replicates;
        let first = NullTest { reps: 3, ..t }.run(&m).unwrap().replicates;
        assert_eq!(&all[..3], &first[..]);
        assert!(NullTest { statistic: Statistic::V, ..t }.run(&m).is_err());
    }
}
