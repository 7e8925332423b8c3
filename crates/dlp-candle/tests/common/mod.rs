//! Helpers shared by the device-resident sampler tests (`device_rbm.rs`, `device_dlp.rs`):
//! random RBMs and states, the documented Philox site uniforms restated, near-tie-aware
//! draws and a Pearson χ² test with its limit. Each test binary uses a subset of them.

#![allow(dead_code)]

use dlp_candle::philox::{counter, philox4x32_10};
use dlp_core::DomainKind;
use dlp_models::Rbm;
use rand::{RngExt, SeedableRng};

pub fn random_rbm(domain: DomainKind, d: usize, m: usize, scale: f64, seed: u64) -> Rbm {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut draw = |n: usize, s: f64| (0..n).map(|_| s * (rng.random::<f64>() * 2.0 - 1.0)).collect::<Vec<_>>();
    let (w, b, c) = (draw(d * m, scale), draw(d, 1.0), draw(m, 1.0));
    Rbm::new(domain, d, m, w, b, c).unwrap()
}

pub fn random_bits(len: usize, seed: u64) -> Vec<u32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.random_range(0..2u32)).collect()
}

/// Site i's uniform of `purpose` at `step` of `chain`, as the module doc specifies it: word
/// i mod 4 of Philox block i / 4, its top 24 bits over 2²⁴ (restated here, not imported).
pub fn site_u(key: [u32; 2], chain: usize, step: u32, purpose: u32, i: usize) -> f64 {
    let word = philox4x32_10(counter(chain as u32, step, purpose, (i / 4) as u32), key)[i % 4];
    (word >> 8) as f64 / 16_777_216.0
}

/// Draws u < p for every (u, p); `None` when some u lies within `tol` of its p (a near tie
/// that f32 rounding may decide either way).
pub fn draws(pairs: impl Iterator<Item = (f64, f64)>, tol: f64) -> Option<Vec<u32>> {
    pairs.map(|(u, p)| if (u - p).abs() < tol { None } else { Some((u < p) as u32) }).collect()
}

/// Upper χ² quantile by Wilson–Hilferty at z = 4.75 (one-sided normal tail 1.0e−6; the
/// approximation's error at these degrees of freedom is far below that margin).
pub fn chi2_limit(df: usize) -> f64 {
    let k = df as f64;
    let h = 2.0 / (9.0 * k);
    k * (1.0 - h + 4.75 * h.sqrt()).powi(3)
}

/// Pearson χ² of `counts` against the probabilities `p` (n draws), cells expecting < 10
/// lumped into one; returns (statistic, degrees of freedom). Fails outright on a count in a
/// cell of probability 0.
pub fn chi2(counts: &[u64], p: &[f64], n: u64) -> (f64, usize) {
    let (mut stat, mut cells, mut lump_o, mut lump_e) = (0.0, 0usize, 0.0, 0.0);
    for (&o, &q) in counts.iter().zip(p) {
        let e = q * n as f64;
        assert!(o == 0 || q > 0.0, "a state of probability 0 was reached");
        if e < 10.0 {
            lump_o += o as f64;
            lump_e += e;
        } else {
            stat += (o as f64 - e).powi(2) / e;
            cells += 1;
        }
    }
    if lump_e > 0.0 {
        stat += (lump_o - lump_e).powi(2) / lump_e.max(10.0);
        cells += 1;
    }
    (stat, cells.saturating_sub(1).max(1))
}
