//! The fast paths against the generic kernels: exact quantities first (per-site flip
//! probabilities and DMALA log acceptance ratios for every state / many pairs of small
//! lattices), then one-step empirical rows against the generic path's exact transition rows,
//! then the fast chains' empirical law after a few steps against the generic chains'.

use super::dlp_potts::PottsDlpChains;
use super::ising::{IsingDlpChains, qualifying_model};
use super::site_ising::{self, SiteIsingChains};
use super::*;
use crate::dlp::{DlpProposal, DlpSampler, log_accept_ratio};
use dlp_core::{Chains, DomainKind, ExactKernel, Sampler, StepInfo, chain_rngs};
use dlp_models::IsingModel;
use std::collections::BTreeMap;

/// Small lattices covering both geometries: the 3×3 torus (stencil kernel), L = 2 periodic
/// (doubled neighbours collapse: CSR kernel, degree 2), an open 3×4 binary lattice (degrees
/// 2–4), a periodic 1-D ring, and a 3×3 torus with strong coupling and negative field.
fn lattices() -> Vec<(&'static str, IsingModel)> {
    vec![
        ("3x3 torus", IsingModel::paper_lattice(3, 0.1, 0.2)),
        ("2x2 torus", IsingModel::paper_lattice(2, 0.1, 0.2)),
        ("3x4 open binary", IsingModel::lattice(&[3, 4], false, 0.3, vec![-0.4; 12], DomainKind::Binary).unwrap()),
        ("ring 7", IsingModel::lattice(&[7], true, -0.5, vec![0.1; 7], DomainKind::Spin).unwrap()),
        ("3x3 strong", IsingModel::paper_lattice(3, 0.6, -0.3)),
    ]
}

fn state_of(index: u64, d: usize) -> Vec<u32> {
    (0..d).map(|i| ((index >> (d - 1 - i)) & 1) as u32).collect()
}

#[test]
fn qualifying_models_take_the_fast_path_and_generic_hides_them() {
    let m = IsingModel::paper_lattice(4, 0.1, 0.2);
    assert!(qualifying_model(&m).is_some());
    assert!(qualifying_model(&Generic(&m)).is_none());
    let model = dlp_models::Model::from(m.clone());
    assert!(qualifying_model(&model).is_some(), "the capability is forwarded by Model");
    let mut b = vec![0.2; 16];
    b[3] = 0.3;
    let nonuniform = IsingModel::lattice(&[4, 4], true, 0.2, b, DomainKind::Spin).unwrap();
    assert!(qualifying_model(&nonuniform).is_none());
    let p = DlpProposal::new(0.2, Some(vec![1.0; 16])).unwrap();
    assert!(dlp_fast_path(&p, false, &m, &[0; 16]).unwrap().is_none(), "preconditioned DLP stays generic");
}

#[test]
fn thresholds_realise_the_probability_to_2_pow_minus_64() {
    for p in [0.0, 1e-30, 1e-5, 0.029, 0.18, 0.5, 0.999_999, 1.0 - 1e-16, 1.0] {
        let t = Threshold::of_probability(p);
        assert!((t.probability() - p).abs() <= 2f64.powi(-60), "p = {p}: {}", t.probability());
    }
}

#[test]
fn flip_probabilities_equal_the_generic_logits_for_every_state() {
    for alpha in [0.2, 0.4, f64::INFINITY] {
        for (name, m) in lattices() {
            let d = m.d();
            let proposal = DlpProposal::new(alpha, None).unwrap();
            let chains = IsingDlpChains::new(&m, proposal.half_inv_step(0), false, &vec![0; d]).unwrap();
            check_flip_probabilities(&|x| chains.flip_probabilities(x), &m, &proposal, &format!("{name} α={alpha}"));
        }
    }
}

/// A fast kernel's realised flip probabilities (`fast`, per site at a state) equal σ of the
/// generic logits of `proposal` for every state of `m`.
fn check_flip_probabilities(fast: &dyn Fn(&[u32]) -> Vec<f64>, m: &IsingModel, proposal: &DlpProposal, what: &str) {
    let d = m.d();
    let space = dlp_core::Target::space(m);
    let (mut g, mut l, mut z) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
    for s in 0..1u64 << d {
        let x = state_of(s, d);
        dlp_core::TargetExt::log_density_grad(m, &x, &mut g).unwrap();
        proposal.logits(space, &x, &g, &mut l, &mut z);
        let fast = fast(&x);
        for i in 0..d {
            let p = dlp_core::math::sigmoid(l[i]);
            assert!((fast[i] - p).abs() < 1e-12, "{what} x={x:?} site {i}: {} vs {p}", fast[i]);
        }
    }
}

/// The generic path's DMALA log acceptance ratio of the move x → y on any model.
fn generic_ratio(m: &dyn dlp_core::Target, proposal: &DlpProposal, x: &[u32], y: &[u32]) -> f64 {
    let space = m.space();
    let (d, w) = (space.d, DlpProposal::logit_width(space));
    let (mut g, mut l, mut z) = (vec![0.0; space.grad_len()], vec![0.0; d * w], vec![0.0; d]);
    let fx = dlp_core::TargetExt::log_density_grad(m, x, &mut g).unwrap();
    let lzx = proposal.logits(space, x, &g, &mut l, &mut z);
    let fwd = proposal.log_prob(space, x, y, &l, lzx);
    let fy = dlp_core::TargetExt::log_density_grad(m, y, &mut g).unwrap();
    let lzy = proposal.logits(space, y, &g, &mut l, &mut z);
    let rev = proposal.log_prob(space, y, x, &l, lzy);
    log_accept_ratio(fx, fy, fwd, rev)
}

#[test]
fn dmala_log_accept_ratios_equal_the_generic_ones() {
    let mut rng = dlp_core::setup_rng(11);
    for (name, m) in lattices() {
        let d = m.d();
        let proposal = DlpProposal::new(0.4, None).unwrap();
        let chains = IsingDlpChains::new(&m, proposal.half_inv_step(0), true, &vec![0; d]).unwrap();
        for _ in 0..3000 {
            let x: Vec<u32> = (0..d).map(|_| rand::RngExt::random_range(&mut rng, 0..2u32)).collect();
            let y: Vec<u32> = (0..d).map(|_| rand::RngExt::random_range(&mut rng, 0..2u32)).collect();
            if x == y {
                continue;
            }
            let (a, b) = (chains.log_accept_ratio(&x, &y), generic_ratio(&m, &proposal, &x, &y));
            assert!((a - b).abs() < 1e-10, "{name}: x={x:?} y={y:?}: fast {a} generic {b}");
        }
    }
}

/// Upper χ² quantile by Wilson–Hilferty at z = 4.75 (one-sided normal tail 1.0e-6; the
/// approximation's error at these degrees of freedom is far below that margin), so a test
/// making a handful of such comparisons has a false-failure rate below 1e-5.
fn chi2_limit(df: usize) -> f64 {
    let k = df as f64;
    let h = 2.0 / (9.0 * k);
    k * (1.0 - h + 4.75 * h.sqrt()).powi(3)
}

/// Pearson χ² of `counts` (n draws) against probabilities `p`, cells with expected count
/// < 10 lumped into one; returns (statistic, degrees of freedom).
fn chi2(counts: &BTreeMap<Vec<u32>, u64>, p: &BTreeMap<Vec<u32>, f64>, n: u64) -> (f64, usize) {
    let (mut stat, mut cells) = (0.0, 0usize);
    let (mut lump_o, mut lump_e) = (0.0, 0.0);
    for (y, &py) in p {
        let e = py * n as f64;
        let o = *counts.get(y).unwrap_or(&0) as f64;
        if e < 10.0 {
            lump_o += o;
            lump_e += e;
        } else {
            stat += (o - e).powi(2) / e;
            cells += 1;
        }
    }
    for y in counts.keys() {
        assert!(p.contains_key(y), "reached a state of probability 0: {y:?}");
    }
    if lump_e >= 10.0 {
        stat += (lump_o - lump_e).powi(2) / lump_e;
        cells += 1;
    } else {
        assert!(lump_o <= 10.0 + 6.0 * lump_e.sqrt().max(1.0), "lumped cells: {lump_o} seen, {lump_e} expected");
    }
    (stat, cells.saturating_sub(1).max(1))
}

