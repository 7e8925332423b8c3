//! The device lattice kernel (`dlp_device::device_lattice`) on the CPU device (its CPU twin):
//! exact flip probabilities against the CPU fast path and the generic DLP logits on every
//! state of small tori, DMALA's acceptance ratio against the generic formula, agreement in
//! law with the exact stationary laws of `dlp-exact`, per-chain streams, bad input, and the
//! CUDA source compiled for the host by g++ against the twin. The GPU kernels against the twin
//! bit for bit: `tests/cuda.rs`.

use dlp_core::TargetExt;
use dlp_core::math::sigmoid;
use dlp_core::{DomainKind, Target};
use dlp_device::device_chains::DeviceChains;
use dlp_device::device_lattice::{DeviceLattice, LatticeSampler};
use dlp_models::IsingModel;
use dlp_samplers::dlp::{DlpProposal, log_accept_ratio};
use dlp_samplers::fast::ising::IsingDlpChains;
use dlp_tensor::{Device, Error};
use rand::RngExt;

mod common;
use common::{chi2, chi2_limit};

fn lattice(rows: usize, cols: usize, w: f64, b: f64, spin: bool) -> IsingModel {
    let domain = if spin { DomainKind::Spin } else { DomainKind::Binary };
    IsingModel::lattice(&[rows, cols], true, w, vec![b; rows * cols], domain).unwrap()
}

/// (spin, α, w, b): both domains, weak and strong couplings of both signs, small and large α.
const CASES: [(bool, f64, f64, f64); 6] = [
    (true, 0.3, 0.2, 0.1),
    (true, 1.5, -0.45, 0.0),
    (true, 0.05, 0.8, -0.3),
    (false, 0.4, 0.6, -0.2),
    (false, 2.0, -1.1, 0.5),
    (false, 0.1, 0.3, 0.0),
];

fn all_states(m: &IsingModel) -> Vec<u32> {
    dlp_exact::enumerate::all_states(m.space(), 1 << 12).unwrap()
}

/// Every site's flip probability T/2⁶⁴ on every state of the 3 × 3 and 3 × 4 tori equals the
/// CPU fast kernel's exactly and the generic DLP probability σ(ℓ) to 1e-12.
#[test]
fn flip_probabilities_equal_the_fast_kernel_and_generic_dlp_on_every_state() {
    for (rows, cols) in [(3, 3), (3, 4)] {
        for &(spin, alpha, w, b) in &CASES {
            let m = lattice(rows, cols, w, b, spin);
            let d = rows * cols;
            let lat = DeviceLattice::new(&m, LatticeSampler::Dula { alpha }, &vec![0; d], 1, &Device::Cpu).unwrap();
            let proposal = DlpProposal::new(alpha, None).unwrap();
            let fast = IsingDlpChains::new(&m, proposal.half_inv_step(0), false, &vec![0; d]).unwrap();
            let (mut g, mut l, mut z) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
            for x in all_states(&m).chunks(d) {
                let p = lat.flip_probabilities(x);
                assert_eq!(p, fast.flip_probabilities(x), "{rows}x{cols} {spin} {alpha} {w} {b} x={x:?}");
                m.log_density_grad(x, &mut g).unwrap();
                proposal.logits(m.space(), x, &g, &mut l, &mut z);
                for i in 0..d {
                    let want = sigmoid(l[i]);
                    assert!((p[i] - want).abs() < 1e-12, "site {i} of {x:?}: {} vs generic {want}", p[i]);
                }
            }
        }
    }
}

/// The generic DMALA log acceptance ratio f(y) − f(x) + log q(x|y) − log q(y|x).
fn generic_ratio(m: &IsingModel, proposal: &DlpProposal, x: &[u32], y: &[u32]) -> f64 {
    let d = x.len();
    let space = m.space();
    let (mut g, mut l, mut z) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
    let fx = m.log_density_grad(x, &mut g).unwrap();
    let lzx = proposal.logits(space, x, &g, &mut l, &mut z);
    let fwd = proposal.log_prob(space, x, y, &l, lzx);
    let fy = m.log_density_grad(y, &mut g).unwrap();
    let lzy = proposal.logits(space, y, &g, &mut l, &mut z);
    let rev = proposal.log_prob(space, y, x, &l, lzy);
    log_accept_ratio(fx, fy, fwd, rev)
}

