//! Device-resident RBM chains (`dlp_candle::device_rbm`: DULA, DMALA, block and single-site
//! Gibbs) on the CPU device (and on cuda:0 when built with the `cuda` feature and a GPU is
//! present): every step reconstructed in f64 from the documented Philox streams, streams
//! independent of the number of chains, the law after T steps against dlp-exact's transition
//! matrices, and input errors.

use candle_core::Device;
use dlp_candle::Error;
use dlp_candle::device_chains::DeviceChains;
use dlp_candle::device_rbm::{
    DeviceRbm, PURPOSE_FLIP, PURPOSE_HIDDEN, PURPOSE_MH, PURPOSE_SITE, PURPOSE_VISIBLE, RbmSampler,
};
use dlp_candle::philox::{counter, key_of_seed, philox4x32_10, u01_of_u64, u64_of};
use dlp_core::math::sigmoid;
use dlp_core::{DomainKind, Target};
use dlp_models::Rbm;
use dlp_samplers::dlp::DlpProposal;
use nalgebra::DMatrix;

mod common;
use common::{chi2, chi2_limit, draws, random_bits, random_rbm, site_u};

/// The next state of chain `j` from `x` at step `t`, computed in f64 from `rbm` and the
/// streams; `None` on a near tie (flip or Bernoulli uniform within 1e−5 of its probability,
/// or ln u within 1e−3 of DMALA's log ratio: the f32 errors here are ≤ 1e−5).
fn reference_step(rbm: &Rbm, sampler: RbmSampler, key: [u32; 2], j: usize, t: u32, x: &[u32]) -> Option<Vec<u32>> {
    let (d, m) = (rbm.d(), rbm.m());
    const TIE: f64 = 1e-5;
    match sampler {
        RbmSampler::Dula { alpha } | RbmSampler::Dmala { alpha } => {
            let space = rbm.space().clone();
            let proposal = DlpProposal::new(alpha, None).unwrap();
            let (mut f, mut g) = ([0.0], vec![0.0; d]);
            rbm.log_density_grad_batch(x, &mut f, &mut g);
            let (mut l, mut z) = (vec![0.0; d], vec![0.0; d]);
            let log_z = proposal.logits(&space, x, &g, &mut l, &mut z);
            let flips = draws((0..d).map(|i| (site_u(key, j, t, PURPOSE_FLIP, i), sigmoid(l[i]))), TIE)?;
            let y: Vec<u32> = x.iter().zip(&flips).map(|(a, b)| a ^ b).collect();
            if matches!(sampler, RbmSampler::Dula { .. }) {
                return Some(y);
            }
            let (mut fy, mut gy) = ([0.0], vec![0.0; d]);
            rbm.log_density_grad_batch(&y, &mut fy, &mut gy);
            let (mut ly, mut zy) = (vec![0.0; d], vec![0.0; d]);
            let log_zy = proposal.logits(&space, &y, &gy, &mut ly, &mut zy);
            let ratio = fy[0] - f[0] + proposal.log_prob(&space, &y, x, &ly, log_zy)
                - proposal.log_prob(&space, x, &y, &l, log_z);
            let r = philox4x32_10(counter(j as u32, t, PURPOSE_MH, 0), key);
            let ln_u = u01_of_u64(u64_of(r[0], r[1])).ln();
            if (ln_u - ratio).abs() < 1e-3 {
                return None;
            }
            Some(if ln_u < ratio { y } else { x.to_vec() })
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
            rbm.log_density_batch(&[x, &y[..]].concat(), &mut f);
            let flip = draws(std::iter::once(((r[2] >> 8) as f64 / 16_777_216.0, sigmoid(f[1] - f[0]))), TIE)?;
            Some(if flip[0] == 1 { y } else { x.to_vec() })
        }
    }
}

const SAMPLERS: [RbmSampler; 4] =
    [RbmSampler::Dula { alpha: 0.3 }, RbmSampler::Dmala { alpha: 0.3 }, RbmSampler::BlockGibbs, RbmSampler::Gibbs];

