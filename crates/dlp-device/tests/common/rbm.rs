//! The device RBM checks shared by `device_rbm.rs` (CPU device) and `cuda.rs` (cuda:0): every
//! step reconstructed in f64 from the documented Philox streams, and the law after T steps
//! against dlp-exact's transition matrices.

use super::{
    check_law_chi2, check_paths, dlp_reference_step, draws, every_state_in_turn, random_bits, random_rbm, site_u,
};
use candle_core::Device;
use dlp_core::TargetExt;
use dlp_core::math::sigmoid;
use dlp_core::{DomainKind, Target};
use dlp_device::device_chains::DeviceChains;
use dlp_device::device_rbm::{DeviceRbm, PURPOSE_HIDDEN, PURPOSE_SITE, PURPOSE_VISIBLE, RbmSampler};
use dlp_device::philox::{counter, key_of_seed, philox4x32_10, u64_of};
use dlp_models::Rbm;
use nalgebra::DMatrix;

/// The next state of chain `j` from `x` at step `t`, computed in f64 from `rbm` and the
/// streams; `None` on a near tie (flip or Bernoulli uniform within 1e−5 of its probability,
/// or ln u within 1e−3 of DMALA's log ratio: the f32 errors here are ≤ 1e−5). DULA and DMALA:
/// [`super::dlp_reference_step`].
pub fn reference_step(rbm: &Rbm, sampler: RbmSampler, key: [u32; 2], j: usize, t: u32, x: &[u32]) -> Option<Vec<u32>> {
    let (d, m) = (rbm.d(), rbm.m());
    const TIE: f64 = 1e-5;
    match sampler {
        RbmSampler::Dula { alpha } | RbmSampler::Dmala { alpha } => {
            dlp_reference_step(rbm, alpha, matches!(sampler, RbmSampler::Dmala { .. }), key, j, t, x)
        }
        RbmSampler::BlockGibbs => {
            let mut a = vec![0.0; m];
            rbm.hidden_preactivation(x, &mut a);
            let h = draws((0..m).map(|k| (site_u(key, j, t, PURPOSE_HIDDEN, k), sigmoid(a[k]))), TIE)?;
            let mut l = vec![0.0; d];
            rbm.visible_logits(&h, &mut l);
            draws((0..d).map(|i| (site_u(key, j, t, PURPOSE_VISIBLE, i), sigmoid(l[i]))), TIE)
        }
        RbmSampler::Gibbs => {
            // Site ⌊u·d/2⁶⁴⌋ from words 0, 1 of block 0; its flip uniform from word 2.
            let r = philox4x32_10(counter(j as u32, t, PURPOSE_SITE, 0), key);
            let i = ((u64_of(r[0], r[1]) as u128 * d as u128) >> 64) as usize;
            let mut y = x.to_vec();
            y[i] ^= 1;
            let mut f = [0.0; 2];
            rbm.log_density_batch(&[x, &y[..]].concat(), &mut f).unwrap();
            let flip = draws(std::iter::once(((r[2] >> 8) as f64 / 16_777_216.0, sigmoid(f[1] - f[0]))), TIE)?;
            Some(if flip[0] == 1 { y } else { x.to_vec() })
        }
    }
}

pub const SAMPLERS: [RbmSampler; 4] =
    [RbmSampler::Dula { alpha: 0.3 }, RbmSampler::Dmala { alpha: 0.3 }, RbmSampler::BlockGibbs, RbmSampler::Gibbs];

/// Runs `steps` steps of every sampler on `device` and checks each chain's every step against
/// [`reference_step`] from the chain's previous position (so the cached G and f(x) are
/// checked too: they must be those of the current state). Chains hitting a near tie are
/// dropped from then on; at least 80% must survive (a tie has probability ~1e−4 per chain-step
/// here). Returns the positions after each step, per sampler.
pub fn check_against_reference(device: &Device, domain: DomainKind) -> Vec<Vec<Vec<u32>>> {
    let (d, m, n, steps, seed) = (22, 7, 24, 25u32, 11);
    let rbm = random_rbm(domain, d, m, 0.8, 3);
    let x0 = random_bits(n * d, 4);
    let key = key_of_seed(seed);
    let mut out = Vec::new();
    for sampler in SAMPLERS {
        let mut chains = DeviceRbm::new(&rbm, sampler, &x0, seed, device).unwrap();
        let mh = matches!(sampler, RbmSampler::Dmala { .. });
        let what = format!("{sampler:?} {domain:?}");
        let (history, _) =
            check_paths(&mut chains, &x0, steps, mh, &what, |j, t, x| reference_step(&rbm, sampler, key, j, t, x));
        out.push(history);
    }
    out
}

/// The law after `steps` steps, against dlp-exact. Chain j starts at state j mod 2^d (n a
/// multiple of 2^d), so the final states are independent draws whose pooled law is the mean
/// of the rows of P^steps; the exact P comes from dlp-exact's independent transcriptions
/// (`reference::dlp`, `reference::rbm_block_gibbs`). The T-step law from every start pins
/// the transition kernel itself, not just its fixed point; at T = 8 it is also close to the
/// stationary law (π for DMALA and block Gibbs, DULA's own biased law), whose TV distance is
/// printed for information.
///
/// False failures: Pearson χ² with the Wilson–Hilferty 1e−6 quantile. The starts are
/// stratified (equal numbers from each), which makes every cell's variance at most the
/// multinomial one, so the test is conservative: false-failure rate ≤ 1e−6 per comparison,
/// ≤ 1e−5 for the ≤ 8 comparisons of this file (budget 1e−3). Power: with n = 16,384 draws on
/// 32 states, a TV error of ~0.03 fails. f32 rounding moves the kernel by ~1e−6 in probability
/// (the log ratio and probabilities err by ≲ 1e−6 on this 5 × 3 RBM), far below the
/// sampling resolution ~1/√n ≈ 8e−3.
pub fn check_law(device: &Device, domain: DomainKind, seed: u64) {
    let (d, m, steps) = (5, 3, 8);
    let rbm = random_rbm(domain, d, m, 1.0, 21);
    let ns = 1usize << d;
    let n = ns * 512;
    let space = rbm.space().clone();
    let x0 = every_state_in_turn(&space, n);
    let pi = dlp_exact::probabilities(&rbm).unwrap();
    for sampler in SAMPLERS {
        let p: DMatrix<f64> = match sampler {
            RbmSampler::Dula { alpha } => dlp_exact::reference::dlp(&rbm, alpha, None, false).unwrap(),
            RbmSampler::Dmala { alpha } => dlp_exact::reference::dlp(&rbm, alpha, None, true).unwrap(),
            RbmSampler::BlockGibbs => {
                dlp_exact::reference::rbm_block_gibbs(d, m, rbm.w(), rbm.b(), rbm.c(), rbm.is_spin())
            }
            RbmSampler::Gibbs => dlp_exact::reference::gibbs_random(&rbm).unwrap(),
        };
        let pt = p.pow(steps as u32);
        let law: Vec<f64> = (0..ns).map(|s| (0..ns).map(|r| pt[(r, s)]).sum::<f64>() / ns as f64).collect();
        let mut chains = DeviceRbm::new(&rbm, sampler, &x0, seed, device).unwrap();
        for _ in 0..steps {
            chains.step().unwrap();
        }
        let what = format!("{sampler:?} {domain:?} on {device:?}");
        check_law_chi2(&chains.positions().unwrap(), &space, &law, &what);
        let tv = dlp_exact::matrix::total_variation(&law, &pi);
        println!("{what}: TV(law, π) = {tv:.2e}");
    }
}