/// One step of `n` independent chains (streams 0..n of `seed`) from `x` through the fast
/// path; the counts of the next states and the records.
fn one_step(
    sampler: &DlpSampler,
    m: &dyn dlp_core::Target,
    x: &[u32],
    n: usize,
    seed: u64,
) -> (BTreeMap<Vec<u32>, u64>, Vec<StepInfo>) {
    let d = x.len();
    let x0: Vec<u32> = x.iter().copied().cycle().take(n * d).collect();
    let mut chains = dlp_fast_path(sampler.proposal(), sampler.is_metropolised(), m, &x0).unwrap().expect("fast path");
    let mut rngs = chain_rngs(seed, 0, n);
    let mut info = vec![StepInfo::default(); n];
    chains.step(&mut rngs, &mut info);
    let mut counts = BTreeMap::new();
    for y in chains.positions().chunks(d) {
        *counts.entry(y.to_vec()).or_insert(0) += 1;
    }
    (counts, info)
}

/// χ² of `n` one-step transitions of `s`'s fast path from `x` (streams of `seed`) against the
/// generic kernel's exact row (false-failure rate < 1e-5 per call), and honest records: the
/// changed coordinates add up to the Hamming distance moved.
fn one_step_row_matches(s: &DlpSampler, m: &dyn dlp_core::Target, x: &[u32], n: usize, seed: u64, what: &str) {
    let row: BTreeMap<Vec<u32>, f64> = s.transition_row(m, x, 0).unwrap().into_iter().collect();
    let (counts, info) = one_step(s, m, x, n, seed);
    let (stat, df) = chi2(&counts, &row, n as u64);
    assert!(stat < chi2_limit(df), "{} {what} x={x:?}: χ² = {stat:.1} on {df} df", s.name());
    let moved: u64 = info.iter().map(|i| i.n_changed as u64).sum();
    let expect: u64 = counts.iter().map(|(y, c)| c * y.iter().zip(x).filter(|(a, b)| a != b).count() as u64).sum();
    assert_eq!(moved, expect, "{} {what}: records count the coordinates moved", s.name());
}

#[test]
fn one_step_rows_match_the_generic_exact_rows() {
    let n = 200_000;
    let samplers = [DlpSampler::dula(0.2).unwrap(), DlpSampler::dmala(0.4).unwrap(), DlpSampler::dmala(1.5).unwrap()];
    let models = [
        IsingModel::paper_lattice(3, 0.1, 0.2),
        IsingModel::paper_lattice(2, 0.1, 0.2),
        IsingModel::paper_lattice(3, 0.6, -0.3),
    ];
    for (mi, m) in models.iter().enumerate() {
        let d = m.d();
        for (si, s) in samplers.iter().enumerate() {
            for (xi, x) in [vec![1; d], state_of(0b1_0110_0101 & ((1 << d) - 1), d)].iter().enumerate() {
                one_step_row_matches(s, m, x, n, 1000 + (mi * 10 + si * 2 + xi) as u64, &format!("model {mi}"));
            }
        }
    }
}

#[test]
fn fast_chains_have_the_generic_chains_law_after_several_steps() {
    // Two-sample χ² between 40,000 independent fast chains and 40,000 generic chains after 6
    // steps from the same start on the 3×3 torus (class kernel) and on an open 3×3 lattice with
    // a field per site (site-table kernel) (statistic ~ χ²(cells − 1) under H0).
    let models = [IsingModel::paper_lattice(3, 0.2, 0.2), site_models().swap_remove(1).1];
    for (m, s) in
        models.iter().flat_map(|m| [DlpSampler::dula(0.2).unwrap(), DlpSampler::dmala(0.4).unwrap()].map(|s| (m, s)))
    {
        let d = m.d();
        let n = 40_000;
        let x0: Vec<u32> = [0, 1, 0, 0, 1, 1, 0, 0, 0].iter().copied().cycle().take(n * d).collect();
        let generic = Generic(m);
        let run = |t: &dyn dlp_core::Target, seed: u64| {
            let mut c = s.start(t, &x0).unwrap();
            let mut rngs = chain_rngs(seed, 0, n);
            let mut info = vec![StepInfo::default(); n];
            for _ in 0..6 {
                c.step(&mut rngs, &mut info);
            }
            let mut counts: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
            for y in c.positions().chunks(d) {
                *counts.entry(y.to_vec()).or_insert(0) += 1;
            }
            counts
        };
        let (a, b) = (run(m, 5), run(&generic, 6));
        let keys: std::collections::BTreeSet<&Vec<u32>> = a.keys().chain(b.keys()).collect();
        let (mut stat, mut cells, mut lump_a, mut lump_b) = (0.0, 0, 0.0, 0.0);
        for k in keys {
            let (oa, ob) = (*a.get(k).unwrap_or(&0) as f64, *b.get(k).unwrap_or(&0) as f64);
            if oa + ob < 20.0 {
                lump_a += oa;
                lump_b += ob;
                continue;
            }
            stat += (oa - ob).powi(2) / (oa + ob);
            cells += 1;
        }
        if lump_a + lump_b > 0.0 {
            stat += (lump_a - lump_b).powi(2) / (lump_a + lump_b);
            cells += 1;
        }
        assert!(stat < chi2_limit(cells - 1), "{}: two-sample χ² = {stat:.1} on {} df", s.name(), cells - 1);
    }
}

#[test]
fn log_densities_and_positions_follow_the_state() {
    for (name, m) in lattices() {
        let d = m.d();
        for s in [DlpSampler::dula(0.3).unwrap(), DlpSampler::dmala(0.6).unwrap()] {
            let x0: Vec<u32> = (0..4 * d).map(|i| ((i * 7 + 3) % 5 < 2) as u32).collect();
            let mut c = s.start(&m, &x0).unwrap();
            let mut rngs = chain_rngs(3, 0, 4);
            let mut info = vec![StepInfo::default(); 4];
            for _ in 0..30 {
                c.step(&mut rngs, &mut info);
                let f = c.log_densities().unwrap().to_vec();
                for (j, y) in c.positions().chunks(d).enumerate() {
                    let want = dlp_core::TargetExt::log_density(&m, y).unwrap();
                    assert!((f[j] - want).abs() < 1e-9, "{name} {}: f {} vs {want}", s.name(), f[j]);
                }
            }
        }
    }
}

#[test]
fn chains_started_apart_equal_chains_started_together() {
    let m = IsingModel::paper_lattice(6, 0.1, 0.2);
    let d = m.d();
    for s in [DlpSampler::dula(0.2).unwrap(), DlpSampler::dmala(0.4).unwrap()] {
        let x0: Vec<u32> = (0..3 * d).map(|i| ((i * 5 + 1) % 3 == 0) as u32).collect();
        let mut together = s.start(&m, &x0).unwrap();
        let mut rngs = chain_rngs(9, 0, 3);
        let mut info = vec![StepInfo::default(); 3];
        for _ in 0..20 {
            together.step(&mut rngs, &mut info);
        }
        for j in 0..3 {
            let mut alone = s.start(&m, &x0[j * d..(j + 1) * d]).unwrap();
            let mut r = chain_rngs(9, j, 1);
            let mut inf = vec![StepInfo::default(); 1];
            for _ in 0..20 {
                alone.step(&mut r, &mut inf);
            }
            assert_eq!(alone.positions(), &together.positions()[j * d..(j + 1) * d]);
        }
    }
}

/// Lattices large enough for the AVX2 torus kernels (flattened range ≥ 32 sites plus a
/// tail): 8×8 (78 positions: two vectors and a 14-site tail), a non-square 7×13 and a 9×40
/// binary torus (358 positions: 11 vectors and a 6-site tail).
fn wide_tori() -> Vec<(&'static str, IsingModel)> {
    vec![
        ("8x8", IsingModel::paper_lattice(8, 0.3, 0.1)),
        ("7x13", IsingModel::lattice(&[7, 13], true, -0.25, vec![0.15; 91], DomainKind::Spin).unwrap()),
        ("9x40 binary", IsingModel::lattice(&[9, 40], true, 0.35, vec![-0.3; 360], DomainKind::Binary).unwrap()),
    ]
}

/// A torus whose flattened range (100·99 − 2 = 9,898 positions) takes 309 AVX2 iterations
/// and a 10-site tail, so each lane of the DMALA statistics pass sees more than 255 sites
/// (its byte counters must be flushed) and the width is not a multiple of 32.
fn big_torus() -> (&'static str, IsingModel) {
    ("100x97", IsingModel::lattice(&[100, 97], true, 0.2, vec![-0.1; 9700], DomainKind::Spin).unwrap())
}

