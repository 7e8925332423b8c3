//! Every check that needs a GPU, in one test binary (`just gpu-bundle` ships it to a lent GPU
//! machine; `scripts/gpu_check.sh` runs it there): each tensor target and device kernel on
//! `cuda:0` against the same computation on the CPU. Without the `cuda` feature (CI, every CPU
//! build) the file still compiles against the CPU build of the crate, so an API change cannot
//! break it unseen, and each test is #[ignore]d with the reason (`.ci/skips.py` lists it with
//! the tiers CI does not claim); with the feature and no visible GPU, each test says so and
//! returns (`DLP_REQUIRE_GPU=1` makes that a failure).

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use dlp_core::{Batch, ContinuousTarget, DomainKind, Space, Target, setup_rng};
use dlp_device::device_chains::DeviceChains;
use dlp_device::device_lattice::{DeviceLattice, LatticeSampler};
use dlp_models::{BnnModel, Couplings, IsingModel, PottsModel, Rbm};
use dlp_papers::binary_nn::BinaryNet;
use dlp_tensor::bert::{BertMlm, WeightLayout, random_weights};
use dlp_tensor::ebm::{ResNetConfig, ResNetEbm};
use dlp_tensor::{TensorBnn, TensorPotts, TensorRbm};
use rand::RngExt;

mod common;
use common::{bert, gpu, max_rel_diff, random_states, uniform};

/// f and ∇f of `xs` on the GPU model equal the CPU model's to `tol` relative (f32 on both:
/// the two devices sum in different orders).
fn same_target(cpu: &dyn Target, gpu: &dyn Target, xs: &[u32], tol: f64, what: &str) {
    let (d, gl) = (cpu.space().d, cpu.space().grad_len());
    let n = xs.len() / d;
    let (mut f0, mut g0) = (vec![0.0; n], vec![0.0; n * gl]);
    let (mut f1, mut g1) = (vec![0.0; n], vec![0.0; n * gl]);
    cpu.evaluate(xs, Batch::Full, &mut f0, Some(&mut g0)).expect("cpu evaluation");
    gpu.evaluate(xs, Batch::Full, &mut f1, Some(&mut g1)).expect("cuda evaluation");
    for (a, b) in f1.iter().zip(&f0).chain(g1.iter().zip(&g0)) {
        assert!((a - b).abs() <= tol * b.abs().max(1.0), "{what}: cuda {a} vs cpu {b}");
    }
    assert!(g0.iter().any(|&g| g != 0.0), "{what}: the gradient is not trivially zero");
}

#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "GPU tier: needs a CUDA GPU and the cuda feature (just check-cuda)")]
fn tensor_rbm_on_cuda_matches_cpu() {
    let Some(dev) = gpu() else { return };
    let (d, m) = (40, 17);
    let mut rng = setup_rng(1);
    let rbm = Rbm::new(
        DomainKind::Binary,
        d,
        m,
        uniform(&mut rng, d * m, 0.5),
        uniform(&mut rng, d, 1.0),
        uniform(&mut rng, m, 1.0),
    )
    .unwrap();
    let cpu = TensorRbm::from_rbm(&rbm, &Device::Cpu).unwrap();
    let cuda = TensorRbm::from_rbm(&rbm, &dev).unwrap();
    same_target(&cpu, &cuda, &random_states(2, 33, d, 2), 1e-5, "rbm");
}

#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "GPU tier: needs a CUDA GPU and the cuda feature (just check-cuda)")]
fn tensor_potts_on_cuda_matches_cpu() {
    let Some(dev) = gpu() else { return };
    let (d, k) = (12, 3);
    let mut rng = setup_rng(3);
    let mut j = vec![0.0; d * d];
    for a in 0..d {
        for b in a + 1..d {
            let v = rng.random_range(-0.5..0.5);
            j[a * d + b] = v;
            j[b * d + a] = v;
        }
    }
    let h = uniform(&mut rng, d * k, 1.0);
    let potts = PottsModel::new(Space::categorical(d, k), Couplings::from_dense(d, &j).unwrap(), h).unwrap();
    let cpu = TensorPotts::from_potts(&potts, &Device::Cpu).unwrap();
    let cuda = TensorPotts::from_potts(&potts, &dev).unwrap();
    same_target(&cpu, &cuda, &random_states(4, 9, d, k as u32), 1e-5, "potts");
}

