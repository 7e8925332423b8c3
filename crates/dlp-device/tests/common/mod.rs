//! Helpers shared by the device-resident sampler tests (`device_rbm.rs`, `device_dlp.rs`,
//! `device_lattice.rs`, `cuda.rs`): random RBMs and states, the documented Philox site
//! uniforms restated, near-tie-aware draws, the f64 reconstruction of a DULA / DMALA step and
//! the step-by-step and law checks built on it, a Pearson χ² test with its limit, and `cuda:0`
//! for the GPU checks, random tensor-target inputs and a relative difference (`cuda.rs`); [`bert`]: a small BERT configuration; [`emu`]: the CUDA kernels run on the
//! host; [`rbm`]: the device RBM checks of `device_rbm.rs` and `cuda.rs`. Each test binary uses a subset of them.

#![allow(dead_code)]

// The small BERT configuration lives with the BERT tests of dlp-tensor; one copy.
#[path = "../../../dlp-tensor/tests/common/bert.rs"]
pub mod bert;
pub mod emu;
pub mod rbm;

use dlp_core::TargetExt;
use dlp_core::math::sigmoid;
use dlp_core::{DomainKind, Space, Target};
use dlp_device::device_chains::DeviceChains;
use dlp_device::device_rbm::{PURPOSE_FLIP, PURPOSE_MH};
use dlp_device::philox::{counter, philox4x32_10, u01_of_u64, u64_of};
use dlp_models::Rbm;
use dlp_samplers::dlp::DlpProposal;
use dlp_tensor::Error;
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

/// The next state of DULA (`mh` false) or DMALA chain `j` from `x` at step `t` with step size
/// `alpha`, computed in f64 from `target`'s own f and ∇f, the host DLP proposal of
/// dlp-samplers and the streams of `key`; `None` on a near tie (a flip uniform within 1e−5 of
/// its probability, or ln u within 1e−3 of DMALA's log ratio: the f32 errors of the small
/// models tested are ≲ 1e−5).
pub fn dlp_reference_step(
    target: &dyn Target,
    alpha: f64,
    mh: bool,
    key: [u32; 2],
    j: usize,
    t: u32,
    x: &[u32],
) -> Option<Vec<u32>> {
    let d = target.space().d;
    let space = target.space().clone();
    let proposal = DlpProposal::new(alpha, None).unwrap();
    let (mut f, mut g) = ([0.0], vec![0.0; d]);
    target.log_density_grad_batch(x, &mut f, &mut g).unwrap();
    let (mut l, mut z) = (vec![0.0; d], vec![0.0; d]);
    let log_z = proposal.logits(&space, x, &g, &mut l, &mut z);
    let flips = draws((0..d).map(|i| (site_u(key, j, t, PURPOSE_FLIP, i), sigmoid(l[i]))), 1e-5)?;
    let y: Vec<u32> = x.iter().zip(&flips).map(|(a, b)| a ^ b).collect();
    if !mh {
        return Some(y);
    }
    let (mut fy, mut gy) = ([0.0], vec![0.0; d]);
    target.log_density_grad_batch(&y, &mut fy, &mut gy).unwrap();
    let (mut ly, mut zy) = (vec![0.0; d], vec![0.0; d]);
    let log_zy = proposal.logits(&space, &y, &gy, &mut ly, &mut zy);
    let ratio =
        fy[0] - f[0] + proposal.log_prob(&space, &y, x, &ly, log_zy) - proposal.log_prob(&space, x, &y, &l, log_z);
    let r = philox4x32_10(counter(j as u32, t, PURPOSE_MH, 0), key);
    let ln_u = u01_of_u64(u64_of(r[0], r[1])).ln();
    if (ln_u - ratio).abs() < 1e-3 {
        return None;
    }
    Some(if ln_u < ratio { y } else { x.to_vec() })
}

/// Runs `steps` steps of `chains` (started at `x0`) and checks each chain's every step
/// against `reference(j, t, previous row)` from the chain's previous position, so the cached
/// state (G, f(x)) is checked too. Chains hitting a near tie (`None`) are dropped from then
/// on; at least 80% must survive. Then the accepted counts of the survivors: with an MH test
/// (`mh`) at least the number of moves (an accepted step may propose no flip) and at most
/// `steps`, some rejections and some acceptances overall; without, `steps`. Returns the
/// positions after each step and the number of moves of each chain.
pub fn check_paths(
    chains: &mut dyn DeviceChains,
    x0: &[u32],
    steps: u32,
    mh: bool,
    what: &str,
    reference: impl Fn(usize, u32, &[u32]) -> Option<Vec<u32>>,
) -> (Vec<Vec<u32>>, Vec<u64>) {
    let (n, d) = (chains.n_chains(), chains.dim());
    let mut alive = vec![true; n];
    let (mut prev, mut history) = (x0.to_vec(), Vec::new());
    let mut moves = vec![0u64; n];
    for t in 0..steps {
        chains.step().unwrap();
        let now = chains.positions().unwrap();
        for j in 0..n {
            if !alive[j] {
                continue;
            }
            let row = j * d..(j + 1) * d;
            match reference(j, t, &prev[row.clone()]) {
                None => alive[j] = false,
                Some(want) => {
                    assert_eq!(now[row.clone()], want[..], "{what} chain {j} step {t}");
                    moves[j] += u64::from(now[row.clone()] != prev[row]);
                }
            }
        }
        history.push(now.clone());
        prev = now;
    }
    assert!(alive.iter().filter(|&&a| a).count() >= n * 4 / 5, "{what}: too many near ties");
    assert_eq!(chains.steps_taken(), steps as u64);
    let accepted = chains.accepted().unwrap();
    for j in (0..n).filter(|&j| alive[j]) {
        if mh {
            assert!(accepted[j] >= moves[j] && accepted[j] <= steps as u64, "{what} chain {j}");
        } else {
            assert_eq!(accepted[j], steps as u64, "{what} chain {j}");
        }
    }
    if mh {
        let total: u64 = accepted.iter().sum();
        assert!(
            total > 0 && total < n as u64 * steps as u64,
            "{what}: accepted {total} of {}",
            n as u64 * steps as u64
        );
    }
    (history, moves)
}