/// Chains that all started at `x` (per-site flip probabilities `p`) now at `ys` (n × d):
/// pools the flips of each distinct probability (a class) and checks each pooled frequency
/// within 5.5σ + 1/N of its p (the callers state the family-wise rate); returns all flips.
fn check_class_flip_frequencies(x: &[u32], p: &[f64], ys: &[u32], what: &str) -> u64 {
    let d = x.len();
    let n = ys.len() / d;
    let mut pooled: BTreeMap<u64, (f64, u64, u64)> = BTreeMap::new();
    for (i, &pi) in p.iter().enumerate() {
        let e = pooled.entry(pi.to_bits()).or_insert((pi, 0, 0));
        e.1 += n as u64;
        e.2 += (0..n).filter(|&j| ys[j * d + i] != x[i]).count() as u64;
    }
    assert!(pooled.len() >= 4, "{what}: the start state should cover several classes");
    for (pi, trials, flips) in pooled.values() {
        let nn = *trials as f64;
        let sd = (pi * (1.0 - pi) / nn).sqrt();
        let freq = *flips as f64 / nn;
        assert!((freq - pi).abs() <= 5.5 * sd + 1.0 / nn, "{what}: p {pi} vs freq {freq}");
    }
    pooled.values().map(|v| v.2).sum()
}

#[test]
fn torus_dula_flip_frequencies_match_the_exact_probabilities_per_class() {
    // One DULA step from a fixed mixed state, n chains: per distinct flip probability p (a
    // class), the pooled number of flips is Binomial(N, p) with N = n × sites of the class.
    // The 8-bit first stage ties with probability 2⁻⁸ per site, so a mishandled tie moves a
    // class's frequency by up to 2⁻⁸ ≈ 3.9e-3, i.e. ≥ 20σ here. Bound: 5.5σ + 1/N per class
    // (normal tail 3.8e-8; ≤ 20 classes over both lattices → false-failure < 1e-6).
    let n = 20_000;
    for alpha in [0.3, 2.0] {
        let proposal = DlpProposal::new(alpha, None).unwrap();
        for (name, m) in wide_tori() {
            let d = m.d();
            let x: Vec<u32> = (0..d).map(|i| ((i * 7 + i / 3) % 5 < 2) as u32).collect();
            let x0: Vec<u32> = x.iter().copied().cycle().take(n * d).collect();
            let mut chains = IsingDlpChains::new(&m, proposal.half_inv_step(0), false, &x0).unwrap();
            let p = chains.flip_probabilities(&x);
            let mut rngs = chain_rngs(77, 0, n);
            let mut info = vec![StepInfo::default(); n];
            dlp_core::Chains::step(&mut chains, &mut rngs, &mut info);
            let flips = check_class_flip_frequencies(
                &x,
                &p,
                dlp_core::Chains::positions(&chains),
                &format!("{name} α={alpha}"),
            );
            let total: u64 = info.iter().map(|s| s.n_changed as u64).sum();
            assert_eq!(total, flips, "{name}: StepInfo flip counts");
        }
    }
}

#[test]
fn lazy_dula_positions_equal_eagerly_read_positions() {
    // The same seeds with positions() read after every step and only every 13th step: the
    // grids are authoritative, so both runs must agree bit for bit, and the positions must
    // carry the log-density the chains report.
    for (name, m) in wide_tori().into_iter().chain([("3x3", IsingModel::paper_lattice(3, 0.2, 0.1))]) {
        let d = m.d();
        let s = DlpSampler::dula(0.4).unwrap();
        let x0: Vec<u32> = (0..5 * d).map(|i| ((i * 11 + 2) % 7 < 3) as u32).collect();
        let (mut eager, mut lazy) = (s.start(&m, &x0).unwrap(), s.start(&m, &x0).unwrap());
        let (mut ra, mut rb) = (chain_rngs(21, 0, 5), chain_rngs(21, 0, 5));
        let mut info = vec![StepInfo::default(); 5];
        for t in 0..200 {
            eager.step(&mut ra, &mut info);
            let seen = eager.positions().to_vec();
            lazy.step(&mut rb, &mut info);
            if t % 13 == 12 || t == 199 {
                assert_eq!(lazy.positions(), &seen[..], "{name} step {t}");
                assert_eq!(lazy.positions(), &seen[..], "{name} step {t}: second read");
                let f = lazy.log_densities().unwrap();
                for (j, y) in seen.chunks(d).enumerate() {
                    let want = dlp_core::TargetExt::log_density(&m, y).unwrap();
                    assert!((f[j] - want).abs() < 1e-9, "{name} step {t}: f {} vs {want}", f[j]);
                }
            }
        }
    }
}

#[test]
fn dmala_flip_set_caches_stay_equal_to_a_recomputation() {
    // Histograms, (E₂, M), f and positions (and on the CSR lattices the classes) are updated
    // on acceptance only: from the fused pass on the torus, from the flipped sites and their
    // neighbours (small flip sets) or a full pass (large ones) on the CSR path; after every
    // step they must equal a full recomputation. α = 0.1 on the 20×20 torus gives flip sets
    // of a few sites, α = 1.5 on the small lattices large ones.
    let mut models = wide_tori();
    models.push(("20x20", IsingModel::paper_lattice(20, 0.2, 0.1)));
    models.extend(lattices());
    for (name, m) in models {
        let d = m.d();
        for alpha in [0.1, 0.3, 1.5] {
            let proposal = DlpProposal::new(alpha, None).unwrap();
            let x0: Vec<u32> = (0..3 * d).map(|i| ((i * 5 + 1) % 3 == 0) as u32).collect();
            let mut c = IsingDlpChains::new(&m, proposal.half_inv_step(0), true, &x0).unwrap();
            let mut rngs = chain_rngs(31, 0, 3);
            let mut info = vec![StepInfo::default(); 3];
            let mut accepted = 0;
            for t in 0..300 {
                dlp_core::Chains::step(&mut c, &mut rngs, &mut info);
                accepted += info.iter().filter(|s| s.n_changed > 0).count();
                assert!(c.caches_consistent(), "{name} α={alpha} step {t}");
                let f = dlp_core::Chains::log_densities(&c).unwrap().to_vec();
                for (j, y) in dlp_core::Chains::positions(&c).chunks(d).enumerate() {
                    let want = dlp_core::TargetExt::log_density(&m, y).unwrap();
                    assert!((f[j] - want).abs() < 1e-9, "{name} α={alpha} step {t}: f {} vs {want}", f[j]);
                }
            }
            assert!(accepted > 5, "{name} α={alpha}: only {accepted} moves accepted");
        }
    }
}

#[test]
fn torus_dmala_statistics_equal_the_generic_ratio_in_both_kernel_forms() {
    // The fused statistics pass (AVX2 loop, its scalar tail, byte counters flushed every 255
    // iterations) and its portable form, each against the generic ratio. The all-0 ↔ all-1
    // moves put every site of y in one class, so on 100×97 an unflushed byte counter of that
    // class wraps (309 sites per lane); the other pairs mix flip rates 1–90% on sparse and
    // dense states. Deterministic verdict: the two forms must agree bit for bit, and each
    // must match the generic ratio to 1e-10, relative above |A| = 1: the generic path sums
    // f64 terms over all d sites, which on 100×97 costs it up to 2e-9 at |A| ≈ 200 (all-0 →
    // all-1 against a 40-digit evaluation: generic off by 2.2e-9, this path by 5e-13).
    let mut rng = dlp_core::setup_rng(12);
    let proposal = DlpProposal::new(0.4, None).unwrap();
    for (name, m) in wide_tori().into_iter().chain([big_torus()]) {
        let d = m.d();
        let avx2 = IsingDlpChains::new(&m, proposal.half_inv_step(0), true, &vec![0; d]).unwrap();
        let mut portable = IsingDlpChains::new(&m, proposal.half_inv_step(0), true, &vec![0; d]).unwrap();
        portable.use_portable_kernels();
        let checker: Vec<u32> = (0..d).map(|i| (i % 2) as u32).collect();
        let mut pairs = vec![(vec![0; d], vec![1; d]), (vec![1; d], vec![0; d]), (checker.clone(), vec![1; d])];
        pairs.push((vec![0; d], checker));
        let reps = if d > 1000 { 40 } else { 400 };
        for _ in 0..reps {
            for density in [0.1, 0.5, 0.9] {
                for flip in [0.01, 0.2, 0.9] {
                    let x: Vec<u32> = (0..d).map(|_| rand::RngExt::random_bool(&mut rng, density) as u32).collect();
                    let y: Vec<u32> = x.iter().map(|&v| v ^ rand::RngExt::random_bool(&mut rng, flip) as u32).collect();
                    pairs.push((x, y));
                }
            }
        }
        for (x, y) in &pairs {
            let want = generic_ratio(&m, &proposal, x, y);
            assert_eq!(avx2.log_accept_ratio(x, y).to_bits(), portable.log_accept_ratio(x, y).to_bits(), "{name}");
            for (form, c) in [("avx2", &avx2), ("portable", &portable)] {
                let got = c.log_accept_ratio(x, y);
                assert!((got - want).abs() < 1e-10 * want.abs().max(1.0), "{name} {form}: fast {got} generic {want}");
            }
        }
    }
}

