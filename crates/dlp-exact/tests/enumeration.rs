//! Enumeration against the spec's independently computed numbers (§4.1, §4.7).

mod common;

use common::LatticeIsing;
use dlp_exact::{EnumOptions, enumerate, enumerate_with};

#[test]
fn ising_3x3_matches_spec_4_7() {
    let t = LatticeIsing::new(3, 0.1, 0.2);
    let e = enumerate(&t, &EnumOptions::default()).unwrap();
    assert!((e.log_z - 7.1153733652).abs() < 1e-9, "log Z = {}", e.log_z);
    for m in &e.mean_value {
        assert!((m - 0.4650843054).abs() < 1e-9, "E[s] = {m}");
    }
    // Pair moments against a direct sum over the probability vector.
    let e = enumerate(&t, &EnumOptions { pair_moments: true, keep_probs: true }).unwrap();
    let (p, pm) = (e.probs.unwrap(), e.pair_moments.unwrap());
    let mut x = vec![0u32; 9];
    let mut direct = 0.0;
    for (s, ps) in p.iter().enumerate() {
        dlp_core::Target::space(&t).state_of_index(s as u64, &mut x);
        direct += ps * (2.0 * x[2] as f64 - 1.0) * (2.0 * x[7] as f64 - 1.0);
    }
    assert!((pm[2 * 9 + 7] - direct).abs() < 1e-12 && (pm[7 * 9 + 2] - direct).abs() < 1e-12);
}

/// 2^25 states: a few seconds in release, longer at opt-level 1; run with `--ignored`.
#[test]
#[ignore = "2^25 states, release: just test-stat"]
fn ising_5x5_matches_spec_4_1() {
    let t = LatticeIsing::new(5, 0.1, 0.2);
    // Sites 0 and 1 are nearest neighbours; an extra function is far cheaper than all d² pairs.
    let s0s1 = |x: &[u32]| if x[0] == x[1] { 1.0 } else { -1.0 };
    let e = enumerate_with(&t, &EnumOptions { pair_moments: false, keep_probs: false }, &[&s0s1]).unwrap();
    assert!((e.log_z - 19.674085761341).abs() < 1e-10, "log Z = {}", e.log_z);
    for m in &e.mean_value {
        assert!((m - 0.482969842236).abs() < 1e-10, "E[s] = {m}");
    }
    assert!((e.mean_log_density - 6.102519822965).abs() < 1e-10);
    assert!((e.expectations[0] - 0.368767061179).abs() < 1e-10, "E[s0 s1] = {}", e.expectations[0]);
    assert!(e.probs.is_none());
}

/// Spec §4.1 and §4.2 on dlp-models' own 5×5 lattice: log Z, E[s], and DULA's stationary
/// mean at α = 0.1/0.2/0.4 (the Fig. 3 plateau) by enumerating π_α ∝ π·Z_α over 2^25 states.
/// Release only: `cargo test -p dlp-exact --release -- --ignored`.
#[test]
#[ignore = "2^25 states, release: just test-stat"]
fn paper_lattice_5x5_and_dula_plateau_match_spec_4_1_and_4_2() {
    let t = dlp_models::IsingModel::paper_lattice(5, 0.1, 0.2);
    let opts = EnumOptions { pair_moments: false, keep_probs: false };
    let e = enumerate(&t, &opts).unwrap();
    assert!((e.log_z - 19.674085761341).abs() < 1e-10, "log Z = {}", e.log_z);
    assert!(e.mean_value.iter().all(|m| (m - 0.482969842236).abs() < 1e-10), "{:?}", e.mean_value);
    for (alpha, mean) in [(0.1, 0.477622161586), (0.2, 0.423176507183), (0.4, 0.315430911474)] {
        let law = dlp_exact::DulaLaw::new(&t, alpha, None);
        let e = enumerate(&law, &opts).unwrap();
        assert!(e.mean_value.iter().all(|m| (m - mean).abs() < 1e-10), "α = {alpha}: {:?}", e.mean_value);
    }
}
