//! Device-resident RBM chains (`dlp_device::device_rbm`: DULA, DMALA, block and single-site
//! Gibbs) on the CPU device: every step reconstructed in f64 from the documented Philox
//! streams, streams independent of the number of chains, the law after T steps against
//! dlp-exact's transition matrices, input errors, and the CUDA source of the kernels compiled
//! for the host by g++ against the CPU twin. The same checks on cuda:0: `tests/cuda.rs`.

use candle_core::Device;
use dlp_core::DomainKind;
use dlp_device::device_chains::DeviceChains;
use dlp_device::device_rbm::{DeviceRbm, PURPOSE_HIDDEN, PURPOSE_VISIBLE, RbmSampler};
use dlp_models::Rbm;
use rand::RngExt;

mod common;
use common::rbm::{SAMPLERS, check_against_reference, check_law};
use common::{check_prefix_paths, expect_param_error, random_bits, random_rbm};

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
        check_prefix_paths(&mut a, &mut b, &x8, &format!("{sampler:?}"));
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
    let param = expect_param_error::<DeviceRbm>;
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

/// An RBM with weights, visible and hidden biases uniform on (−`ws`, `ws`), (−`bs`, `bs`) and
/// (−`cs`, `cs`).
fn scaled_rbm(domain: DomainKind, (d, m): (usize, usize), (ws, bs, cs): (f64, f64, f64), seed: u64) -> Rbm {
    let mut rng = dlp_core::setup_rng(seed);
    let mut draw = |len: usize, s: f64| common::uniform(&mut rng, len, s);
    let (w, b, c) = (draw(d * m, ws), draw(d, bs), draw(m, cs));
    Rbm::new(domain, d, m, w, b, c).unwrap()
}

/// The CUDA source, run on the host: `kernels/rbm.cu` (and `philox.cuh`) compiled by g++ under
/// the shim of `tests/emu/cuda_shim.hpp` (a fiber per CUDA thread, barriers for
/// `__syncthreads` and the warp shuffles of `dlp_block_sum`), launched as device_rbm.rs's CUDA
/// backend launches it (`common::emu::EmuRbm`), gives the CPU twin's positions and DMALA's
/// accepted counts bit for bit after every step: all five kernels (propose, hidden, accept,
/// bernoulli for both layers, gibbs_site), all four samplers, both domains, on tiny sizes
/// (d = M = 1), odd ones (no multiple of 4 or of the 256-thread block), rows longer than one
/// pass of the block (d or M > 4 · 256 = 1024: a thread's second group of four), strong
/// weights and fields (|W| up to 12, |b| up to 30: saturated σ, exp(−|ℓ|) below f32's normal
/// range), α = +∞ (1/(2α) = 0) and a tiny α (no flip ever proposed: DMALA accepts the empty
/// move). No ulp bound is needed: the shim's expf, log1pf and log are the C library's, which
/// the twin calls too, and both round every operation as written (see the shim's header).
/// What it cannot show is what only a GPU does: nvcc's fused multiply-adds and CUDA's own
/// expf / log1pf (`tests/cuda.rs`).
#[test]
fn cuda_source_run_on_the_host_equals_the_cpu_twin() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = common::emu::build(dir.path(), "rbm_emu") else {
        return;
    };
    let mut kernels = common::emu::RbmKernels::start(&exe);
    // (d, M), n chains, steps, weight / visible / hidden bias scales, the DLP step size α.
    type Case = ((usize, usize), usize, u32, (f64, f64, f64), f64);
    let cases: [Case; 6] = [
        ((1, 1), 3, 6, (1.0, 1.0, 1.0), 0.3),
        ((5, 3), 3, 12, (0.8, 1.0, 1.0), 0.3),
        ((1029, 6), 2, 3, (0.1, 0.5, 0.5), 0.2),
        ((7, 1027), 2, 9, (0.08, 1.0, 1.0), 0.4),
        ((13, 6), 3, 8, (12.0, 30.0, 20.0), f64::INFINITY),
        ((9, 4), 2, 4, (1.0, 1.0, 1.0), 1e-3),
    ];
    let (mut launches, mut moved) = (0, 0);
    for (ci, &((d, m), n, steps, scales, alpha)) in cases.iter().enumerate() {
        for domain in [DomainKind::Binary, DomainKind::Spin] {
            let rbm = scaled_rbm(domain, (d, m), scales, 100 + ci as u64);
            let x0 = random_bits(n * d, 200 + ci as u64);
            for sampler in
                [RbmSampler::Dula { alpha }, RbmSampler::Dmala { alpha }, RbmSampler::BlockGibbs, RbmSampler::Gibbs]
            {
                let seed = 7 + ci as u64;
                let mut twin = DeviceRbm::new(&rbm, sampler, &x0, seed, &Device::Cpu).unwrap();
                let mut emu = common::emu::EmuRbm::new(&mut kernels, &rbm, sampler, &x0, seed);
                for t in 0..steps {
                    twin.step().unwrap();
                    emu.step(&mut kernels);
                    let what = format!("case {ci} d={d} M={m} {domain:?} {sampler:?} step {t}");
                    let (x, counts) = emu.state();
                    assert!(x == twin.positions().unwrap(), "{what}: the emulated kernels and the CPU twin differ");
                    assert_eq!(counts, twin.accepted().unwrap(), "{what}: accepted counts");
                    launches += 1;
                }
                moved += (twin.positions().unwrap() != x0) as usize;
            }
        }
    }
    eprintln!("{launches} steps compared; {moved} of 48 runs moved");
    assert!(moved >= 40, "only {moved} of 48 runs moved: the comparison saw too little");
}

