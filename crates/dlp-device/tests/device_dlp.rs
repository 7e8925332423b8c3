//! Device-resident DULA / DMALA on generic tensor targets (`dlp_device::device_dlp`) on the
//! CPU device: every step reconstructed in f64 from the documented Philox streams and the CPU
//! models' own f and ∇f (TensorRbm binary and spin, TensorBnn), the law after T steps against
//! dlp-exact's transition matrices (RBM: DULA and DMALA; BNN: DMALA from π), streams
//! independent of the number of chains, agreement with `DeviceRbm`'s paths, a ResNet smoke
//! test and input errors.

use candle_core::{DType, Device, Tensor};
use dlp_core::{DomainKind, Space, Target};
use dlp_device::device_chains::DeviceChains;
use dlp_device::device_dlp::{DeviceDlp, DlpKind};
use dlp_device::device_rbm::{DeviceRbm, RbmSampler};
use dlp_device::philox::key_of_seed;
use dlp_models::BnnModel;
use dlp_tensor::DeviceEnergy;
use dlp_tensor::ebm::{ResNetConfig, ResNetEbm};
use dlp_tensor::{TensorBnn, TensorRbm};
use nalgebra::DMatrix;
use rand::{RngExt, SeedableRng};
use std::sync::Arc;

mod common;
use common::{
    check_law_chi2, check_paths, check_prefix_paths, dlp_reference_step, every_state_in_turn, expect_param_error,
    random_bits, random_rbm,
};

/// A seeded BNN with p = 3 features and H = 2 hidden units (d = 3·2 + 2 + 2 + 1 = 11) on N
/// data rows, prior-free likelihood temperature τ.
fn tiny_bnn(n_data: usize, tau: f64, seed: u64) -> BnnModel {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let x: Vec<f64> = (0..n_data * 3).map(|_| rng.random_range(-2.0..2.0)).collect();
    let y: Vec<f64> = (0..n_data).map(|_| rng.random_range(0..2) as f64).collect();
    BnnModel::new(11, 3, 2, tau, x, y).unwrap()
}

/// Runs `steps` steps of `kind` on `energy` and checks each chain's every step against
/// [`common::dlp_reference_step`] on `target` (the same model on the host, f64) from the
/// chain's previous position, so the cached G and f(x) are checked too (near ties and the
/// counts as [`common::check_paths`] says); some chain must move. Returns the positions after
/// each step.
fn check_against_reference(
    energy: Arc<dyn DeviceEnergy>,
    target: &dyn Target,
    kind: DlpKind,
    n: usize,
    steps: u32,
) -> Vec<Vec<u32>> {
    let d = target.space().d;
    let seed = 11;
    let x0 = random_bits(n * d, 4);
    let key = key_of_seed(seed);
    let mut chains = DeviceDlp::new(energy, kind, &x0, seed).unwrap();
    let (DlpKind::Dula { alpha } | DlpKind::Dmala { alpha }) = kind;
    let mh = matches!(kind, DlpKind::Dmala { .. });
    let (history, moves) = check_paths(&mut chains, &x0, steps, mh, &format!("{kind:?}"), |j, t, x| {
        dlp_reference_step(target, alpha, mh, key, j, t, x)
    });
    assert!(moves.iter().sum::<u64>() > 0, "{kind:?}: no chain ever moved");
    history
}

const KINDS: [DlpKind; 2] = [DlpKind::Dula { alpha: 0.3 }, DlpKind::Dmala { alpha: 0.3 }];

#[test]
fn rbm_steps_match_an_f64_reconstruction_from_the_streams() {
    for domain in [DomainKind::Binary, DomainKind::Spin] {
        let rbm = random_rbm(domain, 22, 7, 0.8, 3);
        let energy = Arc::new(TensorRbm::from_rbm(&rbm, &Device::Cpu).unwrap());
        for kind in KINDS {
            check_against_reference(energy.clone(), &rbm, kind, 24, 25);
        }
    }
}

/// The BNN in f32 (and f64 rounded to f32) against the f64 CPU model's own hand-derived ∇f.
#[test]
fn bnn_steps_match_an_f64_reconstruction_from_the_streams() {
    let bnn = tiny_bnn(10, 5.0, 7);
    for dtype in [DType::F32, DType::F64] {
        let energy = Arc::new(TensorBnn::from_bnn(&bnn, &Device::Cpu, dtype).unwrap());
        for kind in [DlpKind::Dula { alpha: 0.5 }, DlpKind::Dmala { alpha: 0.5 }] {
            check_against_reference(energy.clone(), &bnn, kind, 16, 20);
        }
    }
}

