//! `000-appD --quick` and `000-appH --quick` end to end: their files, the paper's claims as
//! properties of the output (App. D: DMALA's acceptance collapses without the distance term;
//! App. H: on the quadratic stand-in the preconditioned step sizes beat every common α), the
//! exact means against a direct sum written here, and bad flags refused with one line.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn run(bin: &str, out: &Path, extra: &[&str]) -> Output {
    Command::new(bin).args(["--quick", "--seed", "3", "--out"]).arg(out).args(extra).output().unwrap()
}

fn summary(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

fn has_files(out: &Path, files: &[&str]) {
    for f in files {
        assert!(out.join(f).is_file(), "missing {f}");
    }
}

#[test]
fn app_d_acceptance_collapses_without_the_distance_term() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(env!("CARGO_BIN_EXE_000-appD"), dir.path(), &["--samplers", "dmala@0.2,dmala@inf,dula@0.1,dula@inf"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    has_files(
        dir.path(),
        &["rbm.json", "mmd.csv", "samplers.csv", "summary.json", "000-appD.svg", "000-appD.png", "meta.json"],
    );
    let s = summary(dir.path());
    let row = |name: &str, alpha: &str| {
        let rows = s["samplers"].as_array().unwrap();
        rows.iter()
            .find(|r| r["sampler"] == name && r["step_size"] == alpha)
            .unwrap_or_else(|| panic!("{name}@{alpha}"))
            .clone()
    };
    let acc = |name: &str, alpha: &str| row(name, alpha)["acceptance"].as_f64().unwrap();
    // DMALA at the paper code's α = 0.2 accepts about half (spec §3.3); at α = ∞ almost nothing.
    assert!((0.15..0.9).contains(&acc("dmala", "0.2")), "dmala(0.2) acceptance {}", acc("dmala", "0.2"));
    assert!(acc("dmala", "inf") < 0.01, "dmala(inf) acceptance {}", acc("dmala", "inf"));
    assert_eq!(s["paper_claims"][0]["holds"], true);
    // DULA has no MH step: it accepts every proposal, and at α = ∞ it flips many more pixels.
    assert_eq!(acc("dula", "inf"), 1.0);
    let flips = |a: &str| row("dula", a)["changed_per_step"].as_f64().unwrap();
    assert!(flips("inf") > 10.0 * flips("0.1"), "dula flips {} vs {}", flips("inf"), flips("0.1"));
}

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
fn bad_flags_are_refused_with_one_line_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    for (bin, flag, value) in [
        (env!("CARGO_BIN_EXE_000-appH"), "--alphas", "0,1"),
        (env!("CARGO_BIN_EXE_000-appD"), "--samplers", "nosuch@0.2"),
    ] {
        let out = dir.path().join("x");
        let o = run(bin, &out, &[flag, value]);
        assert_eq!(o.status.code(), Some(2), "{bin} {flag} {value}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.trim().lines().count() == 1 && err.starts_with("error:"), "{err}");
        assert!(!out.exists(), "{bin} wrote {}", out.display());
    }
}
