//! Categorical draws by inverse CDF and the single-site Gibbs update built on them, shared by
//! the samplers (`dlp-samplers`) and the reference draws of the goodness-of-fit tests
//! (`dlp-gof`, which must not depend on the sampler zoo).
//!
//! Every categorical draw of dlp scans its weights with [`inverse_cdf`]: one uniform U, then
//! u = U·Σw is decreased by the weights in order and the first index that takes it below 0
//! is drawn. The callers differ only in where the weights come from (stored weights,
//! exponentials of logits, a normalised row) and in what they take when rounding leaves the
//! scan without a pick, which each states; keeping those conventions is what keeps every
//! sampler's trajectories unchanged bit for bit.

use crate::rng::ChainRng;
use crate::target::{Deltas, EvalError};
use rand::RngExt;

/// The inverse-CDF scan: the first k with u − w_0 − … − w_k < 0 (subtracting in order), or
/// `None` when the scan runs out (rounding left u ≥ 0 after the last weight, or a weight or
/// u is NaN). `u` is U·Σw for unnormalised weights and U for normalised ones, U ~ U[0, 1).
#[inline]
pub fn inverse_cdf(weights: impl IntoIterator<Item = f64>, mut u: f64) -> Option<usize> {
    for (k, w) in weights.into_iter().enumerate() {
        u -= w;
        if u < 0.0 {
            return Some(k);
        }
    }
    None
}

/// Index drawn with probability ∝ `w` (non-negative weights summing to `total`), one uniform;
/// when rounding exhausts the scan, the last index with positive weight.
#[inline]
pub fn sample_weights(w: &[f64], total: f64, rng: &mut ChainRng) -> usize {
    let u = rng.random::<f64>() * total;
    inverse_cdf(w.iter().copied(), u).unwrap_or_else(|| w.iter().rposition(|&x| x > 0.0).unwrap_or(0))
}

/// Index drawn from the unnormalised log-weights `logits`, one uniform: the weights
/// e^{l − max l} are written once to `scratch` (resized) and scanned by [`inverse_cdf`].
/// Entries of −∞ are never drawn; when rounding exhausts the scan, the last finite logit.
#[inline]
pub fn sample_logits(logits: &[f64], scratch: &mut Vec<f64>, rng: &mut ChainRng) -> usize {
    let m = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    scratch.clear();
    scratch.extend(logits.iter().map(|&l| (l - m).exp()));
    let total: f64 = scratch.iter().sum();
    let u = rng.random::<f64>() * total;
    inverse_cdf(scratch.iter().copied(), u)
        .unwrap_or_else(|| logits.iter().rposition(|&l| l > f64::NEG_INFINITY).unwrap_or(0))
}

/// One single-site Gibbs update: x_i is redrawn from its full conditional
/// π(x_i = v | x_{−i}) ∝ exp(f(x with x_i = v) − f(x)), the K differences coming from
/// [`Deltas::coordinate_deltas`] into `w` (length K) and the draw from [`sample_logits`] (one
/// uniform). Returns f(x_new) − f(x). Systematic and random scans (`gibbs`, `gibbs-sweep`,
/// `dlp_gof::gibbs_draws`) differ only in how they pick i.
#[inline]
pub fn gibbs_site_update(
    deltas: &Deltas<'_>,
    x: &mut [u32],
    i: usize,
    w: &mut [f64],
    scratch: &mut Vec<f64>,
    rng: &mut ChainRng,
) -> Result<f64, EvalError> {
    deltas.coordinate_deltas(x, i, w)?;
    let v = sample_logits(w, scratch, rng);
    x[i] = v as u32;
    Ok(w[v])
}

/// One N(0, 1) draw by Box–Muller (the cosine branch) from two uniforms U₁, U₂ of `rng`, in
/// that order: √(−2 ln(1 − U₁)) · cos(2π U₂) (1 − U₁ ∈ (0, 1], so the log is finite).
///
/// The one hand-written normal draw of dlp. Not `rand_distr::StandardNormal` (a ziggurat that
/// consumes the stream differently) because published seeded outputs were drawn with this
/// formula: PCD's initial couplings (dlp-learn), paper 003's random-network target and
/// initial weights (dlp-tensor, dlp-papers), the NMF start of paper 001 and the peer benchmark's RBM; this
/// keeps them bit-identical. Draws that no seeded output pins use `rand_distr`.
pub fn standard_normal<R: rand::Rng + ?Sized>(rng: &mut R) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::chain_rng;

    #[test]
    fn standard_normal_keeps_its_seeded_stream() {
        // Published seeded outputs depend on these exact bits (see the function's doc).
        let mut rng = crate::rng::setup_rng(7);
        let got: Vec<u64> = (0..3).map(|_| standard_normal(&mut rng).to_bits()).collect();
        // 0.28880184241151724, -0.22730853267554407, -0.8602024685396472
        assert_eq!(got, vec![4598874211397379607, 13820729710129756948, 13829295271433608896]);
    }

    #[test]
    fn standard_normal_has_mean_0_and_variance_1() {
        // 20 000 draws: the mean's sd is 0.007 and the variance's 0.01; 5 sd bounds.
        let mut rng = crate::rng::setup_rng(11);
        let z: Vec<f64> = (0..20_000).map(|_| standard_normal(&mut rng)).collect();
        let mean = z.iter().sum::<f64>() / z.len() as f64;
        let var = z.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (z.len() - 1) as f64;
        assert!(mean.abs() < 0.036 && (var - 1.0).abs() < 0.05, "mean {mean}, variance {var}");
    }

    #[test]
    fn the_scan_picks_the_first_index_past_u_and_reports_exhaustion() {
        let w = [0.25, 0.0, 0.5, 0.25];
        assert_eq!(inverse_cdf(w, 0.0), Some(0));
        assert_eq!(inverse_cdf(w, 0.2499), Some(0));
        // A zero weight never takes u below 0 by itself.
        assert_eq!(inverse_cdf(w, 0.25), Some(2));
        assert_eq!(inverse_cdf(w, 0.9), Some(3));
        assert_eq!(inverse_cdf(w, 1.0), None);
        assert_eq!(inverse_cdf([f64::NAN, 1.0], 0.5), None);
    }

    #[test]
    fn draws_follow_their_weights_and_skip_impossible_entries() {
        // 40,000 draws of a 3-way law; each frequency within 5 standard errors (a
        // two-sided normal tail of 5.7e−7 per entry, 6 entries: false-failure rate < 4e−6).
        let logits = [0.0, f64::NEG_INFINITY, 2f64.ln(), 1.0];
        let p = [1.0, 0.0, 2.0, 1f64.exp()].map(|v| v / (3.0 + 1f64.exp()));
        let mut rng = chain_rng(5, 0);
        let (mut by_logits, mut by_weights) = ([0usize; 4], [0usize; 4]);
        let mut scratch = Vec::new();
        let n = 40_000;
        for _ in 0..n {
            by_logits[sample_logits(&logits, &mut scratch, &mut rng)] += 1;
            by_weights[sample_weights(&p, 1.0, &mut rng)] += 1;
        }
        for counts in [by_logits, by_weights] {
            assert_eq!(counts[1], 0);
            for (c, q) in counts.iter().zip(p) {
                let se = (q * (1.0 - q) / n as f64).sqrt();
                assert!((*c as f64 / n as f64 - q).abs() <= 5.0 * se, "{counts:?} vs {p:?}");
            }
        }
    }
}
