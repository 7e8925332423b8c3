//! Rank-normalised R-hat, bulk ESS and tail ESS against ArviZ 0.23 on fixed chain sets
//! (AR(1) with several φ including a negative one, Student-t innovations, disagreeing
//! chains, an odd draw count, a tied ±1 chain, a single chain). The chains and ArviZ's values
//! were written together by `scripts/arviz_fixture.py`; nothing here comes from our code.

use dlp_core::diagnostics::{ess_bulk, ess_tail, rhat_rank};
use serde_json::Value;

fn fixture() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/arviz_diagnostics.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture readable")).expect("fixture is JSON")
}

fn close(ours: f64, theirs: f64) -> bool {
    // ArviZ uses FFT autocovariances and scipy's ndtri; we sum lags directly and use statrs:
    // both differ from exact arithmetic by ~1e-12, so 1e-6 relative leaves ample room.
    (ours - theirs).abs() <= 1e-6 * theirs.abs().max(1.0)
}

#[test]
fn rank_rhat_bulk_and_tail_ess_match_arviz() {
    let fx = fixture();
    let cases = fx["cases"].as_array().expect("cases");
    assert!(cases.len() >= 8, "fixture lost cases");
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let m = case["n_chains"].as_u64().unwrap() as usize;
        let n = case["n_draws"].as_u64().unwrap() as usize;
        let draws: Vec<f64> = case["draws"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(draws.len(), m * n, "{name}");
        let bulk = ess_bulk(&draws, m).unwrap();
        let tail = ess_tail(&draws, m).unwrap();
        for (what, ours, theirs) in [("ess_bulk", bulk, &case["ess_bulk"]), ("ess_tail", tail, &case["ess_tail"])] {
            let theirs = theirs.as_f64().unwrap();
            if !close(ours, theirs) {
                failures.push(format!("{name} {what}: ours {ours} arviz {theirs}"));
            }
        }
        match case["rhat_rank"].as_f64() {
            Some(theirs) => {
                let ours = rhat_rank(&draws, m).unwrap();
                if !close(ours, theirs) {
                    failures.push(format!("{name} rhat_rank: ours {ours} arviz {theirs}"));
                }
            }
            // ArviZ gives NaN for one chain; we refuse with an error instead.
            None => assert!(rhat_rank(&draws, m).is_err(), "{name}: R-hat of one chain should be refused"),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