#[test]
fn torus_dmala_kernel_forms_give_identical_chains() {
    // The AVX2 kernels and their portable forms make the same decisions from the same random
    // bytes, so chains stepped from the same seeds must agree bit for bit (positions, f,
    // records), and every cache must stay equal to a recomputation. α = 0.1 gives small flip
    // sets, 1.5 large ones. (Without AVX2 both sides are portable and the test is vacuous.)
    for (name, m) in wide_tori().into_iter().chain([big_torus()]) {
        let d = m.d();
        let steps = if d > 1000 { 40 } else { 200 };
        for alpha in [0.1, 0.4, 1.5] {
            let proposal = DlpProposal::new(alpha, None).unwrap();
            let x0: Vec<u32> = (0..3 * d).map(|i| ((i * 7 + 2) % 5 < 2) as u32).collect();
            let mut a = IsingDlpChains::new(&m, proposal.half_inv_step(0), true, &x0).unwrap();
            let mut b = IsingDlpChains::new(&m, proposal.half_inv_step(0), true, &x0).unwrap();
            b.use_portable_kernels();
            let (mut ra, mut rb) = (chain_rngs(41, 0, 3), chain_rngs(41, 0, 3));
            let (mut ia, mut ib) = (vec![StepInfo::default(); 3], vec![StepInfo::default(); 3]);
            let mut moved = 0;
            for t in 0..steps {
                dlp_core::Chains::step(&mut a, &mut ra, &mut ia);
                dlp_core::Chains::step(&mut b, &mut rb, &mut ib);
                moved += ia.iter().filter(|s| s.n_changed > 0).count();
                assert_eq!(dlp_core::Chains::positions(&a), dlp_core::Chains::positions(&b), "{name} α={alpha} {t}");
                assert_eq!(dlp_core::Chains::log_densities(&a), dlp_core::Chains::log_densities(&b));
                for (p, q) in ia.iter().zip(&ib) {
                    assert_eq!((p.accepted, p.n_proposed, p.n_changed), (q.accepted, q.n_proposed, q.n_changed));
                    assert_eq!(p.accept_prob.to_bits(), q.accept_prob.to_bits(), "{name} α={alpha} step {t}");
                }
                assert!(a.caches_consistent() && b.caches_consistent(), "{name} α={alpha} step {t}");
            }
            assert!(moved > 0, "{name} α={alpha}: no move accepted");
        }
    }
}

#[test]
fn torus_dmala_proposals_have_the_exact_per_class_flip_probabilities() {
    // The DMALA proposal on the torus is the 8-bit-first-stage kernel (ties, 2⁻⁸ per site,
    // resolved with 56 more bits in site order), in both forms. One proposal from a fixed
    // mixed state per chain, n chains: per distinct flip probability p (a class) the pooled
    // number of flips is Binomial(N, p), N = n × sites of the class. A mishandled tie moves a
    // class's frequency by up to 2⁻⁸ ≈ 3.9e-3, ≥ 20σ here. Bound: 5.5σ + 1/N per class
    // (normal tail 3.8e-8; ≤ 120 comparisons over lattices, α and forms → false-failure
    // < 1e-5).
    let n = 20_000;
    for alpha in [0.3, 2.0] {
        let proposal = DlpProposal::new(alpha, None).unwrap();
        for (name, m) in wide_tori() {
            for portable in [false, true] {
                let d = m.d();
                let x: Vec<u32> = (0..d).map(|i| ((i * 7 + i / 3) % 5 < 2) as u32).collect();
                let x0: Vec<u32> = x.iter().copied().cycle().take(n * d).collect();
                let mut chains = IsingDlpChains::new(&m, proposal.half_inv_step(0), true, &x0).unwrap();
                if portable {
                    chains.use_portable_kernels();
                }
                let p = chains.flip_probabilities(&x);
                let ys = chains.torus_proposals(&mut chain_rngs(78, 0, n));
                let form = if portable { "portable" } else { "avx2" };
                check_class_flip_frequencies(&x, &p, &ys, &format!("{name} {form} α={alpha}"));
            }
        }
    }
}

/// Sparse Ising models for the GWG sum-tree kernel: the lattices above plus a random sparse
/// graph with non-uniform fields and couplings of both signs (binary and spin).
fn gwg_models() -> Vec<(&'static str, IsingModel)> {
    use dlp_models::couplings::Couplings;
    let edges = [(0, 3, 0.7), (0, 5, -0.4), (1, 2, 0.25), (2, 6, -0.9), (3, 4, 0.5), (4, 7, 0.3), (5, 6, -0.2)];
    let b = vec![0.3, -0.6, 0.1, 0.45, -0.2, 0.05, 0.8, -0.35];
    let mut out = lattices();
    for (name, dom) in [("random graph binary", DomainKind::Binary), ("random graph spin", DomainKind::Spin)] {
        let c = Couplings::from_edges(8, &edges).unwrap();
        out.push((name, IsingModel::new(dom, c, b.clone()).unwrap()));
    }
    out
}

#[test]
fn gwg_sum_tree_moves_and_ratios_equal_the_generic_kernel() {
    // Exact quantities: for every state of each small model, the per-move log-probabilities
    // and the log acceptance ratio of every single draw (k = 1) and of every ordered pair
    // (k = 2) equal the generic GWG arithmetic to 1e-12.
    use super::gwg_ising::{GwgIsingChains, qualifying_model as gwg_model};
    use crate::gwg::{log_accept_ratio as gwg_ratio, move_log_probs};
    use dlp_core::Chains;
    for (name, m) in gwg_models() {
        let view = gwg_model(&m).unwrap_or_else(|| panic!("{name}: qualifies"));
        let (space, d) = (m.space().clone(), m.space().d);
        let states = if d <= 9 { 1u64 << d } else { 64 };
        for s in 0..states {
            let x = state_of(s, d);
            let mut fast = GwgIsingChains::new(&view, 2, &x).unwrap();
            let fast_lq = fast.move_log_probs(0);
            let mut g = vec![0.0; d];
            let f_x = m.log_density_grad(&x, &mut g).unwrap();
            assert!((fast.log_densities().unwrap()[0] - f_x).abs() < 1e-12, "{name}: f");
            let mut lq = vec![0.0; 2 * d];
            move_log_probs(&space, &x, &g, &mut lq);
            for i in 0..d {
                assert!((fast_lq[i] - lq[2 * i + 1 - x[i] as usize]).abs() < 1e-12, "{name} state {s} move {i}");
            }
            let generic_ratio = |draws: &[usize]| {
                let moves: Vec<usize> = draws.iter().map(|&i| 2 * i + 1 - x[i] as usize).collect();
                let mut y = vec![0; d];
                crate::gwg::apply_moves(2, &x, &moves, &mut y);
                let mut gy = vec![0.0; d];
                let f_y = m.log_density_grad(&y, &mut gy).unwrap();
                let mut lq_y = vec![0.0; 2 * d];
                move_log_probs(&space, &y, &gy, &mut lq_y);
                gwg_ratio(f_x, f_y, &lq, &lq_y, 2, &x, &moves)
            };
            for i in 0..d {
                let (a, b) = (fast.log_accept_ratio(0, &[i]), generic_ratio(&[i]));
                assert!((a - b).abs() < 1e-12, "{name} state {s} draw {i}: {a} vs {b}");
                for i2 in [0, d / 2, i] {
                    let (a, b) = (fast.log_accept_ratio(0, &[i, i2]), generic_ratio(&[i, i2]));
                    assert!((a - b).abs() < 1e-12, "{name} state {s} draws {i},{i2}: {a} vs {b}");
                }
            }
            // Proposing and undoing leaves the chain where it was.
            assert_eq!(fast.positions(), &x[..]);
            assert_eq!(fast.move_log_probs(0), fast_lq);
        }
    }
}