/// The paths of `DeviceDlp` on a `TensorRbm` and of `DeviceRbm` on the same RBM: the same
/// streams, f and ∇f that differ by f32 rounding only (candle's autograd vs the folded
/// products), so the paths are identical except after a near tie (a uniform within ~1e−6 of
/// its probability: expected ~1e−4 divergent chains here). Measured: every chain identical at
/// every step, binary and spin; the test allows one divergent chain in 24 per case.
#[test]
fn on_an_rbm_the_paths_are_those_of_device_rbm() {
    let (d, m, n, steps) = (22, 7, 24, 30);
    for domain in [DomainKind::Binary, DomainKind::Spin] {
        let rbm = random_rbm(domain, d, m, 0.8, 13);
        let energy = Arc::new(TensorRbm::from_rbm(&rbm, &Device::Cpu).unwrap());
        let x0 = random_bits(n * d, 14);
        for (kind, sampler) in [
            (DlpKind::Dula { alpha: 0.3 }, RbmSampler::Dula { alpha: 0.3 }),
            (DlpKind::Dmala { alpha: 0.3 }, RbmSampler::Dmala { alpha: 0.3 }),
        ] {
            let mut a = DeviceDlp::new(energy.clone(), kind, &x0, 5).unwrap();
            let mut b = DeviceRbm::new(&rbm, sampler, &x0, 5, &Device::Cpu).unwrap();
            let mut same = vec![true; n];
            for _ in 0..steps {
                a.step().unwrap();
                b.step().unwrap();
                let (pa, pb) = (a.positions().unwrap(), b.positions().unwrap());
                for (j, s) in same.iter_mut().enumerate() {
                    *s &= pa[j * d..(j + 1) * d] == pb[j * d..(j + 1) * d];
                }
            }
            let identical = same.iter().filter(|&&s| s).count();
            println!("{domain:?} {kind:?}: {identical} of {n} chains identical over {steps} steps");
            assert!(identical + 1 >= n, "{domain:?} {kind:?}: only {identical} of {n} chains identical");
            if let DlpKind::Dmala { .. } = kind {
                let (ca, cb) = (a.accepted().unwrap(), b.accepted().unwrap());
                let same_counts = (0..n).filter(|&j| same[j] && ca[j] == cb[j]).count();
                assert_eq!(same_counts, identical, "identical paths must have identical counts");
            }
        }
    }
}

/// Chain j's path depends on (seed, j) only: chains 0..3 of a run of 3 and of a run of 8 are
/// identical, step for step (RBM and BNN).
#[test]
fn a_chains_path_does_not_depend_on_the_number_of_chains() {
    let rbm = random_rbm(DomainKind::Binary, 9, 4, 0.8, 5);
    let bnn = tiny_bnn(6, 5.0, 8);
    let energies: [Arc<dyn DeviceEnergy>; 2] = [
        Arc::new(TensorRbm::from_rbm(&rbm, &Device::Cpu).unwrap()),
        Arc::new(TensorBnn::from_bnn(&bnn, &Device::Cpu, DType::F32).unwrap()),
    ];
    for energy in energies {
        let d = energy.space().d;
        let x8 = random_bits(8 * d, 6);
        for kind in KINDS {
            let mut a = DeviceDlp::new(energy.clone(), kind, &x8[..3 * d], 7).unwrap();
            let mut b = DeviceDlp::new(energy.clone(), kind, &x8, 7).unwrap();
            check_prefix_paths(&mut a, &mut b, &x8, &format!("{kind:?} d = {d}"));
        }
    }
}

/// The pooled law of n chains after `steps` steps of `kind` from the starts `x0` (bit rows),
/// against `start · P^steps` with `p` dlp-exact's independent DLP transcription
/// (`reference::dlp`) for `target`, by Pearson χ² (`common::chi2`). Returns that law.
fn law_check(
    energy: Arc<dyn DeviceEnergy>,
    target: &dyn Target,
    kind: DlpKind,
    p: &DMatrix<f64>,
    x0: &[u32],
    steps: usize,
    seed: u64,
) -> Vec<f64> {
    let space = target.space().clone();
    let d = space.d;
    let ns = 1usize << d;
    let n = x0.len() / d;
    let mut law = vec![0.0; ns];
    for row in x0.chunks(d) {
        law[space.index_of_state(row) as usize] += 1.0 / n as f64;
    }
    for _ in 0..steps {
        law = (0..ns).map(|s| (0..ns).map(|r| law[r] * p[(r, s)]).sum()).collect();
    }
    let mut chains = DeviceDlp::new(energy, kind, x0, seed).unwrap();
    for _ in 0..steps {
        chains.step().unwrap();
    }
    check_law_chi2(&chains.positions().unwrap(), &space, &law, &format!("{kind:?} d = {d}"));
    law
}