/// Runs `steps` steps of every sampler on `device` and checks each chain's every step against
/// [`reference_step`] from the chain's previous position (so the cached G and f(x) are
/// checked too: they must be those of the current state). Chains hitting a near tie are
/// dropped from then on; at least 80% must survive (a tie has probability ~1e−4 per chain-step
/// here). Returns the positions after each step, per sampler.
fn check_against_reference(device: &Device, domain: DomainKind) -> Vec<Vec<Vec<u32>>> {
    let (d, m, n, steps, seed) = (22, 7, 24, 25u32, 11);
    let rbm = random_rbm(domain, d, m, 0.8, 3);
    let x0 = random_bits(n * d, 4);
    let key = key_of_seed(seed);
    let mut out = Vec::new();
    for sampler in SAMPLERS {
        let mut chains = DeviceRbm::new(&rbm, sampler, &x0, seed, device).unwrap();
        let mut alive = vec![true; n];
        let (mut prev, mut history) = (x0.clone(), Vec::new());
        let mut moves = vec![0u64; n];
        for t in 0..steps {
            chains.step().unwrap();
            let now = chains.positions().unwrap();
            for j in 0..n {
                if !alive[j] {
                    continue;
                }
                let row = j * d..(j + 1) * d;
                match reference_step(&rbm, sampler, key, j, t, &prev[row.clone()]) {
                    None => alive[j] = false,
                    Some(want) => {
                        assert_eq!(now[row.clone()], want[..], "{sampler:?} {domain:?} chain {j} step {t}");
                        moves[j] += u64::from(now[row.clone()] != prev[row]);
                    }
                }
            }
            history.push(now.clone());
            prev = now;
        }
        assert!(alive.iter().filter(|&&a| a).count() >= n * 4 / 5, "{sampler:?}: too many near ties");
        assert_eq!(chains.steps_taken(), steps as u64);
        let accepted = chains.accepted().unwrap();
        for j in (0..n).filter(|&j| alive[j]) {
            match sampler {
                // A rejected DMALA step leaves the state; an accepted one may also propose
                // no flip, so the count is at least the number of moves.
                RbmSampler::Dmala { .. } => assert!(accepted[j] >= moves[j] && accepted[j] <= steps as u64),
                _ => assert_eq!(accepted[j], steps as u64),
            }
        }
        if let RbmSampler::Dmala { .. } = sampler {
            let total: u64 = accepted.iter().sum();
            assert!(total > 0 && total < n as u64 * steps as u64, "DMALA accepted {total} of {}", n as u32 * steps);
        }
        out.push(history);
    }
    out
}

#[test]
fn steps_match_an_f64_reconstruction_from_the_streams() {
    check_against_reference(&Device::Cpu, DomainKind::Binary);
    check_against_reference(&Device::Cpu, DomainKind::Spin);
}

/// Chain j's path depends on (seed, j) only: chains 0..3 of a run of 3 and of a run of 8
/// (same starting rows) are identical, step for step.
#[test]
fn a_chains_path_does_not_depend_on_the_number_of_chains() {
    let (d, m) = (9, 4);
    let rbm = random_rbm(DomainKind::Binary, d, m, 0.8, 5);
    let x8 = random_bits(8 * d, 6);
    for sampler in SAMPLERS {
        let mut a = DeviceRbm::new(&rbm, sampler, &x8[..3 * d], 7, &Device::Cpu).unwrap();
        let mut b = DeviceRbm::new(&rbm, sampler, &x8, 7, &Device::Cpu).unwrap();
        let mut moved = false;
        for t in 0..12 {
            a.step().unwrap();
            b.step().unwrap();
            let (pa, pb) = (a.positions().unwrap(), b.positions().unwrap());
            assert_eq!(pa[..], pb[..3 * d], "{sampler:?} step {t}");
            moved |= pa != x8[..3 * d];
        }
        assert!(moved, "{sampler:?}: the chains never moved");
        assert_eq!(a.accepted().unwrap()[..], b.accepted().unwrap()[..3]);
    }
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
fn check_law(device: &Device, domain: DomainKind, seed: u64) {
    let (d, m, steps) = (5, 3, 8);
    let rbm = random_rbm(domain, d, m, 1.0, 21);
    let ns = 1usize << d;
    let n = ns * 512;
    let space = rbm.space().clone();
    let mut x0 = vec![0u32; n * d];
    for j in 0..n {
        space.state_of_index((j % ns) as u64, &mut x0[j * d..(j + 1) * d]);
    }
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
        let xs = chains.positions().unwrap();
        let mut counts = vec![0u64; ns];
        for row in xs.chunks(d) {
            counts[space.index_of_state(row) as usize] += 1;
        }
        let (stat, df) = chi2(&counts, &law, n as u64);
        let tv = dlp_exact::matrix::total_variation(&law, &pi);
        println!(
            "{sampler:?} {domain:?} on {device:?}: χ² = {stat:.1} on {df} df (limit {:.1}); TV(law, π) = {tv:.2e}",
            chi2_limit(df)
        );
        assert!(stat < chi2_limit(df), "{sampler:?} {domain:?}: χ² = {stat} on {df} df");
    }
}