/// DMALA's ratio from class statistics equals the generic one to 1e-12: every (x, y) pair
/// of the 3 × 3 torus for the first spin and binary cases, 20,000 random pairs of the 3 × 3
/// and 3 × 4 tori for every case.
#[test]
fn dmala_log_accept_ratios_equal_the_generic_ones() {
    let mut rng = dlp_core::setup_rng(5);
    for (rows, cols) in [(3, 3), (3, 4)] {
        for (ci, &(spin, alpha, w, b)) in CASES.iter().enumerate() {
            let m = lattice(rows, cols, w, b, spin);
            let d = rows * cols;
            let lat = DeviceLattice::new(&m, LatticeSampler::Dmala { alpha }, &vec![0; d], 1, &Device::Cpu).unwrap();
            let proposal = DlpProposal::new(alpha, None).unwrap();
            let states = all_states(&m);
            let n_states = states.len() / d;
            let state = |i: usize| &states[i * d..(i + 1) * d];
            let check = |x: &[u32], y: &[u32]| {
                let (a, want) = (lat.log_accept_ratio(x, y), generic_ratio(&m, &proposal, x, y));
                assert!((a - want).abs() < 1e-12, "case {ci} x={x:?} y={y:?}: {a} vs generic {want}");
            };
            if rows == 3 && cols == 3 && (ci == 0 || ci == 3) {
                for i in 0..n_states {
                    for k in 0..n_states {
                        check(state(i), state(k));
                    }
                }
            } else {
                for _ in 0..20_000 {
                    check(state(rng.random_range(0..n_states)), state(rng.random_range(0..n_states)));
                }
            }
        }
    }
}

/// Index of a bit row in `all_states`' order (last coordinate fastest).
fn index_of(x: &[u32]) -> usize {
    x.iter().fold(0, |a, &v| 2 * a + v as usize)
}

/// The exact law of the state after `steps` steps from a uniformly drawn start (u Pᵗ, u
/// uniform) and the stationary law of P, the exact transition matrix of DULA (`mh` false) or
/// DMALA from `dlp_exact::reference::dlp`.
fn exact_laws(m: &IsingModel, alpha: f64, mh: bool, steps: usize) -> (Vec<f64>, Vec<f64>) {
    let p = dlp_exact::reference::dlp(m, alpha, None, mh).unwrap();
    let pi = dlp_exact::matrix::stationary(&p).unwrap();
    let mut row = vec![1.0 / p.nrows() as f64; p.nrows()];
    for _ in 0..steps {
        let mut next = vec![0.0; row.len()];
        for (i, &ri) in row.iter().enumerate() {
            for (k, nk) in next.iter_mut().enumerate() {
                *nk += ri * p[(i, k)];
            }
        }
        row = next;
    }
    (row, pi)
}

/// 512 × `per_state` chains of the 3 × 3 torus, chain j starting at state j mod 512 (so
/// the start is exactly uniform), run `steps` steps; returns the final state counts.
fn run_from_every_state(m: &IsingModel, kind: LatticeSampler, per_state: usize, steps: usize, seed: u64) -> Vec<u64> {
    let states = all_states(m);
    let x0: Vec<u32> = (0..per_state).flat_map(|_| states.iter().copied()).collect();
    let mut lat = DeviceLattice::new(m, kind, &x0, seed, &Device::Cpu).unwrap();
    for _ in 0..steps {
        lat.step().unwrap();
    }
    let mut counts = vec![0u64; 512];
    for x in lat.positions().unwrap().chunks(9) {
        counts[index_of(x)] += 1;
    }
    if let LatticeSampler::Dmala { .. } = kind {
        let acc = lat.accepted().unwrap();
        assert!(acc.iter().all(|&a| a <= steps as u64));
        assert!(acc.iter().any(|&a| a < steps as u64), "DMALA rejected nothing");
        assert!(lat.histograms_consistent().unwrap());
    } else {
        assert_eq!(lat.accepted().unwrap(), vec![steps as u64; x0.len() / 9]);
    }
    counts
}