/// The law after T = 8 steps on a 5 × 3 binary RBM, DULA and DMALA, from every start in equal
/// numbers (so the T-step law pins the kernel itself, not just its fixed point).
///
/// False failures: Pearson χ² with the Wilson–Hilferty 1e−6 quantile (`common::chi2_limit`).
/// The starts are stratified (fixed counts per start), which makes every cell's variance at
/// most the multinomial one, so each comparison is conservative: false-failure rate ≤ 1e−6,
/// ≤ 3e−6 for the three χ² comparisons of this file (two here, one for the BNN; budget
/// 1e−3). Power: 16,384 draws on 32 states resolve a TV error of ~0.03. f32 rounding moves the
/// kernel by ~1e−6 in probability, far below the sampling resolution ~1/√n ≈ 8e−3.
#[test]
fn rbm_law_after_t_steps_matches_the_exact_kernels() {
    let (d, m, steps) = (5, 3, 8);
    let rbm = random_rbm(DomainKind::Binary, d, m, 1.0, 21);
    let energy = Arc::new(TensorRbm::from_rbm(&rbm, &Device::Cpu).unwrap());
    let ns = 1usize << d;
    let n = ns * 512;
    let x0 = every_state_in_turn(rbm.space(), n);
    for (kind, seed) in [(DlpKind::Dula { alpha: 0.3 }, 31), (DlpKind::Dmala { alpha: 0.3 }, 32)] {
        let (DlpKind::Dula { alpha } | DlpKind::Dmala { alpha }) = kind;
        let p = dlp_exact::reference::dlp(&rbm, alpha, None, matches!(kind, DlpKind::Dmala { .. })).unwrap();
        law_check(energy.clone(), &rbm, kind, &p, &x0, steps, seed);
    }
}

/// DMALA on a tiny BNN (d = 11, 2,048 states, N = 8 data rows, τ = 30: π spans 10⁻⁸ to 10⁻²)
/// against its target π, enumerated exactly by dlp-exact from the CPU `BnnModel`: dlp-exact's
/// DMALA matrix P is first checked to keep π (πP = π to 1e−10), then n = 16,384 chains all
/// start at the least probable state and the law after T = 12 steps is compared with row
/// P¹²(x₀, ·) (still ~0.18 from π in TV: the T-step law pins the kernel, which a law near π
/// would not). A wrong MH ratio (log q(y|x) halved) gives χ² ≈ 5,000 here, limit ≈ 700.
/// False failures: the 16,384 final states are i.i.d. draws of one law, so Pearson χ² at the
/// Wilson–Hilferty 1e−6 quantile fails falsely with probability ≤ ~1e−6 (the lumped cells
/// keep every expected count ≥ 10, where the χ² approximation holds).
#[test]
fn bnn_dmala_targets_the_posterior() {
    let bnn = tiny_bnn(8, 30.0, 9);
    let energy = Arc::new(TensorBnn::from_bnn(&bnn, &Device::Cpu, DType::F32).unwrap());
    let space = bnn.space().clone();
    let d = space.d;
    let (alpha, steps) = (1.0, 12);
    let pi = dlp_exact::probabilities(&bnn).unwrap();
    let p = dlp_exact::reference::dlp(&bnn, alpha, None, true).unwrap();
    let ns = pi.len();
    let drift = (0..ns).map(|s| ((0..ns).map(|r| pi[r] * p[(r, s)]).sum::<f64>() - pi[s]).abs()).fold(0.0, f64::max);
    assert!(drift < 1e-10, "dlp-exact's DMALA does not keep π: {drift}");
    let n = 16_384;
    let lo = (0..ns).min_by(|&a, &b| pi[a].total_cmp(&pi[b])).unwrap();
    let mut start = vec![0u32; d];
    space.state_of_index(lo as u64, &mut start);
    let law = law_check(energy, &bnn, DlpKind::Dmala { alpha }, &p, &start.repeat(n), steps, 33);
    let tv = dlp_exact::matrix::total_variation(&law, &pi);
    println!(
        "TV(law after {steps} steps, π) = {tv:.3}; π from {:.1e} to {:.1e}",
        pi[lo],
        pi.iter().cloned().fold(0.0, f64::max)
    );
}

