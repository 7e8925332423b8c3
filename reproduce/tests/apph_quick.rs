//! `000-appH --quick` end to end: its files, the paper's App. H claim as a property of the
//! output (on the quadratic stand-in the preconditioned step sizes beat every common α by more
//! than one log unit, for DMALA and DULA), the exact means against a direct sum written here,
//! and a bad flag refused with one line and no output.

mod appendix;

use appendix::{has_files, run, summary};

#[test]
fn app_h_preconditioning_beats_every_common_step_size_on_the_quadratic_stand_in() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(env!("CARGO_BIN_EXE_000-appH"), dir.path(), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    has_files(dir.path(), &["rmse.csv", "curves.csv", "summary.json", "000-appH.svg", "000-appH.png", "meta.json"]);
    let s = summary(dir.path());
    // The exact mean of the quadratic stand-in by a direct sum: independent coordinates,
    // x1 ~ exp(−(v−70)²/2), x2 ~ exp(−(v−50)²/1800) on {0..120}.
    let mean = |m: f64, var: f64| {
        let w: Vec<f64> = (0..121).map(|v| (-(v as f64 - m).powi(2) / (2.0 * var)).exp()).collect();
        w.iter().enumerate().map(|(v, w)| v as f64 * w).sum::<f64>() / w.iter().sum::<f64>()
    };
    let q = &s["models"][1];
    assert_eq!(q["name"], "quadratic");
    for (i, want) in [mean(70.0, 1.0), mean(50.0, 900.0)].into_iter().enumerate() {
        let got = q["exact_mean"][i].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "coordinate {i}: {got} vs {want}");
    }
    for b in s["best"].as_array().unwrap().iter().filter(|b| b["model"] == "quadratic") {
        let common = b["best_common"]["log_rmse"].as_f64().unwrap();
        let pre = b["best_preconditioned"]["log_rmse"].as_f64().unwrap();
        assert!(pre < common - 1.0, "{}: preconditioned {pre} vs common {common}", b["sampler"]);
    }
    assert_eq!(s["paper_claims"][0]["holds_quadratic"], true);
    let rows = std::fs::read_to_string(dir.path().join("rmse.csv")).unwrap();
    assert_eq!(rows.lines().next(), Some("model,sampler,alpha,preconditioned,log_rmse,acceptance,changed_per_step"));
    assert_eq!(rows.lines().count(), 1 + 2 * 4 * 3, "2 models × 4 samplers × 3 α");
}

#[test]
fn a_bad_alpha_is_refused_with_one_line_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x");
    let o = run(env!("CARGO_BIN_EXE_000-appH"), &out, &["--alphas", "0,1"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.trim().lines().count() == 1 && err.starts_with("error:"), "{err}");
    assert!(!out.exists(), "wrote {}", out.display());
}