#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "GPU tier: needs a CUDA GPU and the cuda feature (just check-cuda)")]
fn tensor_bnn_on_cuda_matches_cpu() {
    let Some(dev) = gpu() else { return };
    let (n, p, h) = (200, 5, 7);
    let d = (p + 2) * h + 1;
    let mut rng = setup_rng(5);
    let x = uniform(&mut rng, n * p, 1.0);
    let y: Vec<f64> = (0..n).map(|_| f64::from(rng.random::<f64>() < 0.5)).collect();
    let model = BnnModel::new(d, p, h, 100.0, x, y).unwrap();
    let cpu = TensorBnn::from_bnn(&model, &Device::Cpu, DType::F32).unwrap();
    let cuda = TensorBnn::from_bnn(&model, &dev, DType::F32).unwrap();
    same_target(&cpu, &cuda, &random_states(6, 8, d, 2), 1e-4, "bnn");
}

/// Paper 001's binary neural network (`001-bnn`): on cuda:0 the log density and its gradient
/// (full batch and a minibatch with a repeated item, through `ContinuousTarget::evaluate`), the
/// continuous and the binarised predictions equal the CPU's to 1e-4 (f32, a 12–7–3 net, 64
/// items: sums of ≤ 64 f32 terms, so the two devices' summation orders differ by ≈ 1e-6).
#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "GPU tier: needs a CUDA GPU and the cuda feature (just check-cuda)")]
fn binary_nn_on_cuda_matches_cpu() {
    let Some(dev) = gpu() else { return };
    let (n, layers) = (64, [12, 7, 3]);
    let mut rng = setup_rng(11);
    let images: Vec<f32> = uniform(&mut rng, n * layers[0], 1.0).iter().map(|&v| v.abs() as f32).collect();
    let labels: Vec<u8> = (0..n).map(|_| rng.random_range(0..3u8)).collect();
    let nets =
        [&Device::Cpu, &dev].map(|d| BinaryNet::new(&images, &labels, &layers, (2.0, 2.0), d, DType::F32).unwrap());
    let d = nets[0].n_weights();
    let w = uniform(&mut rng, 2 * d, 0.9);
    let items = [3, 17, 5, 40, 3, 63];
    for batch in [Batch::Full, Batch::Items(&items)] {
        let [(lp_c, g_c), (lp_g, g_g)] = nets.each_ref().map(|net| {
            let (mut lp, mut g) = (vec![0.0; 2], vec![0.0; 2 * d]);
            net.evaluate(&w, batch, &mut lp, Some(&mut g)).unwrap();
            (lp, g)
        });
        assert!(max_rel_diff(&lp_g, &lp_c) < 1e-4, "binary nn log density: cpu {lp_c:?}, cuda {lp_g:?}");
        let gmax = g_c.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let gerr = g_c.iter().zip(&g_g).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(gerr < 1e-4 * gmax, "binary nn gradient: max difference {gerr:e} (largest |g| {gmax})");
    }
    let sets = nets.each_ref().map(|net| net.eval_set(&images[..20 * layers[0]], &labels[..20]).unwrap());
    let wd = &w[..d];
    let (p_c, p_g) = (nets[0].predict(wd, &sets[0], 7).unwrap(), nets[1].predict(wd, &sets[1], 7).unwrap());
    assert!(max_rel_diff(&p_g, &p_c) < 1e-4, "binary nn predictions differ");
    let (b_c, b_g) =
        (nets[0].predict_binarised(wd, &sets[0], 7).unwrap(), nets[1].predict_binarised(wd, &sets[1], 7).unwrap());
    assert!(max_rel_diff(&b_g, &b_c) < 1e-4, "binarised binary nn predictions differ");
}

#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "GPU tier: needs a CUDA GPU and the cuda feature (just check-cuda)")]
fn resnet_ebm_on_cuda_matches_cpu() {
    let Some(dev) = gpu() else { return };
    let cfg = ResNetConfig { channels: 8, stride2_blocks: 1, stride1_blocks: 1, height: 8, width: 8 };
    let mu = vec![0.3; cfg.d()];
    let cpu = ResNetEbm::new(cfg, &mu, DType::F32, &Device::Cpu, &mut setup_rng(7)).unwrap();
    let cuda = ResNetEbm::new(cfg, &mu, DType::F32, &dev, &mut setup_rng(7)).unwrap();
    same_target(&cpu, &cuda, &random_states(8, 5, cfg.d(), 2), 1e-4, "resnet ebm");
}