#[test]
fn gwg_sum_tree_chains_follow_the_generic_chains_step_by_step() {
    // Same uniforms in the same order: the fast chains retrace the generic chains' path
    // (a cumulative-sum boundary that rounding puts on the other side has probability of
    // order 1e-16 per draw, about 1e-10 over this test), and keep f equal to the model's.
    use crate::gwg::Gwg;
    for (name, m) in trajectory_models() {
        let d = m.space().d;
        for k in [1, 3, 0] {
            let x0: Vec<u32> = (0..4 * d).map(|i| ((i * 7 + i / 3) % 5 < 2) as u32).collect();
            // k = 0 stands for the locally balanced sampler, which takes the same path.
            let sampler: Box<dyn Sampler> = if k == 0 {
                Box::new(crate::locally_balanced::LocallyBalanced)
            } else {
                Box::new(Gwg::new(k).unwrap())
            };
            retraces_the_generic_chains(&m, sampler.as_ref(), &x0, 11, &format!("{name} gwg-{k}"));
        }
    }
}

#[test]
fn balanced_lattice_kernels_equal_the_generic_ones() {
    // Cyclical DLP's phases on the lattice kernel: for gradient weights β ≠ ½, per-site flip
    // probabilities on every state, and DMALA log ratios on random pairs, equal the generic
    // `DlpProposal::with_balance` arithmetic; set_proposal switches between them in place.
    let mut rng = dlp_core::setup_rng(12);
    for (alpha, beta) in [(0.4, 0.8), (3.0, 0.95), (0.7, 0.5)] {
        let proposal = DlpProposal::new(alpha, None).unwrap().with_balance(beta).unwrap();
        for (name, m) in lattices() {
            let d = m.d();
            // Start at another (α, β) and switch, as a cycle does.
            let mut chains = IsingDlpChains::new(&m, 0.1, true, &vec![0; d]).unwrap();
            chains.set_proposal(proposal.half_inv_step(0), beta);
            check_flip_probabilities(
                &|x| chains.flip_probabilities(x),
                &m,
                &proposal,
                &format!("{name} α={alpha} β={beta}"),
            );
            for _ in 0..500 {
                let x: Vec<u32> = (0..d).map(|_| rand::RngExt::random_range(&mut rng, 0..2u32)).collect();
                let y: Vec<u32> = (0..d).map(|_| rand::RngExt::random_range(&mut rng, 0..2u32)).collect();
                if x != y {
                    let (a, b) = (chains.log_accept_ratio(&x, &y), generic_ratio(&m, &proposal, &x, &y));
                    assert!((a - b).abs() < 1e-10, "{name} β={beta}: fast {a} generic {b}");
                }
            }
        }
    }
}

#[test]
fn cyclical_dmala_on_a_lattice_runs_the_lattice_kernel_phase_by_phase() {
    // acs-dmala's chains on a lattice equal lattice chains whose proposal is set to phase
    // t mod s before step t, from the same streams (the wiring of `acs.rs` to this kernel).
    let m = IsingModel::paper_lattice(5, 0.1, 0.2);
    let acs =
        crate::acs::Acs::new("acs-dmala", true, crate::acs::Schedule::cosine(4, 3.0, 0.2, 0.95).unwrap()).unwrap();
    let x0: Vec<u32> = (0..3 * 25).map(|i| (i % 3 == 0) as u32).collect();
    let mut a = acs.start(&m, &x0).unwrap();
    let mut b = IsingDlpChains::new(&m, 1.0, true, &x0).unwrap();
    let (mut ra, mut rb) = (chain_rngs(3, 0, 3), chain_rngs(3, 0, 3));
    let mut info = vec![StepInfo::default(); 3];
    for t in 0..40 {
        let (alpha, beta) = acs.schedule().phases[t % 4];
        b.set_proposal(0.5 / alpha, beta);
        a.step(&mut ra, &mut info);
        dlp_core::Chains::step(&mut b, &mut rb, &mut info);
        assert_eq!(a.positions(), dlp_core::Chains::positions(&b), "step {t}");
    }
}

/// Small sparse Potts models for GWG's categorical sum-tree kernel.
fn potts_models() -> Vec<(&'static str, dlp_models::PottsModel)> {
    use dlp_models::couplings::Couplings;
    let space = |d, k| dlp_core::Space::categorical(d, k);
    let ring = Couplings::from_edges(4, &[(0, 1, 0.6), (1, 2, -0.4), (2, 3, 0.9), (0, 3, 0.3)]).unwrap();
    let h4: Vec<f64> = (0..12).map(|i| ((i * 7 % 11) as f64 - 5.0) * 0.15).collect();
    let star = Couplings::from_edges(5, &[(0, 1, 0.5), (0, 2, -0.7), (0, 3, 0.2), (3, 4, 1.1)]).unwrap();
    let h5: Vec<f64> = (0..10).map(|i| ((i * 5 % 7) as f64 - 3.0) * 0.2).collect();
    vec![
        ("ring 4, K = 3", dlp_models::PottsModel::new(space(4, 3), ring, h4).unwrap()),
        ("star 5, K = 2", dlp_models::PottsModel::new(space(5, 2), star, h5).unwrap()),
    ]
}

#[test]
fn gwg_potts_sum_tree_moves_and_ratios_equal_the_generic_kernel() {
    use super::gwg_potts::{GwgPottsChains, qualifying_model as potts_model};
    use crate::gwg::{log_accept_ratio as gwg_ratio, move_log_probs};
    use dlp_core::{Chains, Target};
    for (name, m) in potts_models() {
        let view = potts_model(&m).unwrap_or_else(|| panic!("{name}: qualifies"));
        let space = m.space().clone();
        let (d, k) = (space.d, space.k());
        let mut x = vec![0u32; d];
        for s in 0..space.n_states().unwrap() {
            space.state_of_index(s, &mut x);
            let mut fast = GwgPottsChains::new(&view, &x).unwrap();
            let mut g = vec![0.0; d * k];
            let f_x = m.log_density_grad(&x, &mut g).unwrap();
            assert!((fast.log_densities().unwrap()[0] - f_x).abs() < 1e-12, "{name}: f");
            let mut lq = vec![0.0; d * k];
            move_log_probs(&space, &x, &g, &mut lq);
            let fast_lq = fast.move_log_probs(0);
            for mv in 0..d * k {
                assert!(
                    fast_lq[mv] == lq[mv] || (fast_lq[mv] - lq[mv]).abs() < 1e-12,
                    "{name} state {s} move {mv}: {} vs {}",
                    fast_lq[mv],
                    lq[mv]
                );
                if lq[mv] == f64::NEG_INFINITY {
                    continue;
                }
                let mut y = vec![0; d];
                crate::gwg::apply_moves(k, &x, &[mv], &mut y);
                let mut gy = vec![0.0; d * k];
                let f_y = m.log_density_grad(&y, &mut gy).unwrap();
                let mut lq_y = vec![0.0; d * k];
                move_log_probs(&space, &y, &gy, &mut lq_y);
                let want = gwg_ratio(f_x, f_y, &lq, &lq_y, k, &x, &[mv]);
                let got = fast.log_accept_ratio(0, mv);
                assert!((got - want).abs() < 1e-12, "{name} state {s} move {mv}: {got} vs {want}");
            }
            assert_eq!(fast.positions(), &x[..], "{name}: proposing and undoing leaves the state");
            assert_eq!(fast.move_log_probs(0), fast_lq, "{name}: and the tree");
        }
    }
}