const PER_STATE: usize = 80;
const LAW_STEPS: usize = 60;

/// Agreement in law on the 3 × 3 torus: 40,960 chains (80 from every state) run 60 steps.
/// Their final states are independent (independent Philox streams) draws from u P⁶⁰, which
/// the test first checks is within total variation 1e-5 of the stationary law π_P of the
/// exact transition matrix P (π itself for DMALA; DULA's own biased law for DULA), so the
/// states are, to that accuracy, draws from π_P; then a Pearson χ² test against π_P. The
/// residual shifts the χ² mean by at most n·(2·TV)²/min π_P < 4.1e4 · 4e-10 / 1e-4 ≈ 2e-1,
/// well inside the margin. Each of the four comparisons fails falsely with probability
/// ≈ 1e-6 (Wilson–Hilferty at z = 4.75), so the test's false-failure rate is below 1e-5; the
/// seed is fixed, so a pass is reproducible.
#[test]
fn chains_agree_in_law_with_the_exact_stationary_laws() {
    for (spin, alpha, w, b) in [(true, 1.0, 0.15, 0.1), (false, 1.0, 0.5, -0.3)] {
        let m = lattice(3, 3, w, b, spin);
        for mh in [false, true] {
            let (row, pi) = exact_laws(&m, alpha, mh, LAW_STEPS);
            let tv = 0.5 * row.iter().zip(&pi).map(|(a, b)| (a - b).abs()).sum::<f64>();
            assert!(tv < 1e-5, "spin={spin} mh={mh}: u P^{LAW_STEPS} is {tv} from stationary: run longer");
            let kind = if mh { LatticeSampler::Dmala { alpha } } else { LatticeSampler::Dula { alpha } };
            let counts = run_from_every_state(&m, kind, PER_STATE, LAW_STEPS, 2024);
            let (stat, df) = chi2(&counts, &pi, (PER_STATE * 512) as u64);
            let limit = chi2_limit(df);
            eprintln!("spin={spin} mh={mh}: chi2 {stat:.1} on {df} df (limit {limit:.1}), TV(u P^t, pi) {tv:.1e}");
            assert!(stat < limit, "spin={spin} mh={mh}: chi2 {stat:.1} on {df} df (limit {limit:.1})");
        }
    }
}

/// The same χ² test has power: DULA chains run with step size α = 0.3 are rejected against
/// DULA's stationary law at α = 1 (DULA's law moves with α). This guards the test above
/// against being unable to fail.
#[test]
fn the_law_test_rejects_a_wrong_kernel() {
    let m = lattice(3, 3, 0.15, 0.1, true);
    let (_, pi) = exact_laws(&m, 1.0, false, 0);
    let counts = run_from_every_state(&m, LatticeSampler::Dula { alpha: 0.3 }, PER_STATE, LAW_STEPS, 7);
    let (stat, df) = chi2(&counts, &pi, (PER_STATE * 512) as u64);
    eprintln!("wrong kernel: chi2 {stat:.1} on {df} df (limit {:.1})", chi2_limit(df));
    assert!(stat > chi2_limit(df), "chi2 {stat:.1} on {df} df did not reject the wrong law");
}

fn random_rows(n: usize, d: usize, seed: u64) -> Vec<u32> {
    let mut rng = dlp_core::setup_rng(seed);
    (0..n * d).map(|_| rng.random_range(0..2u32)).collect()
}

fn run(m: &IsingModel, kind: LatticeSampler, x0: &[u32], steps: usize) -> (Vec<u32>, Vec<u64>) {
    let mut lat = DeviceLattice::new(m, kind, x0, 99, &Device::Cpu).unwrap();
    for _ in 0..steps {
        lat.step().unwrap();
    }
    assert_eq!(lat.steps_taken(), steps as u64);
    (lat.positions().unwrap(), lat.accepted().unwrap())
}