#[test]
fn the_law_after_t_steps_matches_the_exact_kernels() {
    check_law(&Device::Cpu, DomainKind::Binary, 31);
    check_law(&Device::Cpu, DomainKind::Spin, 32);
}

#[test]
fn bad_input_is_a_param_error() {
    let rbm = random_rbm(DomainKind::Binary, 4, 2, 1.0, 1);
    let x0 = vec![0u32; 8];
    let param = |r: Result<DeviceRbm, Error>, what: &str| match r {
        Err(Error::Param(msg)) => assert!(msg.contains(what), "{msg:?} should mention {what:?}"),
        Err(e) => panic!("{what}: expected Error::Param, got {e:?}"),
        Ok(_) => panic!("{what}: accepted"),
    };
    for alpha in [0.0, -1.0, f64::NAN] {
        param(DeviceRbm::new(&rbm, RbmSampler::Dmala { alpha }, &x0, 0, &Device::Cpu), "step_size");
        param(DeviceRbm::new(&rbm, RbmSampler::Dula { alpha }, &x0, 0, &Device::Cpu), "step_size");
    }
    for bad in [vec![], vec![0u32; 7], vec![0u32; 9]] {
        param(DeviceRbm::new(&rbm, RbmSampler::BlockGibbs, &bad, 0, &Device::Cpu), "x0 must hold");
    }
    param(DeviceRbm::new(&rbm, RbmSampler::BlockGibbs, &[0, 1, 2, 0, 0, 0, 0, 0], 0, &Device::Cpu), "x0[2] = 2");
    // α = +∞ (the App. D ablation) and spin visibles are accepted.
    assert!(DeviceRbm::new(&rbm, RbmSampler::Dula { alpha: f64::INFINITY }, &x0, 0, &Device::Cpu).is_ok());
    let spin = random_rbm(DomainKind::Spin, 4, 2, 1.0, 1);
    let chains = DeviceRbm::new(&spin, RbmSampler::Dmala { alpha: 0.5 }, &x0, 0, &Device::Cpu).unwrap();
    assert_eq!((chains.n_chains(), chains.dim(), chains.name()), (2, 4, "dmala".to_string()));
}

/// On cuda:0 (with the `cuda` feature and a GPU; skipped with a message otherwise): the same
/// f64 reconstruction of every step, the CPU twin's positions equal to the GPU's wherever
/// neither device hit a near tie, and the law.
#[cfg(feature = "cuda")]
#[test]
fn cuda_agrees_with_the_reference_and_the_cpu_twin() {
    let gpu = match Device::new_cuda(0) {
        Ok(g) => g,
        // Set by scripts/gpu_check.sh: on the GPU machine a skip would hide a failure.
        Err(e) if std::env::var_os("DLP_REQUIRE_GPU").is_some() => {
            panic!("DLP_REQUIRE_GPU is set but cuda:0 fails: {e}")
        }
        Err(_) => {
            eprintln!("skipped: no CUDA device 0");
            return;
        }
    };
    for domain in [DomainKind::Binary, DomainKind::Spin] {
        let on_gpu = check_against_reference(&gpu, domain);
        let on_cpu = check_against_reference(&Device::Cpu, domain);
        // Chains reconstructed without a tie on both devices are equal to the same reference,
        // hence to each other; count how many positions agree overall as a sanity check.
        let (mut same, mut all) = (0, 0);
        for (g, c) in on_gpu.iter().flatten().zip(on_cpu.iter().flatten()) {
            same += g.iter().zip(c).filter(|(a, b)| a == b).count();
            all += g.len();
        }
        assert!(same * 100 >= all * 95, "{domain:?}: only {same} of {all} positions agree");
    }
    check_law(&gpu, DomainKind::Binary, 41);
}