/// `n` values of regime `regime`: 0 small (|v| < 0.5), 1 moderate (< 8), 2 large (< 120:
/// exp(−|v|) subnormal or zero past 87 and 103), 3 edge values (±0, ±1e−30, ±87.5, ±103.9,
/// ±1e30, ±∞) mixed with moderate ones.
fn kernel_inputs(rng: &mut impl rand::RngExt, n: usize, regime: usize) -> Vec<f32> {
    const EDGES: [f32; 12] =
        [0.0, -0.0, 1e-30, -1e-30, 87.5, -87.5, 103.9, -103.9, 1e30, -1e30, f32::INFINITY, f32::NEG_INFINITY];
    (0..n)
        .map(|_| match regime {
            0 => rng.random_range(-0.5..0.5),
            1 => rng.random_range(-8.0..8.0),
            2 => rng.random_range(-120.0..120.0),
            _ if rng.random::<bool>() => EDGES[rng.random_range(0..EDGES.len())],
            _ => rng.random_range(-8.0..8.0),
        })
        .collect()
}

/// Bit patterns, so that the comparison is bit for bit (−0 ≠ +0, NaN payloads count).
fn bit_patterns(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Each kernel of `kernels/rbm.cu`, run on the host under `tests/emu/cuda_shim.hpp`, against
/// its CPU twin in device_rbm.rs on the same inputs, every output buffer bit for bit: propose
/// (Y, log q), hidden (S, Σ softplus), accept (X, G, f, counts after the MH selection), both
/// layers' bernoulli, gibbs_site (X and the cached A). Widths 1 … 2,053 (one site; under,
/// at and over a multiple of 4, of the 32-lane warp and of the 256-thread block's 1,024
/// elements per pass), three chains, inputs from the four regimes of [`kernel_inputs`]
/// (including subnormal exponentials, ±∞ and the NaN that ∞ − ∞ makes), step sizes with
/// 1/(2α) = 0, 1.67, 500, and step indices up to u32::MAX: 11 widths × 4 regimes × 5 kernels
/// (6 launches). Bit-identical, no ulp bound: see the shim's header.
#[test]
fn each_kernel_run_on_the_host_equals_its_cpu_twin() {
    use common::emu::{ACCEPT, BERNOULLI, Buf, GIBBS_SITE, HIDDEN, PROPOSE, RbmKernels};
    use dlp_device::device_rbm::{bernoulli_row, cpu_accept, cpu_propose, gibbs_site_row, hidden_row};
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = common::emu::build(dir.path(), "rbm_emu") else {
        return;
    };
    let mut k = RbmKernels::start(&exe);
    let mut rng = dlp_core::setup_rng(2024);
    let n = 3;
    let mut cases = 0;
    for w in [1usize, 2, 3, 4, 5, 31, 257, 1023, 1024, 1025, 2053] {
        for regime in 0..4 {
            let what = format!("width {w}, regime {regime}");
            let key = [rng.random::<u32>(), rng.random::<u32>()];
            let step = if regime == 3 { u32::MAX } else { rng.random::<u32>() };
            let hia = [0.0f32, (0.5f64 / 0.3) as f32, 500.0, 1.7][regime];
            let x = random_bits(n * w, rng.random()).iter().map(|&v| v as f32).collect::<Vec<_>>();
            let (g, b) = (kernel_inputs(&mut rng, n * w, regime), kernel_inputs(&mut rng, w, regime));
            let scalars = [w as u32, hia.to_bits(), key[0], key[1], step];

            // propose
            let (want_y, want_q) = cpu_propose(&x, &g, &b, hia, key, step);
            let (mut y, mut q) = (vec![f32::NAN; n * w], vec![f32::NAN; n]);
            k.launch(
                PROPOSE,
                n,
                &mut [Buf::In(&x), Buf::In(&g), Buf::In(&b), Buf::F(&mut y), Buf::F(&mut q)],
                &scalars,
            );
            assert_eq!(bit_patterns(&y), bit_patterns(&want_y), "propose Y, {what}");
            assert_eq!(bit_patterns(&q), bit_patterns(&want_q), "propose log q, {what}");

            // hidden
            let a = kernel_inputs(&mut rng, n * w, regime);
            let (mut want_s, mut want_sp) = (vec![0f32; n * w], vec![0f32; n]);
            for j in 0..n {
                want_sp[j] = hidden_row(&a[j * w..(j + 1) * w], &b, &mut want_s[j * w..(j + 1) * w]);
            }
            let (mut s, mut sp) = (vec![f32::NAN; n * w], vec![f32::NAN; n]);
            k.launch(HIDDEN, n, &mut [Buf::In(&a), Buf::In(&b), Buf::F(&mut s), Buf::F(&mut sp)], &[w as u32]);
            assert_eq!(bit_patterns(&s), bit_patterns(&want_s), "hidden S, {what}");
            assert_eq!(bit_patterns(&sp), bit_patterns(&want_sp), "hidden Σ softplus, {what}");

            // accept, on the proposal above, with f(x) and Σ softplus drawn; in the edge regime
            // f(x) = log q = −∞, the set-up pass's unconditional acceptance
            let gy = kernel_inputs(&mut rng, n * w, regime);
            let mut per_chain =
                || kernel_inputs(&mut rng, n, regime.min(2)).iter().map(|v| 10.0 * v).collect::<Vec<_>>();
            let (fx, spy) = (per_chain(), per_chain());
            let (fx, logq) =
                if regime == 3 { (vec![f32::NEG_INFINITY; n], vec![f32::NEG_INFINITY; n]) } else { (fx, q) };
            let count0: Vec<u32> = (0..n as u32).map(|j| 7 * j).collect();
            let (mut wx, mut wg, mut wf, mut wc) = (x.clone(), g.clone(), fx.clone(), count0.clone());
            cpu_accept(&mut wx, &mut wg, &mut wf, &mut wc, &y, &gy, &spy, &logq, &b, hia, key, step);
            let (mut ex, mut eg, mut ef, mut ec) = (x.clone(), g.clone(), fx.clone(), count0.clone());
            let mut bufs = [
                Buf::F(&mut ex),
                Buf::F(&mut eg),
                Buf::F(&mut ef),
                Buf::U(&mut ec),
                Buf::In(&y),
                Buf::In(&gy),
                Buf::In(&spy),
                Buf::In(&logq),
                Buf::In(&b),
            ];
            k.launch(ACCEPT, n, &mut bufs, &scalars);
            assert_eq!(bit_patterns(&ex), bit_patterns(&wx), "accept X, {what}");
            assert_eq!(bit_patterns(&eg), bit_patterns(&wg), "accept G, {what}");
            assert_eq!(bit_patterns(&ef), bit_patterns(&wf), "accept f, {what}");
            assert_eq!(ec, wc, "accept counts, {what}");

            // bernoulli, both purposes
            for purpose in [PURPOSE_HIDDEN, PURPOSE_VISIBLE] {
                let mut want = vec![0f32; n * w];
                for j in 0..n {
                    bernoulli_row(
                        &a[j * w..(j + 1) * w],
                        &b,
                        key,
                        j as u32,
                        step,
                        purpose,
                        &mut want[j * w..(j + 1) * w],
                    );
                }
                let mut out = vec![f32::NAN; n * w];
                let sc = [w as u32, key[0], key[1], step, purpose];
                k.launch(BERNOULLI, n, &mut [Buf::In(&a), Buf::In(&b), Buf::F(&mut out)], &sc);
                assert_eq!(bit_patterns(&out), bit_patterns(&want), "bernoulli {purpose}, {what}");
            }

            // gibbs_site: d = 5 visibles (odd), M = w hidden units
            let d = 5;
            let xs = random_bits(n * d, rng.random()).iter().map(|&v| v as f32).collect::<Vec<_>>();
            let (wm, bs) = (kernel_inputs(&mut rng, d * w, regime), kernel_inputs(&mut rng, d, regime));
            let (mut wantx, mut wanta) = (xs.clone(), a.clone());
            for j in 0..n {
                let (xr, ar) = (&mut wantx[j * d..(j + 1) * d], &mut wanta[j * w..(j + 1) * w]);
                gibbs_site_row(xr, ar, &wm, &bs, &b, key, j as u32, step);
            }
            let (mut ex, mut ea) = (xs.clone(), a.clone());
            let sc = [d as u32, w as u32, key[0], key[1], step];
            let mut bufs = [Buf::F(&mut ex), Buf::F(&mut ea), Buf::In(&wm), Buf::In(&bs), Buf::In(&b)];
            k.launch(GIBBS_SITE, n, &mut bufs, &sc);
            assert_eq!(bit_patterns(&ex), bit_patterns(&wantx), "gibbs_site X, {what}");
            assert_eq!(bit_patterns(&ea), bit_patterns(&wanta), "gibbs_site A, {what}");
            cases += 1;
        }
    }
    eprintln!("{cases} input sets, 6 launches each, equal bit for bit");
}
