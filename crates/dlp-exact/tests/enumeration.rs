//! Enumeration against the spec's independently computed numbers (§4.1, §4.7).

mod common;

use common::LatticeIsing;
use dlp_exact::{EnumOptions, enumerate};

#[test]
fn ising_3x3_matches_spec_4_7() {
    let t = LatticeIsing::new(3, 0.1, 0.2);
    let e = enumerate(&t, &EnumOptions::default()).unwrap();
    assert!((e.log_z - 7.1153733652).abs() < 1e-9, "log Z = {}", e.log_z);
    for m in &e.mean_value {
        assert!((m - 0.4650843054).abs() < 1e-9, "E[s] = {m}");
    }
}

/// 2^25 states: a few seconds in release, longer at opt-level 1; run with `--ignored`.
#[test]
#[ignore]
fn ising_5x5_matches_spec_4_1() {
    let t = LatticeIsing::new(5, 0.1, 0.2);
    let e = enumerate(&t, &EnumOptions { pair_moments: true, keep_probs: false }).unwrap();
    assert!((e.log_z - 19.674085761341).abs() < 1e-10, "log Z = {}", e.log_z);
    for m in &e.mean_value {
        assert!((m - 0.482969842236).abs() < 1e-10, "E[s] = {m}");
    }
    assert!((e.mean_log_density - 6.102519822965).abs() < 1e-10);
    let pm = e.pair_moments.unwrap();
    // Sites 0 and 1 are nearest neighbours on the lattice.
    assert!((pm[1] - 0.368767061179).abs() < 1e-10, "E[s0 s1] = {}", pm[1]);
    assert!(e.probs.is_none());
}