/// Logits, energy and ∂f/∂X of the BERT energy on CUDA equal the CPU's to 1e-4 (f32; the CPU
/// takes the fused ops, CUDA the elementary ones).
#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "GPU tier: needs a CUDA GPU and the cuda feature (just check-cuda)")]
fn bert_on_cuda_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let cfg = bert::config(300, 32, 2, 4, 64);
    let w = random_weights(&cfg, 0.2, 71, WeightLayout { gamma_beta: false, tied: true });
    let cpu_model = BertMlm::new(&cfg, VarBuilder::from_tensors(w.clone(), DType::F32, &Device::Cpu)).unwrap();
    let gpu_model = BertMlm::new(&cfg, VarBuilder::from_tensors(w, DType::F32, &gpu)).unwrap();
    let mut rng = setup_rng(72);
    let ids: Vec<u32> = (0..4 * 11).map(|_| rng.random_range(0..300u32)).collect();
    let on = |d: &Device| Tensor::from_vec(ids.clone(), (4, 11), d).unwrap();
    let masked = [1usize, 4, 5, 9];
    let flat = |t: &Tensor| t.flatten_all().unwrap().to_device(&Device::Cpu).unwrap().to_vec1::<f32>().unwrap();
    let close = |a: Vec<f32>, b: Vec<f32>, what: &str| {
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() <= 1e-4 * y.abs().max(1.0), "{what}: cuda {x} vs cpu {y}");
        }
    };
    close(
        flat(&gpu_model.logits_from_ids(&on(&gpu)).unwrap()),
        flat(&cpu_model.logits_from_ids(&on(&Device::Cpu)).unwrap()),
        "logits",
    );
    let (fg, gg) = gpu_model.energy_grad(&on(&gpu), &masked).unwrap();
    let (fc, gc) = cpu_model.energy_grad(&on(&Device::Cpu), &masked).unwrap();
    close(flat(&fg), flat(&fc), "energy");
    close(flat(&gg), flat(&gc), "gradient");
}

/// The lattice kernels (`kernels/lattice.cu`) against their CPU twin: identical positions and
/// accepted counts every 10 steps (the decisions are integer comparisons with the same u64
/// thresholds and Philox words; DMALA's f64 ratio is formed in the same order with fused
/// multiply-adds disabled), on square and thin tori (3 columns: an 8-site group spans three
/// rows; 1,100 columns: a row longer than a block's segment), both domains, DULA and DMALA.
#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "GPU tier: needs a CUDA GPU and the cuda feature (just check-cuda)")]
fn cuda_kernels_equal_the_cpu_twin() {
    let Some(gpu) = gpu() else { return };
    for (rows, cols) in [(3, 3), (10, 10), (64, 64), (700, 3), (5, 1100)] {
        let d = rows * cols;
        for spin in [true, false] {
            let domain = if spin { DomainKind::Spin } else { DomainKind::Binary };
            let m = IsingModel::lattice(&[rows, cols], true, 0.3, vec![0.05; d], domain).unwrap();
            let x0 = random_states((rows * 1000 + cols) as u64, 37, d, 2);
            for kind in [LatticeSampler::Dula { alpha: 0.4 }, LatticeSampler::Dmala { alpha: 0.4 }] {
                let mut cpu = DeviceLattice::new(&m, kind, &x0, 11, &Device::Cpu).unwrap();
                let mut cuda = DeviceLattice::new(&m, kind, &x0, 11, &gpu).unwrap();
                for t in 0..50 {
                    cpu.step().unwrap();
                    cuda.step().unwrap();
                    if t % 10 == 9 {
                        cuda.sync().unwrap();
                        let what = format!("{rows}x{cols} spin={spin} {kind:?} step {t}");
                        assert_eq!(cuda.positions().unwrap(), cpu.positions().unwrap(), "{what}");
                        assert_eq!(cuda.accepted().unwrap(), cpu.accepted().unwrap(), "{what}");
                    }
                }
                assert!(cuda.histograms_consistent().unwrap());
            }
        }
    }
}