#[test]
fn gwg_potts_sum_tree_chains_follow_the_generic_chains_step_by_step() {
    // Same uniforms in the same order as the generic GWG (see the Ising test above).
    use crate::gwg::Gwg;
    let grid = dlp_models::couplings::Couplings::lattice(&[6, 6], true, 0.4).unwrap();
    let h: Vec<f64> = (0..36 * 4).map(|i| ((i * 13 % 17) as f64 - 8.0) * 0.05).collect();
    let lattice = dlp_models::PottsModel::new(dlp_core::Space::categorical(36, 4), grid, h).unwrap();
    let models = potts_models().into_iter().chain([("6x6 torus, K = 4", lattice)]);
    for (name, m) in models {
        let (d, k) = (dlp_core::Target::space(&m).d, dlp_core::Target::space(&m).k());
        let x0: Vec<u32> = (0..4 * d).map(|i| ((i * 7 + i / 3) % k) as u32).collect();
        let mut fast = Gwg::new(1).unwrap().start(&m, &x0).unwrap();
        let generic = Generic(&m);
        let mut slow = Gwg::new(1).unwrap().start(&generic, &x0).unwrap();
        let (mut ra, mut rb) = (chain_rngs(13, 0, 4), chain_rngs(13, 0, 4));
        let (mut ia, mut ib) = (vec![StepInfo::default(); 4], vec![StepInfo::default(); 4]);
        for t in 0..2500 {
            fast.step(&mut ra, &mut ia);
            slow.step(&mut rb, &mut ib);
            assert_eq!(fast.positions(), slow.positions(), "{name} step {t}");
            for (a, b) in ia.iter().zip(&ib) {
                assert_eq!(StepInfo { accept_prob: b.accept_prob, ..*a }, *b, "{name} step {t}");
                assert!((a.accept_prob - b.accept_prob).abs() < 1e-12, "{name} step {t}");
            }
        }
        for (y, f) in fast.positions().chunks(d).zip(fast.log_densities().unwrap()) {
            assert!((dlp_core::TargetExt::log_density(&m, y).unwrap() - f).abs() < 1e-9, "{name}: cached f");
        }
    }
}

#[test]
fn dlmc_lattice_kernel_equals_the_generic_dlmc() {
    // DLMC on the lattice kernel (CSR path, per-class jump probabilities): per-site flip
    // probabilities on every state and MH log ratios on random pairs equal `crate::dlmc`'s.
    use crate::dlmc::{flip_log_probs, log_prob};
    let mut rng = dlp_core::setup_rng(14);
    for h in [0.3, 1.0, 2.5] {
        for (name, m) in lattices() {
            let d = m.d();
            let view = qualifying_model(&m).unwrap();
            let chains = IsingDlpChains::dlmc(dlp_core::Target::space(&m), &view, h, true, &vec![0; d]).unwrap();
            let laws = |x: &[u32]| {
                let mut g = vec![0.0; d];
                let f = dlp_core::TargetExt::log_density_grad(&m, x, &mut g).unwrap();
                let (mut lp, mut lk) = (vec![0.0; d], vec![0.0; d]);
                flip_log_probs(h, x, &g, &mut lp, &mut lk);
                (f, lp, lk)
            };
            for s in 0..1u64 << d {
                let x = state_of(s, d);
                let (_, lp, _) = laws(&x);
                let fast = chains.flip_probabilities(&x);
                for i in 0..d {
                    assert!((fast[i] - lp[i].exp()).abs() < 1e-12, "{name} h={h} x={x:?} site {i}");
                }
            }
            for _ in 0..500 {
                let x: Vec<u32> = (0..d).map(|_| rand::RngExt::random_range(&mut rng, 0..2u32)).collect();
                let y: Vec<u32> = (0..d).map(|_| rand::RngExt::random_range(&mut rng, 0..2u32)).collect();
                if x == y {
                    continue;
                }
                let ((fx, lpx, lkx), (fy, lpy, lky)) = (laws(&x), laws(&y));
                let want = fy - fx + log_prob(&y, &x, &lpy, &lky) - log_prob(&x, &y, &lpx, &lkx);
                let got = chains.log_accept_ratio(&x, &y);
                assert!((got - want).abs() < 1e-10, "{name} h={h}: fast {got} generic {want}");
            }
        }
    }
}

#[test]
fn dlmc_takes_the_lattice_kernel_and_keeps_the_law() {
    // One-step law from a fixed state, fast against the generic exact row (χ², see
    // `chi2_limit`: false-failure rate below 1e-5 per comparison).
    use crate::dlmc::Dlmc;
    let m = IsingModel::paper_lattice(3, 0.3, 0.2);
    let d = 9;
    let x: Vec<u32> = vec![1, 0, 1, 1, 0, 0, 1, 0, 1];
    for mh in [true, false] {
        let sampler = Dlmc::new(mh, 0.8).unwrap();
        let row: BTreeMap<Vec<u32>, f64> = sampler.transition_row(&m, &x, 0).unwrap().into_iter().collect();
        let n = 60_000usize;
        let mut chains = sampler.start(&m, &vec![x.clone(); n].concat()).unwrap();
        let mut rngs = chain_rngs(21, 0, n);
        let mut info = vec![StepInfo::default(); n];
        chains.step(&mut rngs, &mut info);
        let mut counts: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
        for y in chains.positions().chunks(d) {
            *counts.entry(y.to_vec()).or_insert(0) += 1;
        }
        let (stat, df) = chi2(&counts, &row, n as u64);
        assert!(stat < chi2_limit(df), "dlmc mh={mh}: χ² {stat} on {df} df");
    }
}

#[test]
fn pas_paths_on_the_sum_tree_equal_the_generic_path_kernel() {
    // Exact quantities: for every state of each small model and every ordered path of one to
    // three distinct sites, the path's log acceptance ratio on the sum tree equals the generic
    // PAS arithmetic (`pas::log_accept_ratio` on the first-order weights) to 1e-12, and
    // scoring a path leaves the chain, its f and its tree where they were.
    use super::gwg_ising::{GwgIsingChains, qualifying_model as gwg_model};
    use crate::pas::{log_accept_ratio as pas_ratio, site_weights};
    use dlp_core::Chains;
    use sum_tree::SumTrees;
    for (name, m) in gwg_models() {
        let view = gwg_model(&m).unwrap_or_else(|| panic!("{name}: qualifies"));
        let d = m.space().d;
        let states = if d <= 9 { 1u64 << d } else { 16 };
        let local = |x: &[u32]| {
            let mut g = vec![0.0; d];
            let f = m.log_density_grad(x, &mut g).unwrap();
            let (mut l, mut w) = (vec![0.0; d], vec![0.0; d]);
            site_weights(x, &g, &mut l, &mut w);
            (f, l, w)
        };
        let mut tree = SumTrees::new(1, d);
        for s in 0..states {
            let x = state_of(s, d);
            let mut fast = GwgIsingChains::path(&view, (3, 3, 0.0), (1, 1), &x).unwrap();
            let lq = fast.move_log_probs(0);
            let (f_x, logit_x, w_x) = local(&x);
            let paths: Vec<Vec<usize>> =
                (0..d).flat_map(|i| [vec![i], vec![i, (i + 3) % d], vec![(i + 5) % d, i, (i + 1) % d]]).collect();
            for path in paths {
                let mut y = x.clone();
                path.iter().for_each(|&i| y[i] ^= 1);
                let (f_y, logit_y, w_y) = local(&y);
                let want = pas_ratio(f_x, f_y, &logit_x, &w_x, &logit_y, &w_y, &path, &mut tree);
                let got = fast.path_log_accept_ratio(0, &path);
                assert!((got - want).abs() < 1e-12, "{name} state {s} path {path:?}: {got} vs {want}");
            }
            assert_eq!(fast.positions(), &x[..]);
            assert_eq!(fast.move_log_probs(0), lq, "{name} state {s}: tree restored");
            assert!((fast.log_densities().unwrap()[0] - f_x).abs() < 1e-12);
        }
    }
}

#[test]
fn pas_and_alb_chains_on_the_sum_tree_follow_the_generic_chains_step_by_step() {
    // Same uniforms in the same order (a length uniform when two lengths mix, one per path
    // site, one MH uniform): the fast chains retrace the generic chains' path (a draw that
    // rounding puts across a cumulative-sum boundary has probability of order 1e-16, about
    // 1e-10 over this test), with the same step records and f equal to the model's.
    use crate::alb::Alb;
    use crate::pas::Pas;
    for (name, m) in trajectory_models() {
        let d = m.space().d;
        let samplers: [(&str, Box<dyn Sampler>); 4] = [
            ("pas-1", Box::new(Pas::new(1).unwrap())),
            ("pas-3", Box::new(Pas::new(3).unwrap())),
            ("pas r = 2.4", Box::new(Pas::with_mean(2.4).unwrap())),
            ("alb r = 1.7", Box::new(Alb::new(1.7).unwrap())),
        ];
        for (label, sampler) in samplers {
            let x0: Vec<u32> = (0..4 * d).map(|i| ((i * 7 + i / 3) % 5 < 2) as u32).collect();
            retraces_the_generic_chains(&m, sampler.as_ref(), &x0, 13, &format!("{name} {label}"));
        }
    }
}