/// Chain j's path depends on (seed, j) only: the first 3 of 8 chains end where 3 chains
/// alone do, and one or two rayon threads give the same run; the chains do move.
#[test]
fn chain_streams_do_not_depend_on_chain_count_or_threads() {
    let (rows, cols) = (5, 7);
    let d = rows * cols;
    let x0 = random_rows(8, d, 3);
    for spin in [true, false] {
        let m = lattice(rows, cols, 0.3, 0.05, spin);
        for kind in [LatticeSampler::Dula { alpha: 0.4 }, LatticeSampler::Dmala { alpha: 0.4 }] {
            let (p8, a8) = run(&m, kind, &x0, 25);
            let (p3, a3) = run(&m, kind, &x0[..3 * d], 25);
            assert_eq!(p3, p8[..3 * d], "{kind:?}");
            assert_eq!(a3, a8[..3]);
            assert_ne!(p8, x0, "{kind:?}: no chain moved");
            let pool = |t| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap();
            let one = pool(1).install(|| run(&m, kind, &x0, 25));
            let two = pool(2).install(|| run(&m, kind, &x0, 25));
            assert_eq!(one, two, "{kind:?}");
            assert_eq!(one, (p8, a8));
        }
    }
}

/// DMALA's cached class histograms stay equal to a recomputation on a larger, non-square
/// torus with a partial last 8-site group (d = 9·13 = 117), and its acceptance rate is
/// neither 0 nor 1.
#[test]
fn dmala_histograms_stay_consistent() {
    let m = lattice(9, 13, 0.35, -0.1, true);
    let mut lat =
        DeviceLattice::new(&m, LatticeSampler::Dmala { alpha: 0.3 }, &random_rows(6, 117, 8), 5, &Device::Cpu).unwrap();
    for _ in 0..40 {
        lat.step().unwrap();
        assert!(lat.histograms_consistent().unwrap());
    }
    let acc: u64 = lat.accepted().unwrap().iter().sum();
    assert!(acc > 0 && acc < 6 * 40, "accepted {acc} of 240");
}

fn param_error(r: Result<DeviceLattice, Error>) -> String {
    match r {
        Err(Error::Param(msg)) => msg,
        Err(e) => panic!("expected a parameter error, got {e}"),
        Ok(_) => panic!("expected a parameter error, got chains"),
    }
}

/// Non-lattice models, small or open or 1-D lattices, non-uniform fields, wrong x0 and bad α
/// are refused with a parameter error naming the problem.
#[test]
fn bad_input_is_a_parameter_error() {
    let ok = lattice(4, 4, 0.3, 0.1, true);
    let dula = LatticeSampler::Dula { alpha: 0.5 };
    let new = |m: &IsingModel, kind, x0: &[u32]| DeviceLattice::new(m, kind, x0, 0, &Device::Cpu);
    let edges = IsingModel::from_edges(4, &[(0, 1, 0.3), (1, 2, 0.3)], vec![0.0; 4], DomainKind::Spin).unwrap();
    assert!(param_error(new(&edges, dula, &[0; 4])).contains("periodic 2-D lattice"));
    let open = IsingModel::lattice(&[4, 4], false, 0.3, vec![0.0; 16], DomainKind::Spin).unwrap();
    assert!(param_error(new(&open, dula, &[0; 16])).contains("periodic 2-D lattice"));
    let line = IsingModel::lattice(&[16], true, 0.3, vec![0.0; 16], DomainKind::Spin).unwrap();
    assert!(param_error(new(&line, dula, &[0; 16])).contains("periodic 2-D lattice"));
    let small = lattice(2, 5, 0.3, 0.0, true);
    assert!(param_error(new(&small, dula, &[0; 10])).contains("2 x 5"));
    let mut fields = vec![0.1; 16];
    fields[3] = 0.2;
    let nonuniform = IsingModel::lattice(&[4, 4], true, 0.3, fields, DomainKind::Spin).unwrap();
    assert!(param_error(new(&nonuniform, dula, &[0; 16])).contains("one field"));
    assert!(param_error(new(&ok, dula, &[0; 15])).contains("length 15"));
    assert!(param_error(new(&ok, dula, &[])).contains("length 0"));
    assert!(param_error(new(&ok, dula, &[2; 16])).contains("value 2"));
    for alpha in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(param_error(new(&ok, LatticeSampler::Dmala { alpha }, &[0; 16])).contains("alpha"));
    }
    assert!(new(&ok, dula, &[0; 32]).is_ok());
}