/// Chain j's path depends on (seed, j) only: `a` runs the first chains of `b` (the same
/// starting rows `x0` of `b`, the same seed); their paths are identical for 12 steps, and
/// some chain moves.
pub fn check_prefix_paths(a: &mut dyn DeviceChains, b: &mut dyn DeviceChains, x0: &[u32], what: &str) {
    let (na, d) = (a.n_chains(), a.dim());
    let mut moved = false;
    for t in 0..12 {
        a.step().unwrap();
        b.step().unwrap();
        let (pa, pb) = (a.positions().unwrap(), b.positions().unwrap());
        assert_eq!(pa[..], pb[..na * d], "{what} step {t}");
        moved |= pa != x0[..na * d];
    }
    assert!(moved, "{what}: the chains never moved");
    assert_eq!(a.accepted().unwrap()[..], b.accepted().unwrap()[..na]);
}

/// n starting rows of `space` (binary, d ≤ 63), chain j at state j mod 2^d: with n a multiple
/// of 2^d, equal numbers from every state.
pub fn every_state_in_turn(space: &Space, n: usize) -> Vec<u32> {
    let (d, ns) = (space.d, 1u64 << space.d);
    let mut x0 = vec![0u32; n * d];
    for j in 0..n {
        space.state_of_index(j as u64 % ns, &mut x0[j * d..(j + 1) * d]);
    }
    x0
}

/// The pooled law of the rows `positions` of `space` (binary) against `law` by Pearson χ²
/// ([`chi2`] at the 1e−6 limit [`chi2_limit`]), printed and asserted.
pub fn check_law_chi2(positions: &[u32], space: &Space, law: &[f64], what: &str) {
    let d = space.d;
    let mut counts = vec![0u64; 1 << d];
    for row in positions.chunks(d) {
        counts[space.index_of_state(row) as usize] += 1;
    }
    let (stat, df) = chi2(&counts, law, (positions.len() / d) as u64);
    println!("{what}: χ² = {stat:.1} on {df} df (limit {:.1})", chi2_limit(df));
    assert!(stat < chi2_limit(df), "{what}: χ² = {stat} on {df} df");
}

/// Asserts that `r` is an [`Error::Param`] whose message mentions `what`.
pub fn expect_param_error<T>(r: Result<T, Error>, what: &str) {
    match r {
        Err(Error::Param(msg)) => assert!(msg.contains(what), "{msg:?} should mention {what:?}"),
        Err(e) => panic!("{what}: expected Error::Param, got {e:?}"),
        Ok(_) => panic!("{what}: accepted"),
    }
}

/// `cuda:0`, or `None` (with a skip note on stderr) when this machine has no usable GPU; with
/// `DLP_REQUIRE_GPU=1` (`scripts/gpu_check.sh` sets it) no GPU is a failure, so a GPU run
/// cannot pass by skipping. `CI` / `DLP_REQUIRE_ALL` do not require it: no install command
/// provides a GPU. Without the `cuda` feature candle's `new_cuda` always fails; the checks that
/// call this are then #[ignore]d (tests/cuda.rs), so CI compiles them but never runs them.
pub fn gpu() -> Option<candle_core::Device> {
    match candle_core::Device::new_cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            let need = dlp_core::testing::require::Requirement::new(
                format!("a CUDA device (cuda:0 fails: {e})"),
                "a machine with an NVIDIA GPU and its driver (bash scripts/gpu_check.sh there)",
            )
            .own_switch_only("DLP_REQUIRE_GPU");
            need.met(false);
            None
        }
    }
}

/// `n` uniform draws on (−scale, scale).
pub fn uniform(rng: &mut impl RngExt, n: usize, scale: f64) -> Vec<f64> {
    (0..n).map(|_| rng.random_range(-scale..scale)).collect()
}

/// `n` states of `d` coordinates with values in 0..k, from a seeded stream.
pub fn random_states(seed: u64, n: usize, d: usize, k: u32) -> Vec<u32> {
    let mut rng = dlp_core::setup_rng(seed);
    (0..n * d).map(|_| rng.random_range(0..k)).collect()
}

/// The largest |a − b| / max(1, |b|) over the two slices (b is the reference).
pub fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / y.abs().max(1.0)).fold(0.0, f64::max)
}