/// Steps `sampler` on `m` (its fast path) and on `Generic(&m)` from the four chains of `x0`
/// with the same streams (`seed`) for 2,500 steps: positions equal at every step, step
/// records equal (acceptance probabilities to 1e-12), and the fast chains' cached f equal to
/// the model's at the end.
fn retraces_the_generic_chains(m: &IsingModel, sampler: &dyn Sampler, x0: &[u32], seed: u64, label: &str) {
    let d = m.space().d;
    let mut fast = sampler.start(m, x0).unwrap();
    let generic = Generic(m);
    let mut slow = sampler.start(&generic, x0).unwrap();
    let (mut ra, mut rb) = (chain_rngs(seed, 0, 4), chain_rngs(seed, 0, 4));
    let (mut ia, mut ib) = (vec![StepInfo::default(); 4], vec![StepInfo::default(); 4]);
    for t in 0..2500 {
        fast.step(&mut ra, &mut ia);
        slow.step(&mut rb, &mut ib);
        assert_eq!(fast.positions(), slow.positions(), "{label} step {t}");
        for (a, b) in ia.iter().zip(&ib) {
            let same = StepInfo { accept_prob: b.accept_prob, ..*a };
            assert_eq!(same, *b, "{label} step {t}: step records");
            assert!((a.accept_prob - b.accept_prob).abs() < 1e-12, "{label} step {t}");
        }
    }
    for (y, f) in fast.positions().chunks(d).zip(fast.log_densities().unwrap()) {
        assert!((m.log_density(y).unwrap() - f).abs() < 1e-9, "{label}: cached f");
    }
}

/// The models the sum-tree chains are retraced on: a periodic and an open lattice, and the
/// random graphs of [`gwg_models`].
fn trajectory_models() -> Vec<(&'static str, IsingModel)> {
    [
        ("8x8 torus", IsingModel::paper_lattice(8, 0.1, 0.2)),
        ("6x6 open binary", IsingModel::lattice(&[6, 6], false, 0.4, vec![-0.3; 36], DomainKind::Binary).unwrap()),
    ]
    .into_iter()
    .chain(gwg_models().into_iter().skip(5))
    .collect()
}

/// Ising models with one coupling per site and a field that varies by site (the site-table
/// kernel; the class kernel needs a uniform field): DISCS's small Ising task (open 3×4 spin
/// lattice, Gaussian-ish fields), an open binary lattice, a ring, a torus and the 2×2 torus
/// (collapsed double neighbours).
fn site_models() -> Vec<(&'static str, IsingModel)> {
    let fields = |d: usize, phase: f64| -> Vec<f64> { (0..d).map(|i| 0.8 * (0.7 * i as f64 + phase).sin()).collect() };
    let discs = dlp_models::discs::find("ising-small").unwrap().model().unwrap();
    vec![
        ("discs ising-small", discs.downcast_ref::<IsingModel>().unwrap().clone()),
        ("3x3 open binary", IsingModel::lattice(&[3, 3], false, -0.4, fields(9, 2.0), DomainKind::Binary).unwrap()),
        ("ring 7", IsingModel::lattice(&[7], true, 0.3, fields(7, 3.0), DomainKind::Spin).unwrap()),
        ("3x3 torus", IsingModel::lattice(&[3, 3], true, 0.6, fields(9, 4.0), DomainKind::Spin).unwrap()),
        ("2x2 torus binary", IsingModel::lattice(&[2, 2], true, 0.2, fields(4, 5.0), DomainKind::Binary).unwrap()),
    ]
}

#[test]
fn site_tables_serve_per_site_fields_and_not_unequal_couplings() {
    for (name, m) in site_models() {
        assert!(qualifying_model(&m).is_none(), "{name}: the class kernel needs a uniform field");
        assert!(site_ising::qualifying_model(&m).is_some(), "{name}");
        assert!(site_ising::qualifying_model(&Generic(&m)).is_none(), "{name}");
        let p = DlpProposal::new(0.4, None).unwrap();
        assert!(dlp_fast_path(&p, true, &m, &vec![0; m.d()]).unwrap().is_some(), "{name}");
        let f32p = DlpProposal::new(0.4, None).unwrap().single_precision_gradient();
        assert!(dlp_fast_path(&f32p, true, &m, &vec![0; m.d()]).unwrap().is_none(), "{name}: f32 stays generic");
    }
    // A row with two different couplings is not tabulated per site.
    let edges = [(0, 1, 0.3), (1, 2, 0.5), (2, 3, 0.3)];
    let m = IsingModel::from_edges(4, &edges, vec![0.1; 4], DomainKind::Spin).unwrap();
    assert!(site_ising::qualifying_model(&m).is_none());
    let bad = SiteIsingChains::new(&site_models()[0].1.view(), true, &[2; 12]);
    assert!(matches!(bad, Err(dlp_core::SamplerError::BadInitialState(_))));
}

#[test]
fn site_table_flip_probabilities_and_ratios_equal_the_generic_kernel() {
    // Every state's realised flip probabilities, and DMALA log ratios for random pairs and
    // for pairs one to three flips apart (the moves a chain makes), to 1e-12 / 1e-10, for
    // several (α, β), with the tables switched in place by set_proposal as a cycle does.
    let mut rng = dlp_core::setup_rng(13);
    for (alpha, beta) in [(0.2, 0.5), (0.4, 0.5), (f64::INFINITY, 0.5), (0.7, 0.8), (3.0, 0.95)] {
        let proposal = DlpProposal::new(alpha, None).unwrap().with_balance(beta).unwrap();
        for (name, m) in site_models() {
            let d = m.d();
            let what = format!("{name} α={alpha} β={beta}");
            let mut chains = SiteIsingChains::new(&m.view(), true, &vec![0; d]).unwrap();
            chains.set_proposal(proposal.half_inv_step(0), beta);
            check_flip_probabilities(&|x| chains.flip_probabilities(x), &m, &proposal, &what);
            for t in 0..400 {
                let x: Vec<u32> = (0..d).map(|_| rand::RngExt::random_range(&mut rng, 0..2u32)).collect();
                let mut y: Vec<u32> = (0..d).map(|_| rand::RngExt::random_range(&mut rng, 0..2u32)).collect();
                if t % 2 == 0 {
                    y.copy_from_slice(&x);
                    for _ in 0..1 + t % 3 {
                        y[rand::RngExt::random_range(&mut rng, 0..d)] ^= 1;
                    }
                }
                if x == y {
                    continue;
                }
                let mut at_x = SiteIsingChains::new(&m.view(), true, &x).unwrap();
                at_x.set_proposal(proposal.half_inv_step(0), beta);
                let (a, b) = (at_x.log_accept_ratio(0, &y), generic_ratio(&m, &proposal, &x, &y));
                assert!((a - b).abs() < 1e-10, "{what}: x={x:?} y={y:?}: fast {a} generic {b}");
                assert_eq!(at_x.positions(), &x[..], "{what}: scoring a move leaves the chain at x");
            }
        }
    }
}

#[test]
fn site_table_one_step_rows_match_the_generic_exact_rows() {
    // χ² of 200,000 one-step transitions against the generic kernel's exact rows, from two
    // states of three models, for DULA and two DMALA step sizes (false-failure rate < 1e-5).
    let n = 200_000;
    let samplers = [DlpSampler::dula(0.2).unwrap(), DlpSampler::dmala(0.4).unwrap(), DlpSampler::dmala(1.5).unwrap()];
    for (mi, (name, m)) in site_models().into_iter().take(3).enumerate() {
        let d = m.d();
        for (si, s) in samplers.iter().enumerate() {
            for (xi, x) in [vec![1; d], state_of(0b1_0110_0101 & ((1 << d) - 1), d)].iter().enumerate() {
                one_step_row_matches(s, &m, x, n, 2000 + (mi * 10 + si * 2 + xi) as u64, name);
            }
        }
    }
}

#[test]
fn site_table_chains_keep_f_and_positions_and_split_by_chain() {
    for (name, m) in site_models() {
        let x0: Vec<u32> = (0..3 * m.d()).map(|i| ((i * 7 + 3) % 5 < 2) as u32).collect();
        keeps_f_and_splits_by_chain(name, &m, &x0, 3);
    }
}