/// A tiny ResNet energy (8 × 8 binary images, 4 channels): steps run, states stay bits, the
/// counts lie in [0, steps] and the chains move.
#[test]
fn resnet_ebm_smoke() {
    let config = ResNetConfig { channels: 4, stride2_blocks: 1, stride1_blocks: 1, height: 8, width: 8 };
    let d = config.d();
    let mu: Vec<f64> = (0..d).map(|i| 0.2 + 0.6 * (i % 7) as f64 / 7.0).collect();
    let model = ResNetEbm::new(config, &mu, DType::F32, &Device::Cpu, &mut dlp_core::setup_rng(3)).unwrap();
    let energy = Arc::new(model);
    let x0 = random_bits(4 * d, 2);
    for kind in [DlpKind::Dula { alpha: 0.2 }, DlpKind::Dmala { alpha: 0.2 }] {
        let mut chains = DeviceDlp::new(energy.clone(), kind, &x0, 1).unwrap();
        let steps = 5;
        for _ in 0..steps {
            chains.step().unwrap();
        }
        let x = chains.positions().unwrap();
        assert_eq!(x.len(), 4 * d);
        assert!(x.iter().all(|&v| v <= 1));
        assert!(x != x0, "{kind:?}: no chain moved");
        assert!(chains.accepted().unwrap().iter().all(|&a| a <= steps));
        assert_eq!((chains.n_chains(), chains.dim(), chains.steps_taken()), (4, d, steps));
    }
}

/// A model that breaks the [`DeviceEnergy`] contract: a categorical space, or outputs of the
/// wrong dtype or shape.
struct Broken {
    space: Space,
    dtype: DType,
    rows: Option<usize>,
    device: Device,
}

impl DeviceEnergy for Broken {
    fn device(&self) -> &Device {
        &self.device
    }
    fn space(&self) -> &Space {
        &self.space
    }
    fn energy_grad(&self, x: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
        let (n, d) = x.dims2()?;
        let n = self.rows.unwrap_or(n);
        Ok((Tensor::zeros(n, self.dtype, &Device::Cpu)?, Tensor::zeros((n, d), self.dtype, &Device::Cpu)?))
    }
}

#[test]
fn bad_input_is_a_param_error() {
    let rbm = random_rbm(DomainKind::Binary, 4, 2, 1.0, 1);
    let energy: Arc<dyn DeviceEnergy> = Arc::new(TensorRbm::from_rbm(&rbm, &Device::Cpu).unwrap());
    let x0 = vec![0u32; 8];
    let param = expect_param_error::<DeviceDlp>;
    for alpha in [0.0, -1.0, f64::NAN] {
        param(DeviceDlp::new(energy.clone(), DlpKind::Dmala { alpha }, &x0, 0), "step_size");
        param(DeviceDlp::new(energy.clone(), DlpKind::Dula { alpha }, &x0, 0), "step_size");
    }
    let ok = DlpKind::Dmala { alpha: 0.5 };
    for bad in [vec![], vec![0u32; 7], vec![0u32; 9]] {
        param(DeviceDlp::new(energy.clone(), ok, &bad, 0), "x0 must hold");
    }
    param(DeviceDlp::new(energy.clone(), ok, &[0, 1, 2, 0, 0, 0, 0, 0], 0), "x0[2] = 2");
    let categorical = Space { d: 4, kind: DomainKind::Categorical, values: vec![0, 1, 2] };
    param(
        DeviceDlp::new(
            Arc::new(Broken { space: categorical, dtype: DType::F32, rows: None, device: Device::Cpu }),
            ok,
            &x0,
            0,
        ),
        "binary (or spin)",
    );
    let bits = Space::binary(4);
    param(
        DeviceDlp::new(
            Arc::new(Broken { space: bits.clone(), dtype: DType::F64, rows: None, device: Device::Cpu }),
            ok,
            &x0,
            0,
        ),
        "F64",
    );
    param(
        DeviceDlp::new(
            Arc::new(Broken { space: bits, dtype: DType::F32, rows: Some(3), device: Device::Cpu }),
            ok,
            &x0,
            0,
        ),
        "[3]",
    );
    // α = +∞ (the App. D ablation) and spin visibles are accepted.
    assert!(DeviceDlp::new(energy.clone(), DlpKind::Dula { alpha: f64::INFINITY }, &x0, 0).is_ok());
    let spin = random_rbm(DomainKind::Spin, 4, 2, 1.0, 1);
    let chains = DeviceDlp::new(Arc::new(TensorRbm::from_rbm(&spin, &Device::Cpu).unwrap()), ok, &x0, 0).unwrap();
    assert_eq!((chains.n_chains(), chains.dim(), chains.name()), (2, 4, "dmala".to_string()));
}