/// `DeviceDlp` (`device_dlp.rs`: the RBM's propose and accept kernels around the model's
/// candle graph) on a TensorRbm on cuda:0, against the same chains on the CPU twin: the same
/// streams, with f and ∇f rounded differently (cuBLAS and CUDA's `expf` vs candle's CPU ops),
/// so a path may separate only after a near tie (a uniform within ~1e−6 of its probability;
/// ~1e−4 per chain-step here). Robust check: ≥ 90% of the chains identical over all 20 steps,
/// DULA and DMALA, binary and spin; DMALA's counts in [0, steps]; and a TensorBnn run on the
/// GPU keeps its states bits.
#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "GPU tier: needs a CUDA GPU and the cuda feature (just check-cuda)")]
fn device_dlp_on_cuda_matches_the_cpu_twin() {
    use dlp_device::device_chains::DeviceChains;
    use dlp_device::device_dlp::{DeviceDlp, DlpKind};
    use std::sync::Arc;
    let Some(gpu) = gpu() else { return };
    let (d, m, n, steps) = (50, 20, 64, 20u64);
    for domain in [DomainKind::Binary, DomainKind::Spin] {
        let mut rng = setup_rng(7);
        let (w, b, c) = (uniform(&mut rng, d * m, 0.5), uniform(&mut rng, d, 1.0), uniform(&mut rng, m, 1.0));
        let rbm = Rbm::new(domain, d, m, w, b, c).unwrap();
        let x0 = random_states(8, n, d, 2);
        for kind in [DlpKind::Dula { alpha: 0.3 }, DlpKind::Dmala { alpha: 0.3 }] {
            let on =
                |dev: &Device| DeviceDlp::new(Arc::new(TensorRbm::from_rbm(&rbm, dev).unwrap()), kind, &x0, 3).unwrap();
            let (mut cpu, mut cuda) = (on(&Device::Cpu), on(&gpu));
            let mut same = vec![true; n];
            for _ in 0..steps {
                cpu.step().unwrap();
                cuda.step().unwrap();
                let (pc, pg) = (cpu.positions().unwrap(), cuda.positions().unwrap());
                for (j, s) in same.iter_mut().enumerate() {
                    *s &= pc[j * d..(j + 1) * d] == pg[j * d..(j + 1) * d];
                }
            }
            cuda.sync().unwrap();
            let identical = same.iter().filter(|&&s| s).count();
            eprintln!("device_dlp {domain:?} {kind:?}: {identical} of {n} chains identical on cuda and cpu");
            assert!(identical * 10 >= n * 9, "{domain:?} {kind:?}: only {identical} of {n} chains identical");
            assert!(cuda.positions().unwrap() != x0, "{kind:?}: the GPU chains never moved");
            let (ac, ag) = (cpu.accepted().unwrap(), cuda.accepted().unwrap());
            assert!(ag.iter().all(|&a| a <= steps));
            assert!((0..n).filter(|&j| same[j]).all(|j| ac[j] == ag[j]), "identical paths, different counts");
        }
    }
    let mut rng = setup_rng(9);
    let bnn = BnnModel::new(37, 4, 6, 20.0, uniform(&mut rng, 23 * 4, 2.0), vec![1.0; 23]).unwrap();
    let energy = Arc::new(TensorBnn::from_bnn(&bnn, &gpu, DType::F32).unwrap());
    let mut chains = DeviceDlp::new(energy, DlpKind::Dmala { alpha: 0.4 }, &random_states(10, 16, 37, 2), 1).unwrap();
    for _ in 0..10 {
        chains.step().unwrap();
    }
    assert!(chains.positions().unwrap().iter().all(|&v| v <= 1));
    assert!(chains.accepted().unwrap().iter().all(|&a| a <= 10));
}

/// `DeviceRbm` on cuda:0: the same f64 reconstruction of every step as `tests/device_rbm.rs`
/// on the CPU, the CPU twin's positions equal to the GPU's wherever neither device hit a near
/// tie, and the law.
#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "GPU tier: needs a CUDA GPU and the cuda feature (just check-cuda)")]
fn cuda_agrees_with_the_reference_and_the_cpu_twin() {
    use common::rbm::{check_against_reference, check_law};
    let Some(gpu) = gpu() else { return };
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