/// Over 1,100 steps of DULA and DMALA from the three chains `x0` (past one recomputation of
/// the cached f) the log densities equal the model's at the positions, and chains run together
/// equal chains run alone (streams of `seed`).
fn keeps_f_and_splits_by_chain(name: &str, m: &dyn dlp_core::Target, x0: &[u32], seed: u64) {
    let d = m.space().d;
    for s in [DlpSampler::dula(0.3).unwrap(), DlpSampler::dmala(0.6).unwrap()] {
        let mut c = s.start(m, x0).unwrap();
        let mut rngs = chain_rngs(seed, 0, 3);
        let mut info = vec![StepInfo::default(); 3];
        for t in 0..1100 {
            c.step(&mut rngs, &mut info);
            if t % 50 == 0 || t > 1020 {
                let f = c.log_densities().unwrap().to_vec();
                for (j, y) in c.positions().chunks(d).enumerate() {
                    let want = dlp_core::TargetExt::log_density(m, y).unwrap();
                    assert!((f[j] - want).abs() < 1e-9, "{name} {} step {t}: f {} vs {want}", s.name(), f[j]);
                }
            }
        }
        for j in 0..3 {
            let mut alone = s.start(m, &x0[j * d..(j + 1) * d]).unwrap();
            let mut r = chain_rngs(seed, j, 1);
            let mut inf = vec![StepInfo::default(); 1];
            for _ in 0..1100 {
                alone.step(&mut r, &mut inf);
            }
            assert_eq!(alone.positions(), &c.positions()[j * d..(j + 1) * d], "{name} {} chain {j}", s.name());
        }
    }
}

/// Potts models for the DLP kernel: the GWG test models and DISCS's small Potts task (open
/// 2×3 lattice, K = 4, a field per site and class).
fn dlp_potts_models() -> Vec<(&'static str, dlp_models::PottsModel)> {
    let discs = dlp_models::discs::find("potts-small").unwrap().model().unwrap();
    let mut v = potts_models();
    v.push(("discs potts-small", discs.downcast_ref::<dlp_models::PottsModel>().unwrap().clone()));
    // Fields far beyond exp's range (logits up to ~1,000): the kernel must scale before it
    // exponentiates, as the generic logsumexp does.
    let ring = dlp_models::couplings::Couplings::from_edges(4, &[(0, 1, 0.6), (1, 2, -0.4), (2, 3, 0.9)]).unwrap();
    let h: Vec<f64> = (0..12).map(|i| [0.0, 2000.0, 2000.5][i % 3] - 30.0 * (i / 3) as f64).collect();
    v.push((
        "strong-field chain 4, K = 3",
        dlp_models::PottsModel::new(dlp_core::Space::categorical(4, 3), ring, h).unwrap(),
    ));
    v
}

/// Every state of a categorical space (d sites, K classes), in index order.
fn categorical_states(d: usize, k: usize) -> impl Iterator<Item = Vec<u32>> {
    (0..(k as u64).pow(d as u32)).map(move |mut s| {
        let mut x = vec![0; d];
        for v in x.iter_mut().rev() {
            *v = (s % k as u64) as u32;
            s /= k as u64;
        }
        x
    })
}

#[test]
fn potts_dlp_class_probabilities_and_ratios_equal_the_generic_kernel() {
    // On every state: the realised class probabilities of every site equal the generic
    // softmax of the logits to 1e-12; from every 7th state, DMALA log ratios to a random
    // state and to states one or two sites away equal the generic ones to 1e-10; for several
    // (α, β), DULA's kernel construction as well as DMALA's.
    let mut rng = dlp_core::setup_rng(14);
    for (alpha, beta) in [(0.2, 0.5), (0.4, 0.5), (f64::INFINITY, 0.5), (0.7, 0.8)] {
        let proposal = DlpProposal::new(alpha, None).unwrap().with_balance(beta).unwrap();
        for (name, m) in dlp_potts_models() {
            let space = dlp_core::Target::space(&m).clone();
            let (d, k) = (space.d, space.k());
            let view = dlp_core::Target::capabilities(&m).potts.unwrap();
            let (mut g, mut l, mut z) = (vec![0.0; d * k], vec![0.0; d * k], vec![0.0; d]);
            for (t, x) in categorical_states(d, k).enumerate() {
                let what = format!("{name} α={alpha} β={beta} x={x:?}");
                let mut chains = PottsDlpChains::new(&view, t % 2 == 0, proposal.half_inv_step(0), beta, &x).unwrap();
                dlp_core::TargetExt::log_density_grad(&m, &x, &mut g).unwrap();
                proposal.logits(&space, &x, &g, &mut l, &mut z);
                let fast = chains.class_probabilities(0);
                for i in 0..d * k {
                    let p = (l[i] - z[i / k]).exp();
                    assert!((fast[i] - p).abs() < 1e-12, "{what} entry {i}: {} vs {p}", fast[i]);
                }
                if t % 7 != 0 {
                    continue;
                }
                for r in 0..3 {
                    let mut y = x.clone();
                    if r == 0 {
                        y.iter_mut().for_each(|v| *v = rand::RngExt::random_range(&mut rng, 0..k as u32));
                    } else {
                        for _ in 0..r {
                            let i = rand::RngExt::random_range(&mut rng, 0..d);
                            y[i] = (y[i] + rand::RngExt::random_range(&mut rng, 1..k as u32)) % k as u32;
                        }
                    }
                    if y == x {
                        continue;
                    }
                    let (a, b) = (chains.log_accept_ratio(0, &y), generic_ratio(&m, &proposal, &x, &y));
                    assert!((a - b).abs() < 1e-10, "{what} y={y:?}: fast {a} generic {b}");
                    assert_eq!(chains.positions(), &x[..], "{what}: scoring a move leaves the chain at x");
                }
            }
        }
    }
}

#[test]
fn potts_dlp_one_step_rows_match_the_generic_exact_rows() {
    // χ² of 200,000 one-step transitions against the generic kernel's exact rows, from two
    // states of each model, for DULA and two DMALA step sizes (false-failure rate < 1e-5).
    let n = 200_000;
    let samplers = [DlpSampler::dula(0.2).unwrap(), DlpSampler::dmala(0.4).unwrap(), DlpSampler::dmala(1.5).unwrap()];
    for (mi, (name, m)) in dlp_potts_models().into_iter().enumerate() {
        let (d, k) = (m.d(), dlp_core::Target::space(&m).k() as u32);
        for (si, s) in samplers.iter().enumerate() {
            for (xi, x) in [vec![0; d], (0..d as u32).map(|i| (i * 5 + 1) % k).collect()].iter().enumerate() {
                one_step_row_matches(s, &m, x, n, 3000 + (mi * 10 + si * 2 + xi) as u64, name);
            }
        }
    }
}

#[test]
fn potts_dlp_chains_keep_f_and_positions_and_split_by_chain() {
    for (name, m) in dlp_potts_models() {
        let (d, k) = (m.d(), dlp_core::Target::space(&m).k());
        let p = DlpProposal::new(0.5, None).unwrap();
        assert!(dlp_fast_path(&p, true, &m, &vec![0; d]).unwrap().is_some(), "{name} takes the fast path");
        assert!(dlp_fast_path(&p, true, &Generic(&m), &vec![0; d]).unwrap().is_none(), "{name}");
        let x0: Vec<u32> = (0..3 * d).map(|i| ((i * 7 + 3) % k) as u32).collect();
        keeps_f_and_splits_by_chain(name, &m, &x0, 4);
    }
}

#[test]
fn block_hits_mark_exactly_the_bytes_at_or_below_their_thresholds() {
    let mut rng = dlp_core::setup_rng(15);
    for len in [0, 1, 7, 31, 32] {
        for _ in 0..200 {
            // Small alphabets make ties and both orders common.
            let r: Vec<u8> = (0..len).map(|_| rand::RngExt::random_range(&mut rng, 0..4u8) * 85).collect();
            let t: Vec<u8> = (0..len).map(|_| rand::RngExt::random_range(&mut rng, 0..4u8) * 85).collect();
            let want = (0..len).filter(|&q| r[q] <= t[q]).fold(0u32, |m, q| m | 1 << q);
            assert_eq!(block_hits(&r, &t), want, "r={r:?} t={t:?}");
        }
    }
}
