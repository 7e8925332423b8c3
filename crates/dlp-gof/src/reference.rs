//! Reference draws from a model for MMD's one-sample form (spec §6): exact draws by
//! enumeration when K^d ≤ 2²⁰, otherwise the last states of independent single-site Gibbs
//! chains with systematic sweeps.
//!
//! Draw (or chain) j uses only `stream(seed, Reference, j)`, so the reference sample does not
//! depend on the thread count. The sweep loop is written here because the spec fixes its form
//! (systematic scan, uniform start, last state) and the statistics crate should not depend on
//! the sampler zoo; each site update is the samplers' own, [`gibbs_site_update`] of dlp-core.

use crate::{GofError, Purpose, stream};
use dlp_core::Target;
use dlp_core::draw::gibbs_site_update;
use dlp_core::math::logsumexp;
use rand::RngExt;
use rayon::prelude::*;

/// Largest space [`exact_draws`] enumerates: 2²⁰ states.
pub const MAX_EXACT_STATES: u64 = 1 << 20;

/// The normalised probabilities of every state of `target` (first coordinate most
/// significant), if it has at most `max_states` states.
pub fn enumerate_probabilities(target: &dyn Target, max_states: u64) -> Option<Vec<f64>> {
    let space = target.space();
    let total = space.n_states().filter(|&s| s <= max_states)? as usize;
    let d = space.d;
    const CHUNK: usize = 4096;
    let mut logp = vec![0.0; total];
    logp.par_chunks_mut(CHUNK).enumerate().for_each(|(ci, out)| {
        let mut xs = vec![0u32; out.len() * d];
        for (j, row) in xs.chunks_mut(d).enumerate() {
            space.state_of_index((ci * CHUNK + j) as u64, row);
        }
        target.log_density_batch(&xs, out);
    });
    let lse = logsumexp(&logp);
    Some(logp.iter().map(|l| (l - lse).exp()).collect())
}

/// `m` exact draws (m × d indices) by inverse CDF over the enumerated law; an error when the
/// space has more than 2²⁰ states.
pub fn exact_draws(target: &dyn Target, m: usize, seed: u64) -> Result<Vec<u32>, GofError> {
    let space = target.space();
    let probs = enumerate_probabilities(target, MAX_EXACT_STATES).ok_or_else(|| {
        GofError::Parameter(format!("exact draws need at most 2^20 states; the model has {}^{}", space.k(), space.d))
    })?;
    Ok(draws_from_probabilities(space, &probs, m, seed))
}

/// `m` draws from the law `probs` over the enumerated states of `space` (draw j uses
/// `stream(seed, Reference, j)`).
pub fn draws_from_probabilities(space: &dlp_core::Space, probs: &[f64], m: usize, seed: u64) -> Vec<u32> {
    let mut cdf = Vec::with_capacity(probs.len());
    let mut acc = 0.0;
    for p in probs {
        acc += p;
        cdf.push(acc);
    }
    let d = space.d;
    let mut out = vec![0u32; m * d];
    out.par_chunks_mut(d).enumerate().for_each(|(j, row)| {
        let u: f64 = stream(seed, Purpose::Reference, j).random::<f64>() * acc;
        let idx = cdf.partition_point(|&c| c <= u).min(cdf.len() - 1);
        space.state_of_index(idx as u64, row);
    });
    out
}

/// The last states of `m` single-site Gibbs chains (m × d), each started uniformly at random
/// and run for `burnin` systematic sweeps (coordinates 0..d in order, each resampled from its
/// full conditional).
pub fn gibbs_draws(target: &dyn Target, m: usize, burnin: usize, seed: u64) -> Vec<u32> {
    let space = target.space();
    let (d, k) = (space.d, space.k());
    let mut out = vec![0u32; m * d];
    out.par_chunks_mut(d).enumerate().for_each(|(j, x)| {
        let mut rng = stream(seed, Purpose::Reference, j);
        for c in x.iter_mut() {
            *c = rng.random_range(0..k as u32);
        }
        let (mut delta, mut scratch) = (vec![0.0; k], Vec::with_capacity(k));
        for _ in 0..burnin {
            for i in 0..d {
                gibbs_site_update(target, x, i, &mut delta, &mut scratch, &mut rng);
            }
        }
    });
    out
}