/// The CUDA source, run on the host: `kernels/lattice.cu` compiled by g++ under the shim of
/// `tests/emu/cuda_shim.hpp` (fibers, barriers, warp reductions, shared memory) by
/// `tests/emu/lattice_emu.cpp` and driven with the CUDA backend's layout and launch grid,
/// gives the CPU twin's positions and accepted counts bit for bit — on square and thin tori
/// (3 columns: an 8-site group spans three rows; 1,100 columns: a row longer than a block's
/// segment; 64 × 64: four blocks per chain; 117 sites: a partial last group), both domains,
/// DULA and DMALA. What it cannot check is what only a GPU shows: the launch glue in
/// Rust, the hardware's `__reduce_add_sync`, real concurrency between blocks.
#[test]
fn cuda_source_run_on_the_host_equals_the_cpu_twin() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = common::emu::build(dir.path(), "lattice_emu") else {
        return;
    };
    let cases = [
        (3, 3, 6, true, true, 12),
        (3, 3, 6, false, false, 12),
        (9, 13, 3, false, true, 10),
        (64, 64, 2, true, true, 4),
        (700, 3, 2, true, false, 5),
        (5, 1100, 2, false, true, 4),
        (10, 10, 3, true, false, 9),
    ];
    for (rows, cols, n, spin, mh, steps) in cases {
        let (alpha, w, b, seed) = (0.4, 0.3, 0.05, 11u64);
        let d = rows * cols;
        let m = lattice(rows, cols, w, b, spin);
        let x0 = random_rows(n, d, (rows * 1000 + cols) as u64);
        let kind = if mh { LatticeSampler::Dmala { alpha } } else { LatticeSampler::Dula { alpha } };
        let mut lat = DeviceLattice::new(&m, kind, &x0, seed, &Device::Cpu).unwrap();
        let key = dlp_device::philox::key_of_seed(seed);
        let join = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(" ");
        let mut input = format!("{rows} {cols} {n} {} {} {steps} {} {}\n", spin as u8, mh as u8, key[0], key[1]);
        input += &format!("{} {}\n", w.to_bits(), b.to_bits());
        input += &(join(&mut lat.thresholds().iter().map(|t| t.to_string())) + "\n");
        input += &(join(&mut lat.log_normalisers().iter().map(|v| v.to_bits().to_string())) + "\n");
        input += &(join(&mut x0.iter().map(|v| v.to_string())) + "\n");
        let path = dir.path().join("input.txt");
        std::fs::write(&path, input).unwrap();
        let out = std::process::Command::new(&exe).arg(&path).output().unwrap();
        assert!(out.status.success(), "emulator failed: {}", String::from_utf8_lossy(&out.stderr));
        let got: Vec<u64> =
            String::from_utf8(out.stdout).unwrap().split_whitespace().map(|t| t.parse().unwrap()).collect();
        for _ in 0..steps {
            lat.step().unwrap();
        }
        let mut want: Vec<u64> = lat.positions().unwrap().iter().map(|&v| v as u64).collect();
        want.extend(lat.accepted().unwrap());
        let what = format!("{rows}x{cols} n={n} spin={spin} mh={mh}");
        assert_eq!(got.len(), want.len(), "{what}");
        assert!(got == want, "{what}: the emulated CUDA kernels and the CPU twin differ");
        assert_ne!(want[..n * d], x0.iter().map(|&v| v as u64).collect::<Vec<_>>()[..], "{what}: nothing moved");
    }
}
