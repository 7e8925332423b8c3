//! Wang & Cho's "BERT has a mouth" sampler (2019), the Gibbs baseline of the main paper's
//! Table 3: for each masked slot j in turn, put `[MASK]` at j (the other slots keep their
//! current tokens), run BERT once, and redraw θ_j from softmax(logits_j) restricted to the
//! allowed tokens (specials never drawn). One step is a scan over all masked slots: |M|
//! forward passes, each batched over the chains.
//!
//! **What law this samples.** Each site update K_j draws from BERT's conditional
//! q_j(θ_j | θ_{−j}). Wang & Cho call the scan Gibbs sampling of the MRF with potentials
//! log q_j, but the MRF's own conditionals are not the q_j, and the q_j of a trained BERT are
//! in general not the conditionals of any joint law; so the scan is not Gibbs sampling of a
//! known π. It is a Markov chain with a unique stationary law (every q_j > 0, so it is
//! irreducible and aperiodic), computed exactly on a tiny model in the tests, where it
//! differs both from the one-pass law ∝ exp f that DLP/GWG sample and from that MRF's law.
//! Use it as the paper does: a heuristic baseline.

use super::energy::InfillTarget;
use crate::Error;
use candle_core::{D, DType, Tensor};
use dlp_core::{ChainRng, StepInfo};

impl InfillTarget {
    /// BERT's conditional at masked slot `j` (index into [`InfillTarget::masked`]) of each of
    /// the `n` states `xs` (n × d categories), with slot j replaced by `[MASK]`: an n × K
    /// row-major matrix of probabilities over the allowed tokens (rows sum to 1).
    pub fn conditionals(&self, xs: &[u32], j: usize, mask_id: u32) -> Result<Vec<f64>, Error> {
        let d = self.masked().len();
        let n = xs.len() / d;
        let model = self.model();
        let dev = model.device();
        let err = |e| crate::build_error(dev, e);
        let s = self.base().len();
        let mut flat = Vec::with_capacity(n * s);
        for r in 0..n {
            let mut ids = self.fill_ids(&xs[r * d..(r + 1) * d]);
            ids[self.masked()[j]] = mask_id;
            flat.extend(ids);
        }
        let run = || -> candle_core::Result<Vec<f64>> {
            let ids = Tensor::from_vec(flat, (n, s), dev)?;
            let e = model.embed(&ids)?;
            // Row j of every sequence, the last layer computing only that row.
            let logits = model.head(&model.hidden_at(&e, Some(&[self.masked()[j]]))?)?;
            let allowed = Tensor::from_vec(self.allowed().to_vec(), self.allowed().len(), dev)?;
            let p = candle_nn::ops::softmax(&logits.index_select(&allowed, 1)?.to_dtype(DType::F64)?, D::Minus1)?;
            p.flatten_all()?.to_vec1::<f64>()
        };
        run().map_err(err)
    }

    /// The state every chain starts from: at each masked slot, BERT's most likely allowed
    /// token with every masked slot `[MASK]` (one forward pass; ties to the lower id).
    pub fn argmax_init(&self, mask_id: u32) -> Result<Vec<u32>, Error> {
        let model = self.model();
        let dev = model.device();
        let mut ids = self.base().to_vec();
        for &i in self.masked() {
            ids[i] = mask_id;
        }
        let run = || -> candle_core::Result<Vec<u32>> {
            let s = ids.len();
            let e = model.embed(&Tensor::from_vec(ids, (1, s), dev)?)?;
            let logits = model.head(&model.hidden_at(&e, Some(self.masked()))?)?;
            let allowed = Tensor::from_vec(self.allowed().to_vec(), self.allowed().len(), dev)?;
            let l = logits.index_select(&allowed, 1)?.to_dtype(DType::F64)?.to_vec2::<f64>()?;
            Ok(l.iter()
                .map(|row| {
                    let mut best = 0;
                    for (k, &v) in row.iter().enumerate() {
                        if v > row[best] {
                            best = k;
                        }
                    }
                    best as u32
                })
                .collect())
        };
        run().map_err(|e| crate::build_error(dev, e))
    }
}

/// One Wang & Cho site update of every chain: slot `j` of each state in `xs` is redrawn from
/// [`InfillTarget::conditionals`] with one uniform of the chain's own stream.
pub fn gibbs_site(
    target: &InfillTarget,
    xs: &mut [u32],
    rngs: &mut [ChainRng],
    j: usize,
    mask_id: u32,
) -> Result<(), Error> {
    let d = target.masked().len();
    let k = target.allowed().len();
    let p = target.conditionals(xs, j, mask_id)?;
    for (r, rng) in rngs.iter_mut().enumerate() {
        let row = &p[r * k..(r + 1) * k];
        xs[r * d + j] = dlp_core::draw::sample_weights(row, row.iter().sum(), rng) as u32;
    }
    Ok(())
}

/// One Wang & Cho scan over the masked slots of every chain: `xs` (n × d categories) is
/// updated in place, chain r drawing from `rngs[r]` only (a seed gives the same chains
/// whatever the batch). Returns one [`StepInfo`] per chain (always accepted; `n_changed`
/// = slots whose token changed; `density_evals` = the d forward passes).
pub fn gibbs_scan(
    target: &InfillTarget,
    xs: &mut [u32],
    rngs: &mut [ChainRng],
    mask_id: u32,
) -> Result<Vec<StepInfo>, Error> {
    let d = target.masked().len();
    let n = xs.len() / d;
    assert_eq!(rngs.len(), n, "one stream per chain");
    let before = xs.to_vec();
    for j in 0..d {
        gibbs_site(target, xs, rngs, j, mask_id)?;
    }
    Ok((0..n)
        .map(|r| {
            let changed = (0..d).filter(|&j| xs[r * d + j] != before[r * d + j]).count() as u32;
            StepInfo {
                accepted: true,
                accept_prob: 1.0,
                n_proposed: d as u32,
                n_changed: changed,
                density_evals: d as u32,
                grad_evals: 0,
                data_evals: 0,
            }
        })
        .collect())
}