/// The CUDA source of the generic step, run on the host: `dlp_rbm_propose` and `dlp_rbm_accept`
/// of `kernels/rbm.cu` compiled by g++ under `tests/emu/cuda_shim.hpp` and launched as
/// device_dlp.rs's CUDA backend launches them (zero bias, f(y) in the place of Σ softplus;
/// `common::emu::EmuDlp`), around the model's candle graph on the CPU, give the CPU twin's
/// positions and DMALA's counts bit for bit after every step: TensorRbm (binary and spin; one
/// site; 1,029 sites, more than one pass of the 256-thread block; strong weights and fields)
/// and TensorBnn, DULA and DMALA, α finite and +∞. Bit-identical, no ulp bound: the shim's
/// math functions are the C library's, which the twin calls too.
#[test]
fn cuda_source_run_on_the_host_equals_the_cpu_twin() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = common::emu::build(dir.path(), "rbm_emu") else {
        return;
    };
    let mut kernels = common::emu::RbmKernels::start(&exe);
    let rbm = |domain, d, m, (ws, bs, cs): (f64, f64, f64), seed| {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut draw = |len: usize, s: f64| (0..len).map(|_| rng.random_range(-s..s)).collect::<Vec<_>>();
        let (w, b, c) = (draw(d * m, ws), draw(d, bs), draw(m, cs));
        let model = dlp_models::Rbm::new(domain, d, m, w, b, c).unwrap();
        Arc::new(TensorRbm::from_rbm(&model, &Device::Cpu).unwrap()) as Arc<dyn DeviceEnergy>
    };
    let bnn = Arc::new(TensorBnn::from_bnn(&tiny_bnn(30, 1.0, 5), &Device::Cpu, DType::F32).unwrap());
    // The model, n chains, steps.
    let cases: [(&str, Arc<dyn DeviceEnergy>, usize, u32); 6] = [
        ("rbm binary 12x5", rbm(DomainKind::Binary, 12, 5, (0.8, 1.0, 1.0), 1), 3, 8),
        ("rbm spin 9x4", rbm(DomainKind::Spin, 9, 4, (0.8, 1.0, 1.0), 2), 3, 8),
        ("rbm 1x1", rbm(DomainKind::Binary, 1, 1, (1.0, 1.0, 1.0), 3), 3, 6),
        ("rbm 1029x3", rbm(DomainKind::Spin, 1029, 3, (0.1, 0.5, 0.5), 4), 2, 3),
        ("rbm strong 13x6", rbm(DomainKind::Binary, 13, 6, (12.0, 30.0, 20.0), 5), 3, 6),
        ("bnn 11", bnn, 3, 8),
    ];
    let mut moved = 0;
    for (ci, (what, energy, n, steps)) in cases.iter().enumerate() {
        let d = energy.space().d;
        let x0 = random_bits(n * d, 300 + ci as u64);
        for alpha in [0.3, f64::INFINITY] {
            for kind in [DlpKind::Dula { alpha }, DlpKind::Dmala { alpha }] {
                let seed = 40 + ci as u64;
                let mut twin = DeviceDlp::new(energy.clone(), kind, &x0, seed).unwrap();
                let mut emu = common::emu::EmuDlp::new(energy.as_ref(), kind, &x0, seed);
                for t in 0..*steps {
                    twin.step().unwrap();
                    emu.step(&mut kernels, energy.as_ref());
                    let (x, counts) = emu.state();
                    let at = format!("{what} {kind:?} step {t}");
                    assert!(x == twin.positions().unwrap(), "{at}: the emulated kernels and the CPU twin differ");
                    assert_eq!(counts, twin.accepted().unwrap(), "{at}: accepted counts");
                }
                moved += (twin.positions().unwrap() != x0) as usize;
            }
        }
    }
    assert!(moved >= 20, "only {moved} of 24 runs moved: the comparison saw too little");
}
